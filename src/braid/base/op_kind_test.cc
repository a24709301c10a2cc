// The one vocabulary of operations: every kind's name reads back as that kind, aliases are
// accepted and never printed, and an unknown name is refused listing what is accepted.
#include "braid/base/op_kind.h"

#include <array>
#include <string>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

std::string refusal(std::string_view name, std::span<const OpKind> accepted = all_op_kinds()) {
  try {
    parse_op_kind(name, "--op", accepted);
  } catch (const InvalidArgument& e) {
    return e.detail();
  }
  ADD_FAILURE() << "'" << name << "' was accepted";
  return "";
}

TEST(OpKind, EveryNameReadsBackAsItsKind) {
  ASSERT_EQ(all_op_kinds().size(), 12u);
  for (OpKind op : all_op_kinds()) {
    EXPECT_TRUE(is_valid_op_kind(static_cast<std::uint8_t>(op)));
    EXPECT_EQ(parse_op_kind(op_kind_name(op), "--op"), op) << op_kind_name(op);
    EXPECT_EQ(find_op_kind(op_kind_name(op)), op) << op_kind_name(op);
  }
}

TEST(OpKind, WireValuesAndNamesStayAsTheyWere) {
  EXPECT_EQ(static_cast<int>(OpKind::kSendRecv), 1);
  EXPECT_EQ(static_cast<int>(OpKind::kAllreduce), 4);
  EXPECT_EQ(static_cast<int>(OpKind::kScatter), 12);
  EXPECT_FALSE(is_valid_op_kind(0));
  EXPECT_FALSE(is_valid_op_kind(13));
  EXPECT_EQ(op_kind_name(OpKind::kSendRecv), "send/recv");
  EXPECT_EQ(op_kind_name(OpKind::kReduceScatter), "reduce_scatter");
  EXPECT_EQ(op_kind_name(static_cast<OpKind>(200)), "unknown");
}

TEST(OpKind, AliasesAreAcceptedAndNeverPrinted) {
  EXPECT_EQ(parse_op_kind("sendrecv", "--op"), OpKind::kSendRecv);
  EXPECT_EQ(parse_op_kind("reduce-scatter", "--op"), OpKind::kReduceScatter);
  EXPECT_EQ(find_op_kind("reduce-scatter"), OpKind::kReduceScatter);
  EXPECT_EQ(find_op_kind("all-reduce"), std::nullopt);
}

TEST(OpKind, AnUnknownNameIsRefusedListingEveryAcceptedOne) {
  EXPECT_EQ(refusal("allreduse"),
            "--op: unknown operation 'allreduse' (accepted: send/recv (alias sendrecv), barrier, split, allreduce, "
            "reduce_scatter (alias reduce-scatter), allgather, broadcast, reduce, alltoall, alltoallv, gather or "
            "scatter)");
}

TEST(OpKind, ACallersSubsetIsAllItAcceptsAndLists) {
  constexpr std::array subset{OpKind::kAllreduce, OpKind::kReduceScatter};
  EXPECT_EQ(parse_op_kind("reduce-scatter", "--ops", subset), OpKind::kReduceScatter);
  EXPECT_EQ(refusal("gather", subset),
            "--op: unknown operation 'gather' (accepted: allreduce or reduce_scatter (alias reduce-scatter))");
}

}  // namespace
}  // namespace braid
