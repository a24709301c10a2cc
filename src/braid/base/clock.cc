#include "braid/base/clock.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "braid/base/env.h"
#include "braid/base/error.h"

namespace braid {

Deadline Deadline::after(Seconds seconds) {
  if (std::isnan(seconds.count())) throw InvalidArgument({.op = "deadline"}, "a timeout of NaN seconds");
  if (seconds.count() < 0 || std::isinf(seconds.count()) || seconds.count() > 1e9) return never();
  return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(seconds));
}

Deadline Deadline::from_env() { return after(Seconds(default_timeout_seconds())); }

Seconds Deadline::remaining(Seconds cap) const {
  if (is_never()) return cap;
  Seconds left = at_ - Clock::now();
  return std::clamp(left, Seconds(0), cap);
}

int Deadline::remaining_ms(int cap_ms) const {
  double ms = remaining(Seconds(cap_ms / 1000.0)).count() * 1000.0;
  return static_cast<int>(std::ceil(ms));
}

double default_timeout_seconds() { return env::get_double(env::kTimeout); }

Seconds peer_timeout() {
  const double seconds = env::get_double(env::kPeerTimeout);
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 86400) {
    throw InvalidArgument({.op = "env"}, fmt::format("BRAID_PEER_TIMEOUT={} must be a number of seconds in [0, 86400] "
                                                     "(0: leave lost-peer detection to the kernel)",
                                                     seconds));
  }
  return Seconds(seconds);
}

}  // namespace braid
