#include "braid/compress/random_indices.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/splitmix64.h"

namespace braid::compress {

namespace {

// The hash set's empty slot: never an index, since indices are < n <= 2^32 - 1.
constexpr std::uint32_t kEmptySlot = std::numeric_limits<std::uint32_t>::max();

// Open-addressing set of u32 with linear probing; capacity a power of two >= 2x the entries,
// so probes stay short. Only what Floyd's algorithm needs: insert-if-absent.
class IndexSet {
 public:
  explicit IndexSet(std::uint32_t max_entries)
      : slots_(std::bit_ceil(std::max<std::uint64_t>(2 * static_cast<std::uint64_t>(max_entries), 16)), kEmptySlot),
        mask_(slots_.size() - 1) {}

  // Inserts value; false if it was already present.
  bool insert(std::uint32_t value) {
    std::size_t slot = hash(value) & mask_;
    while (slots_[slot] != kEmptySlot) {
      if (slots_[slot] == value) return false;
      slot = (slot + 1) & mask_;
    }
    slots_[slot] = value;
    return true;
  }

  // Appends every entry (in slot order) to out.
  void list(std::uint32_t* out) const {
    for (std::uint32_t value : slots_) {
      if (value != kEmptySlot) *out++ = value;
    }
  }

 private:
  static std::size_t hash(std::uint32_t value) {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(value) * 0x9e3779b97f4a7c15ull) >> 32);
  }

  std::vector<std::uint32_t> slots_;
  std::size_t mask_;
};

}  // namespace

float randomk_scale(std::int64_t n, std::int64_t k) {
  return static_cast<float>(static_cast<double>(n) / static_cast<double>(k));
}

namespace internal {

void draw_random_indices_bitmap(std::uint64_t seed, std::uint32_t n, std::uint32_t k, std::span<std::uint32_t> out) {
  std::vector<std::uint64_t> bits((static_cast<std::size_t>(n) + 63) / 64, 0);
  SplitMix64 rng(seed);
  for (std::uint64_t j = n - k; j < n; ++j) {
    auto t = uniform_below(rng, j + 1);
    std::uint64_t& word = bits[t / 64];
    std::uint64_t bit = 1ull << (t % 64);
    if (word & bit) {
      bits[j / 64] |= 1ull << (j % 64);
    } else {
      word |= bit;
    }
  }
  std::size_t pos = 0;
  for (std::size_t w = 0; w < bits.size(); ++w) {
    for (std::uint64_t word = bits[w]; word != 0; word &= word - 1) {
      out[pos++] = static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(word)));
    }
  }
}

void draw_random_indices_hashed(std::uint64_t seed, std::uint32_t n, std::uint32_t k, std::span<std::uint32_t> out) {
  IndexSet set(k);
  SplitMix64 rng(seed);
  for (std::uint64_t j = n - k; j < n; ++j) {
    auto t = static_cast<std::uint32_t>(uniform_below(rng, j + 1));
    if (!set.insert(t)) set.insert(static_cast<std::uint32_t>(j));
  }
  set.list(out.data());
  std::sort(out.begin(), out.end());
}

}  // namespace internal

void draw_random_indices(std::uint64_t seed, std::int64_t n, std::int64_t k, std::span<std::uint32_t> out) {
  if (n < 0 || n > std::numeric_limits<std::uint32_t>::max() || k < 0 || k > n) {
    throw InvalidArgument({.op = "random indices"},
                          fmt::format("cannot draw {} indices out of {} (need 0 <= k <= n < 2^32)", k, n));
  }
  if (out.size() != static_cast<std::size_t>(k)) {
    throw InvalidArgument({.op = "random indices"},
                          fmt::format("output holds {} indices, {} were asked for", out.size(), k));
  }
  if (k == 0) return;
  auto n32 = static_cast<std::uint32_t>(n);
  auto k32 = static_cast<std::uint32_t>(k);
  if (k >= n / 1024) {
    internal::draw_random_indices_bitmap(seed, n32, k32, out);
  } else {
    internal::draw_random_indices_hashed(seed, n32, k32, out);
  }
}

}  // namespace braid::compress
