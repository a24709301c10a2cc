// How a large TCP message is cut into stripes, one per connection of a peer pair
// (BRAID_TCP_STREAMS; tcp_transport.h). Pure arithmetic, computed alike by the sender and the
// receiver from the message's size and the number of streams both sides agreed at connect,
// so no stripe boundary ever travels on the wire.
//
// A message is striped only when every stripe gets at least kMinStripeBytes: below that one
// connection already moves it in about the time the extra syscalls would cost, and small
// messages stay on stream 0 so their latency and ordering do not change. Stripes are
// contiguous, in stream order (stripe i on stream i, stripe 0 right behind the header on
// stream 0), kStripeAlign-aligned except for the last one's end, and never empty.
#pragma once

#include <cstdint>

namespace braid::tcp {

inline constexpr std::uint64_t kMinStripeBytes = std::uint64_t{256} << 10;
inline constexpr std::uint64_t kStripeAlign = 4096;
// The most connections per peer pair (BRAID_TCP_STREAMS' bound): with kMinStripeBytes far
// above kMaxStreams * kStripeAlign, rounding stripes up to kStripeAlign never leaves one empty.
inline constexpr int kMaxStreams = 16;

struct StripeSpan {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

// How many stripes a message of `bytes` is cut into over `streams` connections (1..streams).
int stripe_count(std::uint64_t bytes, int streams);

// Stripe `index` (0 <= index < count) of a message of `bytes` cut into `count` stripes.
StripeSpan stripe_span(std::uint64_t bytes, int count, int index);

}  // namespace braid::tcp
