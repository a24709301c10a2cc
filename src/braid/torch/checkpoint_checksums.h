// The integrity data of a checkpoint: the CRC32C of every tensor's bytes, by the tensor's key.
// LibTorch's archive reader does not check its zip CRCs (LibTorch builds miniz without them),
// so a damaged checkpoint.pt used to load "successfully" into wrong parameters or NaNs; now
// each tensor is checked as it is read, and a mismatch names the file and the tensor.
//
// The table travels in the checkpoint as text, one "crc32c-hex key" line per tensor, and is
// itself covered by a CRC32C stored beside it. Torch-free (tested without LibTorch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "braid/base/error.h"

namespace braid::torch {

class ChecksumTable {
 public:
  void add(const std::string& key, const void* data, std::size_t bytes);

  std::string encode() const;
  // Throws Corrupt naming `path` when `text` does not have the CRC32C `text_crc` or is malformed.
  static ChecksumTable decode(std::string_view text, std::uint32_t text_crc, const ErrorContext& context,
                              const std::string& path);

  // Throws Corrupt naming `path` and `key` when the bytes' CRC32C is not the one recorded for
  // `key`, or none is.
  void verify(const std::string& key, const void* data, std::size_t bytes, const ErrorContext& context,
              const std::string& path) const;

 private:
  std::map<std::string, std::uint32_t> crcs_;
};

}  // namespace braid::torch
