#include "braid/collectives/patterns/bruck.h"

#include <vector>

#include <gtest/gtest.h>

namespace braid::bruck {
namespace {

// Simulates the working arrays of all ranks (slot -> whose block it holds, -1 empty) and
// checks that every slot ends with the block block_of_slot() promises, each filled once.
TEST(BruckPatternTest, EverySlotReceivesTheRightBlockForAnyWorldSize) {
  for (int n = 1; n <= 13; ++n) {
    std::vector<std::vector<int>> slots(static_cast<std::size_t>(n), std::vector<int>(static_cast<std::size_t>(n), -1));
    for (int r = 0; r < n; ++r) slots[static_cast<std::size_t>(r)][0] = r;
    for (int k = 0; k < rounds(n); ++k) {
      auto before = slots;
      for (int r = 0; r < n; ++r) {
        int from = recv_peer(r, k, n);
        EXPECT_EQ(send_peer(from, k, n), r);
        for (int i = 0; i < slots_in_round(k, n); ++i) {
          auto& dst = slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(distance(k) + i)];
          EXPECT_EQ(dst, -1);
          dst = before[static_cast<std::size_t>(from)][static_cast<std::size_t>(i)];
          EXPECT_NE(dst, -1);  // only filled slots are sent
        }
      }
    }
    for (int r = 0; r < n; ++r) {
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)], block_of_slot(r, i, n))
            << "n " << n << " rank " << r << " slot " << i;
      }
    }
  }
}

TEST(BruckPatternTest, RoundsAreCeilLog2) {
  EXPECT_EQ(rounds(1), 0);
  EXPECT_EQ(rounds(2), 1);
  EXPECT_EQ(rounds(5), 3);
  EXPECT_EQ(rounds(8), 3);
  EXPECT_EQ(rounds(9), 4);
}

}  // namespace
}  // namespace braid::bruck
