#include "braid/transport/message_header.h"

#include <cstring>

#include <gtest/gtest.h>

namespace braid {
namespace {

WireHeader sample() {
  return make_data_header({.comm_id = 7, .channel = Channel::kCollective, .tag = 3},
                          {.op = OpKind::kAllreduce, .seq = 42, .dtype = DType::kBF16, .bytes = 1000});
}

TEST(MessageHeaderTest, RoundTripsKeyAndEnvelope) {
  WireHeader h = sample();
  EXPECT_EQ(validate_header(h), "");
  EXPECT_EQ(key_of(h), (MatchKey{.comm_id = 7, .channel = Channel::kCollective, .tag = 3}));
  Envelope e = envelope_of(h);
  EXPECT_EQ(e.op, OpKind::kAllreduce);
  EXPECT_EQ(e.seq, 42);
  EXPECT_EQ(e.dtype, DType::kBF16);
  EXPECT_EQ(e.bytes, 1000u);
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

}  // namespace
}  // namespace braid
