// braid-bench's MoE routing draw (moe_counts.h) without processes: every token is routed, the
// skew is Zipf's, a larger size extends a smaller one's draws, the layout is packed and knows
// where each block lies at its sender, and the digests are pinned to the values the OpenMPI
// peer's C reimplementation printed for the same sizes (docs/performance.md), so a change to
// either side's arithmetic shows here.
#include "moe_counts.h"

#include <gtest/gtest.h>

namespace braid::bench {
namespace {

std::int64_t at(const std::vector<std::int64_t>& m, int n, int s, int d) { return m[static_cast<std::size_t>(s * n + d)]; }

TEST(MoeCountsTest, EveryTokenIsRoutedAndRankZeroIsTheHotExpert) {
  const int n = 4;
  const std::int64_t tokens = 16384;
  const std::vector<std::int64_t> m = moe_token_matrix(tokens, n);
  std::int64_t to_zero = 0;
  for (int s = 0; s < n; ++s) {
    std::int64_t row = 0;
    for (int d = 0; d < n; ++d) row += at(m, n, s, d);
    EXPECT_EQ(row, tokens) << "rank " << s;
    to_zero += at(m, n, s, 0);
  }
  // Zipf(1) over 4: rank 0's share is 1 / (1 + 1/2 + 1/3 + 1/4) = 0.48; 65536 draws keep it
  // within 0.01 (about 5 standard deviations).
  EXPECT_NEAR(static_cast<double>(to_zero) / (n * tokens), 0.48, 0.01);
}

TEST(MoeCountsTest, LargerSizesExtendSmallerOnes) {
  const std::vector<std::int64_t> small = moe_token_matrix(256, 3), large = moe_token_matrix(4096, 3);
  for (std::size_t i = 0; i < small.size(); ++i) EXPECT_LE(small[i], large[i]) << i;
}

TEST(MoeCountsTest, LayoutIsPackedAndLocatesEachBlockAtItsSender) {
  const int n = 3;
  const std::vector<std::int64_t> m = moe_token_matrix(100, n);
  for (int r = 0; r < n; ++r) {
    const MoeLayout l = moe_layout(m, n, r);
    std::int64_t sent = 0, received = 0;
    for (int p = 0; p < n; ++p) {
      EXPECT_EQ(l.send_displs[static_cast<std::size_t>(p)], sent);
      EXPECT_EQ(l.recv_displs[static_cast<std::size_t>(p)], received);
      EXPECT_EQ(l.recv_counts[static_cast<std::size_t>(p)], at(m, n, p, r) * kMoeTokenElements);
      // Rank p's layout puts its block for r where this one says.
      EXPECT_EQ(moe_layout(m, n, p).send_displs[static_cast<std::size_t>(r)], l.offset_at_sender[static_cast<std::size_t>(p)]);
      sent += l.send_counts[static_cast<std::size_t>(p)];
      received += l.recv_counts[static_cast<std::size_t>(p)];
    }
    EXPECT_EQ(sent, 100 * kMoeTokenElements);
    EXPECT_EQ(l.received, received);
  }
}

TEST(MoeCountsTest, DigestsMatchTheMpiPeers) {
  EXPECT_EQ(moe_digest(moe_token_matrix(16384, 2)), 0xb2d72d30c5204e31ull);  // 64 MiB, 2 ranks
  EXPECT_EQ(moe_digest(moe_token_matrix(16384, 4)), 0xb7f5d9b87b14e201ull);  // 64 MiB, 4 ranks
  EXPECT_EQ(moe_digest(moe_token_matrix(4096, 4)), 0xce1ba64647676356ull);   // 16 MiB, 4 ranks
}

}  // namespace
}  // namespace braid::bench
