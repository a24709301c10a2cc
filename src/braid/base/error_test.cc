#include "braid/base/error.h"

#include <gtest/gtest.h>

namespace braid {
namespace {

TEST(ErrorTest, MessageNamesRankPeerOpAndSequence) {
  Mismatch e({.rank = 1, .peer = 3, .op = "allreduce", .seq = 17}, "sizes differ");
  EXPECT_STREQ(e.what(), "braid::Mismatch [rank 1, peer 3, op allreduce #17]: sizes differ");
  EXPECT_EQ(e.kind(), ErrorKind::kMismatch);
  EXPECT_EQ(e.detail(), "sizes differ");
}

TEST(ErrorTest, AbsentContextIsOmitted) {
  InvalidArgument e({}, "bad");
  EXPECT_STREQ(e.what(), "braid::InvalidArgument: bad");
}

TEST(ErrorTest, ThrowErrorThrowsTheMatchingClass) {
  EXPECT_THROW(throw_error(ErrorKind::kPeerLost, {}, "x"), PeerLost);
  EXPECT_THROW(throw_error(ErrorKind::kTimeout, {}, "x"), Timeout);
  EXPECT_THROW(throw_error(ErrorKind::kCorrupt, {}, "x"), Corrupt);
  EXPECT_THROW(throw_error(ErrorKind::kMismatch, {}, "x"), Error);
}

}  // namespace
}  // namespace braid
