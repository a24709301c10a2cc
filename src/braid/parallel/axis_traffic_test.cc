// algorithm_bytes: the per-rank bytes of the bandwidth-optimal algorithm for each operation
// (the formulas of axis_traffic.h). AxisTraffic's counting through real ranks is tested by
// tests/mp/tensor_parallel_test.cc.
#include "braid/parallel/axis_traffic.h"

#include <gtest/gtest.h>

namespace braid::parallel {
namespace {

TEST(AlgorithmBytesTest, AllreduceMovesTwiceTheShareOfTheOthers) {
  EXPECT_EQ(algorithm_bytes(OpKind::kAllreduce, 4000, 2), 4000);
  EXPECT_EQ(algorithm_bytes(OpKind::kAllreduce, 4000, 4), 6000);
  EXPECT_EQ(algorithm_bytes(OpKind::kAllreduce, 4000, 8), 7000);
  EXPECT_DOUBLE_EQ(algorithm_bytes(OpKind::kAllreduce, 3000, 3), 4000);
}

TEST(AlgorithmBytesTest, AllgatherAndReduceScatterMoveEveryOtherPiece) {
  for (OpKind op : {OpKind::kAllgather, OpKind::kReduceScatter, OpKind::kAlltoall}) {
    EXPECT_EQ(algorithm_bytes(op, 100, 2), 100) << op_kind_name(op);
    EXPECT_EQ(algorithm_bytes(op, 100, 4), 300) << op_kind_name(op);
    EXPECT_EQ(algorithm_bytes(op, 100, 5), 400) << op_kind_name(op);
  }
}

TEST(AlgorithmBytesTest, RootedAndAlltoallvMoveTheOthersShare) {
  for (OpKind op : {OpKind::kBroadcast, OpKind::kReduce, OpKind::kGather, OpKind::kScatter, OpKind::kAlltoallv}) {
    EXPECT_EQ(algorithm_bytes(op, 1000, 2), 500) << op_kind_name(op);
    EXPECT_EQ(algorithm_bytes(op, 1000, 4), 750) << op_kind_name(op);
  }
}

TEST(AlgorithmBytesTest, PointToPointIsTheMessageAndBarrierNothing) {
  EXPECT_EQ(algorithm_bytes(OpKind::kSendRecv, 123, 4), 123);
  EXPECT_EQ(algorithm_bytes(OpKind::kBarrier, 123, 4), 0);
  EXPECT_EQ(algorithm_bytes(OpKind::kSplit, 123, 4), 0);
}

TEST(AlgorithmBytesTest, OneRankAndNoBytesMoveNothing) {
  for (OpKind op : {OpKind::kAllreduce, OpKind::kAllgather, OpKind::kReduceScatter, OpKind::kBroadcast,
                    OpKind::kAlltoall, OpKind::kAlltoallv}) {
    EXPECT_EQ(algorithm_bytes(op, 1000, 1), 0) << op_kind_name(op);
    EXPECT_EQ(algorithm_bytes(op, 0, 4), 0) << op_kind_name(op);
  }
}

// Without any watched communicator: add_sent and take.
TEST(AxisTrafficTest, AddSentAccumulatesAndTakeResets) {
  AxisTraffic traffic;
  EXPECT_TRUE(traffic.take().empty());
  traffic.add_sent("pp", 100);
  traffic.add_sent("pp", 23);
  traffic.add_sent("ep", 0);
  auto first = traffic.take();
  EXPECT_EQ(first, (std::map<std::string, double>{{"ep", 0}, {"pp", 123}}));
  EXPECT_EQ(traffic.take(), (std::map<std::string, double>{{"ep", 0}, {"pp", 0}}));
}

}  // namespace
}  // namespace braid::parallel
