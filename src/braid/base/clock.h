// Monotonic time and deadlines. Every blocking wait in braid takes a Deadline, so that no
// call can hang past BRAID_TIMEOUT.
#pragma once

#include <chrono>
#include <cstdint>

namespace braid {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

class Deadline {
 public:
  // A deadline `seconds` from now; a negative or infinite value means "never". NaN throws
  // InvalidArgument (it used to compare as neither, and expire at once).
  static Deadline after(Seconds seconds);
  static Deadline never() { return Deadline(Clock::time_point::max()); }
  // The default for blocking calls: BRAID_TIMEOUT seconds from now (300 unless set; -1: never).
  static Deadline from_env();

  bool expired() const { return at_ != Clock::time_point::max() && Clock::now() >= at_; }
  bool is_never() const { return at_ == Clock::time_point::max(); }
  // Time left, clamped to [0, cap]; `cap` bounds each sleep so liveness checks keep running.
  Seconds remaining(Seconds cap) const;
  int remaining_ms(int cap_ms) const;
  Clock::time_point at() const { return at_; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// The configured timeout in seconds (BRAID_TIMEOUT).
double default_timeout_seconds();
// How long a TCP peer may stop answering before its connection counts as lost
// (BRAID_PEER_TIMEOUT; 0 = leave it to the kernel). Throws InvalidArgument unless finite, >= 0.
Seconds peer_timeout();

}  // namespace braid
