// Little-endian encoding for the bootstrap wire formats (hello frame, store frames).
//
// Every field is written byte by byte rather than memcpy'd from a struct, so the layout does
// not depend on padding or host byte order. ByteReader bounds-checks every read against the
// bytes actually received and throws braid::Corrupt on overrun: a length read off the wire is
// never trusted to stay inside its frame.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "braid/base/error.h"

namespace braid::net {

class ByteWriter {
 public:
  explicit ByteWriter(std::string& out) : out_(out) {}

  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(std::uint16_t v) { put(v, 2); }
  void u32(std::uint32_t v) { put(v, 4); }
  void u64(std::uint64_t v) { put(v, 8); }
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void bytes(std::string_view b) { out_.append(b); }

 private:
  void put(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
  }
  std::string& out_;
};

class ByteReader {
 public:
  // `what` names the frame in error messages ("store request", "hello frame").
  ByteReader(std::string_view in, const char* what) : in_(in), what_(what) {}

  std::uint8_t u8() { return static_cast<std::uint8_t>(get(1)); }
  std::uint16_t u16() { return static_cast<std::uint16_t>(get(2)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(get(4)); }
  std::uint64_t u64() { return get(8); }
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  std::string_view bytes(std::size_t n) {
    require(n);
    std::string_view b = in_.substr(pos_, n);
    pos_ += n;
    return b;
  }

  std::size_t remaining() const { return in_.size() - pos_; }

 private:
  void require(std::size_t n) const {
    if (n > remaining()) {
      throw Corrupt({}, std::string(what_) + " is truncated: a field needs " + std::to_string(n) +
                            " bytes but only " + std::to_string(remaining()) + " remain");
    }
  }
  std::uint64_t get(int n) {
    require(static_cast<std::size_t>(n));
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_ + i])) << (8 * i);
    pos_ += static_cast<std::size_t>(n);
    return v;
  }

  std::string_view in_;
  const char* what_;
  std::size_t pos_ = 0;
};

}  // namespace braid::net
