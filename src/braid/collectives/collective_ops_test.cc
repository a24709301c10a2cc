// Each collective's argument rule, written once (collective_ops.h): checked() returns the
// call's arguments or raises InvalidArgument, the same for the blocking and the non-blocking
// form; run_collective() runs what it returned. On a world of one, no process needed.
#include "braid/collectives/collective_ops.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "braid/base/error.h"
#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/async_collectives.h"

namespace braid {
namespace {

class CollectiveOpsTest : public ::testing::Test {
 protected:
  Communicator comm_ = Communicator::init();
  float a_[4] = {1, 2, 3, 4};
  float b_[4] = {};
};

TEST_F(CollectiveOpsTest, CheckedReturnsTheCallUnnumbered) {
  const CollectiveArgs args = checked(comm_, {.op = OpKind::kReduce,
                                              .send = a_,
                                              .recv = b_,
                                              .count = 3,
                                              .dtype = DType::kF64,
                                              .reduce_op = ReduceOp::kMax,
                                              .root = 0});
  EXPECT_EQ(&args.comm, &comm_);
  EXPECT_EQ(args.op, OpKind::kReduce);
  EXPECT_EQ(args.seq, -1);
  EXPECT_EQ(args.send, reinterpret_cast<const std::byte*>(a_));
  EXPECT_EQ(args.recv, reinterpret_cast<std::byte*>(b_));
  EXPECT_EQ(args.count, 3);
  EXPECT_EQ(args.dtype, DType::kF64);
  EXPECT_EQ(args.reduce_op, ReduceOp::kMax);
  EXPECT_EQ(args.root, 0);
  EXPECT_EQ(args.algorithm, kNoAlgorithm);
  EXPECT_EQ(args.layout, nullptr);
}

// The table is indexed by OpKind (collective_ops.cc): kinds on either side of the collectives'
// run, and values that are no OpKind, have no row.
TEST_F(CollectiveOpsTest, OnlyCollectivesHaveARow) {
  for (OpKind op : {OpKind::kSendRecv, OpKind::kBarrier, OpKind::kSplit, static_cast<OpKind>(0),
                    static_cast<OpKind>(13), static_cast<OpKind>(255)}) {
    EXPECT_THROW(checked(comm_, {.op = op, .send = a_, .recv = b_, .count = 1, .dtype = DType::kF32}), InvalidArgument)
        << static_cast<int>(op);
  }
  EXPECT_NO_THROW(checked(comm_, {.op = OpKind::kScatter, .send = a_, .recv = b_, .count = 1, .dtype = DType::kF32}));
}

TEST_F(CollectiveOpsTest, EveryOperationRefusesWhatNoneMayTake) {
  for (OpKind op : {OpKind::kAllreduce, OpKind::kAllgather, OpKind::kReduceScatter, OpKind::kBroadcast, OpKind::kReduce,
                    OpKind::kGather, OpKind::kScatter, OpKind::kAlltoall}) {
    const CollectiveCall good{.op = op, .send = a_, .recv = b_, .count = 1, .dtype = DType::kF32};
    EXPECT_NO_THROW(checked(comm_, good)) << op_kind_name(op);
    CollectiveCall call = good;
    call.count = -1;
    EXPECT_THROW(checked(comm_, call), InvalidArgument) << op_kind_name(op);
    call = good;
    call.recv = nullptr;
    EXPECT_THROW(checked(comm_, call), InvalidArgument) << op_kind_name(op);
    call = good;
    call.dtype = static_cast<DType>(99);
    EXPECT_THROW(checked(comm_, call), InvalidArgument) << op_kind_name(op);
    call = good;
    call.count = 0;
    call.send = call.recv = nullptr;
    EXPECT_NO_THROW(checked(comm_, call)) << op_kind_name(op);  // nothing to read or write
  }
}

TEST_F(CollectiveOpsTest, ReductionOpsRootsAndWholeBuffersAreCheckedWhereTheOperationHasThem) {
  auto with = [&](OpKind op, auto&& change) {
    CollectiveCall call{.op = op, .send = a_, .recv = b_, .count = 1, .dtype = DType::kF32};
    change(call);
    return call;
  };
  auto bad_op = [](CollectiveCall& call) { call.reduce_op = static_cast<ReduceOp>(99); };
  auto bad_root = [](CollectiveCall& call) { call.root = 1; };
  for (OpKind op : {OpKind::kAllreduce, OpKind::kReduceScatter, OpKind::kReduce}) {
    EXPECT_THROW(checked(comm_, with(op, bad_op)), InvalidArgument) << op_kind_name(op);
  }
  EXPECT_NO_THROW(checked(comm_, with(OpKind::kAllgather, bad_op)));  // allgather has no reduction op
  for (OpKind op : {OpKind::kBroadcast, OpKind::kReduce, OpKind::kGather, OpKind::kScatter}) {
    EXPECT_THROW(checked(comm_, with(op, bad_root)), InvalidArgument) << op_kind_name(op);
  }
  EXPECT_NO_THROW(checked(comm_, with(OpKind::kAllreduce, bad_root)));  // allreduce has no root
  // count * 4 bytes overflows where the buffers hold one block per rank.
  auto huge = [](CollectiveCall& call) { call.count = std::numeric_limits<std::int64_t>::max() / 2; };
  EXPECT_THROW(checked(comm_, with(OpKind::kAllgather, huge)), InvalidArgument);
}

TEST_F(CollectiveOpsTest, AlltoallvChecksItsLayoutAndDefersItsOwnDisagreement) {
  const std::int64_t two[] = {2}, one[] = {1}, zero[] = {0}, negative[] = {-1};
  const AlltoallvLayout bad{negative, zero, zero, zero};
  EXPECT_THROW(checked(comm_, {.op = OpKind::kAlltoallv, .send = a_, .recv = b_, .dtype = DType::kF32, .layout = &bad}),
               InvalidArgument);
  const AlltoallvLayout in_place{two, zero, two, zero};
  EXPECT_THROW(
      checked(comm_, {.op = OpKind::kAlltoallv, .send = a_, .recv = a_, .dtype = DType::kF32, .layout = &in_place}),
      InvalidArgument);
  // This rank sends itself 2 elements but expects 1: a Mismatch when the call runs, not at the
  // call, so the non-blocking form raises it at wait().
  const AlltoallvLayout disagreeing{two, zero, one, zero};
  const CollectiveArgs args =
      checked(comm_, {.op = OpKind::kAlltoallv, .send = a_, .recv = b_, .dtype = DType::kF32, .layout = &disagreeing});
  EXPECT_EQ(args.layout, &disagreeing);
  EXPECT_THROW(run_collective(args, ""), Mismatch);
  Work queued = ialltoallv(comm_, a_, two, zero, b_, one, zero, DType::kF32);
  EXPECT_THROW(queued.wait(), Mismatch);
}

TEST_F(CollectiveOpsTest, RunCollectiveRunsTheCheckedCall) {
  run_collective(checked(comm_, {.op = OpKind::kAllreduce,
                                 .send = a_,
                                 .recv = b_,
                                 .count = 4,
                                 .dtype = DType::kF32,
                                 .reduce_op = ReduceOp::kAvg}),
                 "ring");
  EXPECT_EQ(b_[3], 4);  // a world of one: the input, divided by one
  EXPECT_THROW(run_collective(
                   checked(comm_, {.op = OpKind::kAllreduce, .send = a_, .recv = b_, .count = 4, .dtype = DType::kF32}),
                   "no_such_algorithm"),
               InvalidArgument);
}

}  // namespace
}  // namespace braid
