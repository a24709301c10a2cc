#include "braid/base/fault_spec.h"

#include <string>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

TEST(FaultSpecTest, ParsesEveryKind) {
  FaultSpec kill = parse_fault_spec("rank=2,op=allreduce,nth=3,kind=kill");
  EXPECT_EQ(kill, (FaultSpec{.rank = 2, .op = OpKind::kAllreduce, .nth = 3, .kind = FaultKind::kKill}));
  EXPECT_EQ(parse_fault_spec("kind=freeze,op=broadcast,rank=0").kind, FaultKind::kFreeze);
  EXPECT_EQ(parse_fault_spec("kind=freeze,op=broadcast,rank=0").nth, 1) << "nth defaults to 1";
  FaultSpec stall = parse_fault_spec("rank=1,op=reduce-scatter,nth=1,kind=stall:2.5");
  EXPECT_EQ(stall.op, OpKind::kReduceScatter) << "aliases of op_kind.h are accepted";
  EXPECT_EQ(stall.kind, FaultKind::kStall);
  EXPECT_DOUBLE_EQ(stall.stall_seconds, 2.5);
  EXPECT_EQ(parse_fault_spec("rank=1,op=alltoallv,kind=flip").kind, FaultKind::kFlip);
  EXPECT_EQ(parse_fault_spec("rank=1,op=send,kind=close").op, OpKind::kSendRecv);
  EXPECT_EQ(parse_fault_spec("rank=1,op=send,kind=close").kind, FaultKind::kClose);
}

TEST(FaultSpecTest, DescribeRoundTrips) {
  for (const char* text : {"rank=1,op=allreduce,nth=3,kind=stall:2.5", "rank=0,op=send,nth=7,kind=close",
                           "rank=3,op=gather,nth=1,kind=freeze", "rank=2,op=reduce_scatter,nth=2,kind=flip"}) {
    FaultSpec spec = parse_fault_spec(text);
    EXPECT_EQ(describe(spec), text);
    EXPECT_EQ(parse_fault_spec(describe(spec)), spec);
  }
}

// Each bad specification is InvalidArgument naming the variable and the part that is wrong.
TEST(FaultSpecTest, RefusesBadSpecsNamingWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "is not key=value"},
      {"rank=1,op=allreduce,kind=kill,", "is not key=value"},
      {"rank=1,op=allreduce,kind", "'kind' is not key=value"},
      {"rank=1,op=allreduce", "'kind' is missing"},
      {"op=allreduce,kind=kill", "'rank' is missing"},
      {"rank=1,kind=kill", "'op' is missing"},
      {"rank=1,rank=2,op=allreduce,kind=kill", "'rank' given twice"},
      {"rank=1,op=allreduce,kind=kill,when=now", "unknown key 'when'"},
      {"rank=-1,op=allreduce,kind=kill", "rank must be an integer >= 0, got '-1'"},
      {"rank=one,op=allreduce,kind=kill", "rank must be an integer >= 0, got 'one'"},
      {"rank=1,op=allreduce,nth=0,kind=kill", "nth must be an integer >= 1, got '0'"},
      {"rank=1,op=allreduce,nth=3x,kind=kill", "nth must be an integer >= 1, got '3x'"},
      {"rank=1,op=allreduc,kind=kill", "op 'allreduc' is neither a collective nor send"},
      {"rank=1,op=barrier,kind=kill", "op 'barrier' is neither a collective nor send"},
      {"rank=1,op=allreduce,kind=explode", "unknown kind 'explode'"},
      {"rank=1,op=allreduce,kind=stall", "unknown kind 'stall'"},
      {"rank=1,op=allreduce,kind=stall:", "stall needs a positive number of seconds, got ''"},
      {"rank=1,op=allreduce,kind=stall:0", "stall needs a positive number of seconds, got '0'"},
      {"rank=1,op=allreduce,kind=stall:-2", "stall needs a positive number of seconds, got '-2'"},
      {"rank=1,op=allreduce,kind=stall:inf", "stall needs a positive number of seconds, got 'inf'"},
  };
  for (const auto& [text, phrase] : cases) {
    try {
      parse_fault_spec(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const InvalidArgument& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(std::string("BRAID_FAULT='") + text + "'"), std::string::npos) << what;
      EXPECT_NE(what.find(phrase), std::string::npos) << text << " -> " << what;
      EXPECT_NE(what.find("kind=kill|freeze|stall:SECONDS|flip|close"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace braid
