// LibTorch archives whose every tensor carries a CRC32C (checkpoint_checksums.h): what the
// data-parallel checkpoint (checkpoint.h) and the sharded ZeRO checkpoint (zero_checkpoint.h)
// both write and read. LibTorch's reader checks none of its zip CRCs, so a tensor is trusted
// only after its bytes matched the table, and the table only after its own CRC32C matched.
//
// Layout inside an archive: the tensors under their keys, "checksums" (the table as text, a
// uint8 tensor) and "checksums_crc32c" (an int64 tensor of one element).
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <string>

#include "braid/base/error.h"
#include "braid/torch/checkpoint_checksums.h"

namespace braid::torch {

// A uint8 tensor holding `size` bytes from `data`, and the string a uint8 tensor holds.
::torch::Tensor bytes_tensor(const void* data, std::size_t size);
std::string string_of(const ::torch::Tensor& t);

// Writes `t` (contiguous) under `key` and records the CRC32C of its bytes under `prefix + key`.
void write_checked(::torch::serialize::OutputArchive& archive, ChecksumTable& table, const std::string& prefix,
                   const std::string& key, const ::torch::Tensor& t, bool is_buffer = false);

// Writes the table and its own CRC32C: the last thing written into an archive.
void write_checksums(::torch::serialize::OutputArchive& archive, const ChecksumTable& table);

// Reads the table written by write_checksums. Throws Corrupt naming `path` when it is missing
// or damaged.
ChecksumTable read_checksums_table(::torch::serialize::InputArchive& archive, const ErrorContext& context,
                                   const std::string& path);

// Reads tensors and checks each against the archive's table before anything uses it.
struct CheckedReader {
  const ChecksumTable& table;
  const ErrorContext& context;
  const std::string& path;

  // Throws Corrupt naming the path and the key when the bytes do not match (or LibTorch finds
  // no such tensor: c10::Error, which the caller turns into Corrupt naming the file).
  ::torch::Tensor read(::torch::serialize::InputArchive& archive, const std::string& key,
                       const std::string& prefix = "", bool is_buffer = false) const;
};

}  // namespace braid::torch
