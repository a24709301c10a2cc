#include "braid/transport/tcp/stripe_plan.h"

#include <algorithm>

namespace braid::tcp {

int stripe_count(std::uint64_t bytes, int streams) {
  if (streams <= 1) return 1;
  const std::uint64_t fit = bytes / kMinStripeBytes;
  return static_cast<int>(std::clamp<std::uint64_t>(fit, 1, static_cast<std::uint64_t>(std::min(streams, kMaxStreams))));
}

StripeSpan stripe_span(std::uint64_t bytes, int count, int index) {
  if (count <= 1) return {.offset = 0, .bytes = bytes};
  const auto n = static_cast<std::uint64_t>(count);
  const std::uint64_t even = (bytes + n - 1) / n;
  const std::uint64_t per = (even + kStripeAlign - 1) / kStripeAlign * kStripeAlign;
  const std::uint64_t offset = std::min(static_cast<std::uint64_t>(index) * per, bytes);
  return {.offset = offset, .bytes = std::min(per, bytes - offset)};
}

}  // namespace braid::tcp
