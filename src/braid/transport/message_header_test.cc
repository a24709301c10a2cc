#include "braid/transport/message_header.h"

#include <cstring>

#include <gtest/gtest.h>

namespace braid {
namespace {

WireHeader sample() {
  return make_data_header({.comm_id = 7, .channel = Channel::kCollective, .tag = 3},
                          {.op = OpKind::kReduce, .seq = 42, .dtype = DType::kBF16, .bytes = 1000,
                           .reduce_op = ReduceOp::kMax, .root = 3, .algorithm = 9});
}

TEST(MessageHeaderTest, RoundTripsKeyAndEnvelope) {
  WireHeader h = sample();
  EXPECT_EQ(validate_header(h), "");
  EXPECT_EQ(h.version, 2);
  EXPECT_EQ(key_of(h), (MatchKey{.comm_id = 7, .channel = Channel::kCollective, .tag = 3}));
  Envelope e = envelope_of(h);
  EXPECT_EQ(e.op, OpKind::kReduce);
  EXPECT_EQ(e.seq, 42);
  EXPECT_EQ(e.dtype, DType::kBF16);
  EXPECT_EQ(e.bytes, 1000u);
  EXPECT_EQ(e.reduce_op, ReduceOp::kMax);
  EXPECT_EQ(e.root, 3);
  EXPECT_EQ(e.algorithm, 9);
}

// sum is ReduceOp 0: on the wire it must stay distinct from "no reduction op".
TEST(MessageHeaderTest, RoundTripsEveryReductionOpAndItsAbsence) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd}) {
    WireHeader h = make_data_header({}, {.op = OpKind::kAllreduce, .seq = 1, .dtype = DType::kF32, .reduce_op = op});
    ASSERT_EQ(validate_header(h), "");
    EXPECT_EQ(envelope_of(h).reduce_op, op);
  }
  Envelope plain = envelope_of(make_data_header({}, {.op = OpKind::kSendRecv, .bytes = 8}));
  EXPECT_EQ(plain.reduce_op, std::nullopt);
  EXPECT_EQ(plain.root, kNoRoot);
  EXPECT_EQ(plain.algorithm, kNoAlgorithm);
}

TEST(MessageHeaderTest, EveryFlippedBitIsDetected) {
  WireHeader good = sample();
  for (std::size_t bit = 0; bit < offsetof(WireHeader, crc) * 8; ++bit) {
    WireHeader bad = good;
    reinterpret_cast<unsigned char*>(&bad)[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    EXPECT_NE(validate_header(bad), "") << "bit " << bit;
  }
}

TEST(MessageHeaderTest, RejectsOutOfRangeFieldsEvenWithAValidChecksum) {
  // A peer running a buggy or hostile build can produce a self-consistent header; the range
  // checks must still refuse it before its length is trusted.
  WireHeader h = make_data_header({}, {.op = OpKind::kSendRecv, .bytes = kMaxPayloadBytes + 1});
  EXPECT_NE(validate_header(h).find("exceeds"), std::string::npos);
  WireHeader bad_op = make_data_header({}, {.op = OpKind::kAllreduce, .reduce_op = static_cast<ReduceOp>(5)});
  EXPECT_NE(validate_header(bad_op).find("reduction op"), std::string::npos);
  WireHeader bad_root = make_data_header({}, {.op = OpKind::kBroadcast, .root = -2});
  EXPECT_NE(validate_header(bad_root).find("root"), std::string::npos);
  WireHeader abort = make_abort_header(4, kMaxAbortMessage + 1);
  EXPECT_NE(validate_header(abort), "");
  EXPECT_EQ(validate_header(make_bye_header()), "");
}

TEST(MessageHeaderTest, NamesWhatIsWrong) {
  WireHeader h = sample();
  h.magic = 0x12345678;
  EXPECT_NE(validate_header(h).find("magic"), std::string::npos);
  h = sample();
  h.version = 99;
  EXPECT_NE(validate_header(h).find("version"), std::string::npos);
}

TEST(EnvelopeTest, DifferenceExplainsTheMismatch) {
  Envelope expected{.op = OpKind::kSendRecv, .seq = kAnySeq, .dtype = DType::kF32, .bytes = 400};
  Envelope same = expected;
  same.seq = 9;  // user sequence numbers are informational
  EXPECT_EQ(envelope_difference(expected, same), "");
  Envelope bigger = expected;
  bigger.bytes = 800;
  EXPECT_NE(envelope_difference(expected, bigger).find("size"), std::string::npos);
  Envelope other_op{.op = OpKind::kBarrier, .seq = 3, .dtype = DType::kU8, .bytes = 0};
  Envelope allreduce{.op = OpKind::kAllreduce, .seq = 3, .dtype = DType::kU8, .bytes = 0};
  EXPECT_NE(envelope_difference(other_op, allreduce).find("different operations"), std::string::npos);
  Envelope later = other_op;
  later.seq = 4;
  EXPECT_NE(envelope_difference(other_op, later), "");
}

// The call's own parameters are named from the receiver's side, before any size difference
// they cause (another algorithm moves other block sizes; the dtype changes the byte count).
TEST(EnvelopeTest, DifferenceNamesTheDisagreeingCallParameter) {
  const Envelope mine{.op = OpKind::kAllreduce, .seq = 5, .dtype = DType::kF32, .bytes = 400,
                      .reduce_op = ReduceOp::kSum, .algorithm = 1};
  EXPECT_EQ(envelope_difference(mine, mine), "");
  Envelope theirs = mine;
  theirs.reduce_op = ReduceOp::kMax;
  EXPECT_EQ(envelope_difference(mine, theirs),
            "the peer runs allreduce with max, this rank with sum: expected allreduce #5, 400 bytes of f32, sum, "
            "algorithm #1, received allreduce #5, 400 bytes of f32, max, algorithm #1");
  theirs = mine;
  theirs.algorithm = 2;
  theirs.bytes = 100;
  const std::string algorithms = envelope_difference(mine, theirs);
  EXPECT_NE(algorithms.find("the peer runs allreduce with algorithm #2, this rank with algorithm #1"), std::string::npos)
      << algorithms;
  theirs = mine;
  theirs.dtype = DType::kF64;
  theirs.bytes = 800;
  EXPECT_NE(envelope_difference(mine, theirs).find("element type"), std::string::npos);
  const Envelope bcast{.op = OpKind::kBroadcast, .seq = 2, .dtype = DType::kU8, .bytes = 4, .root = 0, .algorithm = 3};
  Envelope other_root = bcast;
  other_root.root = 2;
  EXPECT_NE(envelope_difference(bcast, other_root).find("the peer runs broadcast with root 2, this rank with root 0"),
            std::string::npos);
}

}  // namespace
}  // namespace braid
