#include "braid/base/splitmix64.h"

namespace braid {

namespace {
__extension__ typedef unsigned __int128 Uint128;  // GCC/Clang extension; -Wpedantic accepts it spelled this way
}  // namespace

std::uint64_t uniform_below(SplitMix64& rng, std::uint64_t range) {
  Uint128 product = static_cast<Uint128>(rng.next()) * range;
  auto low = static_cast<std::uint64_t>(product);
  if (low < range) {
    // 2^64 mod range: the number of low products that would over-represent some results.
    std::uint64_t threshold = (0 - range) % range;
    while (low < threshold) {
      product = static_cast<Uint128>(rng.next()) * range;
      low = static_cast<std::uint64_t>(product);
    }
  }
  return static_cast<std::uint64_t>(product >> 64);
}

}  // namespace braid
