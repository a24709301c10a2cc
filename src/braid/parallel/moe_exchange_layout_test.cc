// The MoE exchange layout against a reference that lays the rows out one by one in the
// documented orders (send: chunk, destination, expert, row; receive: chunk, source, expert, row;
// expert buffer: chunk, expert, source, row), on seeded random counts with zeros, chunk counts
// above the row counts (empty pieces), and the refused arguments.
#include "braid/parallel/moe_exchange_layout.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "braid/base/error.h"
#include "braid/base/splitmix64.h"

namespace braid::parallel {
namespace {

using Key = std::tuple<int, int, int, std::int64_t>;  // (chunk, rank, local expert, row in piece)

std::int64_t piece(std::int64_t n, int chunks, int c) { return n * (c + 1) / chunks - n * c / chunks; }

void check_layout(const std::vector<std::int64_t>& send, const std::vector<std::int64_t>& recv, int ep, int chunks) {
  const MoeExchangeLayout layout(send, recv, ep, chunks);
  const int local = static_cast<int>(send.size()) / ep;
  ASSERT_EQ(layout.local_experts(), local);
  // Send side: every slot of every expert, in the documented order.
  std::int64_t row = 0;
  for (int c = 0; c < chunks; ++c) {
    const MoeChunkLayout& chunk = layout.chunk(c);
    for (int p = 0; p < ep; ++p) {
      ASSERT_EQ(chunk.send_displs[static_cast<std::size_t>(p)], row);
      std::int64_t count = 0;
      for (int le = 0; le < local; ++le) {
        const int e = p * local + le;
        const std::int64_t n = send[static_cast<std::size_t>(e)];
        for (std::int64_t i = 0; i < piece(n, chunks, c); ++i, ++row, ++count) {
          ASSERT_EQ(layout.send_row(e, n * c / chunks + i), row) << "expert " << e << " chunk " << c;
        }
      }
      ASSERT_EQ(chunk.send_counts[static_cast<std::size_t>(p)], count);
    }
  }
  ASSERT_EQ(layout.send_rows(), row);
  // Receive side: the reference position of each row in both orders.
  std::map<Key, std::int64_t> in_recv, in_expert;
  row = 0;
  for (int c = 0; c < chunks; ++c) {
    const MoeChunkLayout& chunk = layout.chunk(c);
    ASSERT_EQ(chunk.first_recv_row, row);
    for (int s = 0; s < ep; ++s) {
      ASSERT_EQ(chunk.recv_displs[static_cast<std::size_t>(s)], row);
      std::int64_t count = 0;
      for (int le = 0; le < local; ++le) {
        for (std::int64_t i = 0; i < piece(recv[static_cast<std::size_t>(s * local + le)], chunks, c); ++i, ++count) {
          in_recv[{c, s, le, i}] = row++;
        }
      }
      ASSERT_EQ(chunk.recv_counts[static_cast<std::size_t>(s)], count);
    }
    std::int64_t expert_row = chunk.first_recv_row;
    for (int le = 0; le < local; ++le) {
      ASSERT_EQ(chunk.expert_offsets[static_cast<std::size_t>(le)], expert_row);
      for (int s = 0; s < ep; ++s) {
        for (std::int64_t i = 0; i < piece(recv[static_cast<std::size_t>(s * local + le)], chunks, c); ++i) {
          in_expert[{c, s, le, i}] = expert_row++;
        }
      }
    }
    ASSERT_EQ(chunk.expert_offsets.back(), expert_row);
    ASSERT_EQ(expert_row, row);
    ASSERT_EQ(chunk.recv_rows, row - chunk.first_recv_row);
    // The blocks move each received row to its expert-order row, and nothing else.
    std::map<std::int64_t, std::int64_t> moved;
    for (const MoeRowBlock& b : chunk.recv_to_expert) {
      ASSERT_GT(b.rows, 0);
      for (std::int64_t i = 0; i < b.rows; ++i) ASSERT_TRUE(moved.emplace(b.from + i, b.to + i).second);
    }
    for (const auto& [key, at] : in_recv) {
      if (std::get<0>(key) != c) continue;
      ASSERT_EQ(moved.at(at), in_expert.at(key));
    }
    ASSERT_EQ(static_cast<std::int64_t>(moved.size()), chunk.recv_rows);
  }
  ASSERT_EQ(layout.recv_rows(), row);
}

TEST(MoeExchangeLayout, MatchesTheDocumentedOrdersOnRandomCounts) {
  SplitMix64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int ep = 1 + static_cast<int>(rng.next() % 5);
    const int local = 1 + static_cast<int>(rng.next() % 3);
    const int chunks = 1 + static_cast<int>(rng.next() % 6);
    std::vector<std::int64_t> send(static_cast<std::size_t>(ep * local)), recv(send.size());
    for (auto& n : send) n = rng.next() % 3 == 0 ? 0 : static_cast<std::int64_t>(rng.next() % 12);
    for (auto& n : recv) n = rng.next() % 3 == 0 ? 0 : static_cast<std::int64_t>(rng.next() % 12);
    SCOPED_TRACE(testing::Message() << "trial " << trial << ": ep " << ep << ", local " << local << ", chunks " << chunks);
    check_layout(send, recv, ep, chunks);
    if (testing::Test::HasFatalFailure()) return;
  }
}

TEST(MoeExchangeLayout, MoreChunksThanRowsLeaveEmptyPieces) {
  check_layout({1, 0, 3, 2}, {2, 1, 0, 5}, 2, 4);
  const MoeExchangeLayout layout(std::vector<std::int64_t>{1, 0}, std::vector<std::int64_t>{1, 0}, 1, 4);
  EXPECT_EQ(layout.send_row(0, 0), 0);
  EXPECT_EQ(layout.chunk(0).send_counts[0] + layout.chunk(1).send_counts[0] + layout.chunk(2).send_counts[0], 0);
  EXPECT_EQ(layout.chunk(3).send_counts[0], 1);
}

TEST(MoeExchangeLayout, RefusesWhatItCannotLayOut) {
  auto error = [](std::vector<std::int64_t> send, std::vector<std::int64_t> recv, int ep, int chunks) -> std::string {
    try {
      MoeExchangeLayout(send, recv, ep, chunks);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error({1, 1}, {1, 1}, 1, 0).find("chunks must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(error({1, 1, 1}, {1, 1, 1}, 2, 1).find("3 experts do not split evenly over 2 ranks"), std::string::npos);
  EXPECT_NE(error({1, 1}, {1}, 2, 1).find("1 receive counts"), std::string::npos);
  EXPECT_NE(error({1, -1}, {1, 1}, 2, 1).find("row counts must be >= 0"), std::string::npos);
}

}  // namespace
}  // namespace braid::parallel
