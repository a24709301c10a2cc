// What every decoder fuzz target shares (docs/fuzzing.md): how a finding is reported, which
// exceptions a decoder may throw, and a cursor over the fuzz input.
//
// A finding aborts the process with "<target>: FINDING: ..." on stderr, so libFuzzer saves the
// input and scripts/fuzz.sh prints the report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <string>
#include <string_view>
#include <typeinfo>

#include "braid/base/error.h"

namespace braid::fuzz {

// Set once by each target (its LLVMFuzzerInitialize or first line): names it in findings.
inline const char* target_name = "fuzz";

[[noreturn]] inline void finding(std::string_view what, std::string_view detail = {}) {
  std::fprintf(stderr, "%s: FINDING: %.*s%s%.*s\n", target_name, static_cast<int>(what.size()), what.data(),
               detail.empty() ? "" : ": ", static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline void require(bool holds, std::string_view what, std::string_view detail = {}) {
  if (!holds) finding(what, detail);
}

// Runs fn; true if it returned, false if it threw a braid::Error of one of the `allowed` kinds
// (the errors the decoder's contract names). Any other exception is a finding.
template <typename Fn>
bool succeeds(std::string_view what, std::initializer_list<ErrorKind> allowed, Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const Error& e) {
    for (ErrorKind kind : allowed) {
      if (e.kind() == kind) return false;
    }
    finding(what, std::string("an error of a kind its contract does not name: ") + e.what());
  } catch (const std::exception& e) {
    finding(what, std::string("a non-braid exception ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    finding(what, "an exception that is not a std::exception");
  }
}

// Reads the fuzz input front to back; past its end every read gives zeros / empty bytes, so a
// target never needs to check the length before taking a field.
class Cursor {
 public:
  Cursor(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t{u8()} << (8 * i);
    return v;
  }
  // Up to n bytes (fewer at the end of the input).
  std::string_view bytes(std::size_t n) {
    n = n < remaining() ? n : remaining();
    std::string_view b(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return b;
  }
  std::string_view rest() { return bytes(remaining()); }
  std::size_t remaining() const { return size_ - pos_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Decoders log refusals at warn; a fuzzer refuses millions of inputs.
inline void quiet_logs() { ::setenv("BRAID_LOG_LEVEL", "error", /*overwrite=*/0); }

}  // namespace braid::fuzz
