// AlltoallvCounts without processes: rows in, the matrix out, and the disagreement every rank
// holding the same matrix reports identically (the same pair, both sizes, the op and its seq).
#include "braid/collectives/alltoallv_counts.h"

#include <string>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

class AlltoallvCountsTest : public ::testing::Test {
 protected:
  Communicator comm_ = Communicator::init();  // a lone process: a world of one
  CollectiveArgs args_{.comm = comm_, .op = OpKind::kAlltoallv, .seq = 7, .send = nullptr, .recv = nullptr,
                       .count = 0, .dtype = DType::kBF16};
};

TEST_F(AlltoallvCountsTest, RowsFillBothPlanes) {
  AlltoallvCounts counts(3);
  const std::int64_t row1[] = {4, 0, 9, 1, 2, 3};  // rank 1 sends 4, 0, 9; expects 1, 2, 3
  counts.set_row(1, row1);
  const std::int64_t send[] = {5, 6, 0}, displs[] = {0, 0, 0}, recv[] = {7, 8, 0};
  const AlltoallvLayout layout{send, displs, recv, displs};
  EXPECT_EQ(AlltoallvCounts::row_of(layout, 3), (std::vector<std::int64_t>{5, 6, 0, 7, 8, 0}));
  counts.set_row(0, layout);
  EXPECT_EQ(counts.sent(1, 0), 4);
  EXPECT_EQ(counts.sent(1, 2), 9);
  EXPECT_EQ(counts.expected(1, 2), 3);
  EXPECT_EQ(counts.sent(0, 1), 6);
  EXPECT_EQ(counts.expected(0, 1), 8);
  EXPECT_EQ(counts.sent_to_peers(1), 13);  // its own block (0) stays local
  EXPECT_EQ(counts.sent_to_peers(0), 6);
  EXPECT_EQ(counts.sent_to_peers(2), 0);
}

TEST_F(AlltoallvCountsTest, AgreeingCountsRaiseNothing) {
  AlltoallvCounts counts(2);
  const std::int64_t row0[] = {3, 5, 3, 0}, row1[] = {0, 2, 5, 2};
  counts.set_row(0, row0);
  counts.set_row(1, row1);
  EXPECT_EQ(counts.disagreement(args_), nullptr);
}

TEST_F(AlltoallvCountsTest, FirstDisagreementNamesThePairTheSizesAndTheCall) {
  AlltoallvCounts counts(3);
  const std::int64_t row0[] = {0, 1000, 4, 0, 0, 0}, row1[] = {0, 0, 0, 1001, 0, 0}, row2[] = {0, 0, 0, 5, 0, 0};
  counts.set_row(0, row0);
  counts.set_row(1, row1);
  counts.set_row(2, row2);
  std::exception_ptr error = counts.disagreement(args_);
  ASSERT_NE(error, nullptr);
  try {
    std::rethrow_exception(error);
  } catch (const Mismatch& e) {
    const std::string message = e.what();
    // (0, 1) comes before (0, 2) in row-major order; bf16 is 2 bytes an element.
    EXPECT_NE(message.find("rank 0 sends rank 1 1000 elements (2000 bytes) of bf16 but rank 1 expects 1001 (2002 bytes)"),
              std::string::npos) << message;
    EXPECT_NE(message.find("op alltoallv #7"), std::string::npos) << message;
    EXPECT_NE(message.find("rank 0, peer 1"), std::string::npos) << message;  // this rank sends: the peer receives
  }
}

}  // namespace
}  // namespace braid
