#include "braid/collectives/algorithm_registry.h"

#include <set>

#include <gtest/gtest.h>

namespace braid {
namespace {

constexpr OpKind kRegistryOps[] = {OpKind::kAllreduce, OpKind::kReduceScatter, OpKind::kAllgather, OpKind::kBroadcast,
                                   OpKind::kReduce,    OpKind::kAlltoall,      OpKind::kGather,    OpKind::kScatter};

// Ids travel in every message (Envelope::algorithm): each algorithm needs its own, and 0 stays
// free for "no algorithm".
TEST(AlgorithmRegistryTest, EveryAlgorithmHasItsOwnNonZeroId) {
  std::set<int> seen;
  for (OpKind op : kRegistryOps) {
    for (const AlgorithmEntry* entry : algorithms_for(op)) {
      const int id = algorithm_id(*entry);
      EXPECT_NE(id, kNoAlgorithm) << op_kind_name(op) << " " << entry->name;
      EXPECT_TRUE(seen.insert(id).second) << op_kind_name(op) << " " << entry->name << " reuses id " << id;
      EXPECT_EQ(algorithm_id(*find_algorithm(op, entry->name)), id);
    }
  }
  EXPECT_GE(seen.size(), 2u);
}

TEST(AlgorithmRegistryTest, GatherAndScatterOfferLinearAndBinomial) {
  for (OpKind op : {OpKind::kGather, OpKind::kScatter}) {
    EXPECT_NE(find_algorithm(op, "linear"), nullptr);
    EXPECT_NE(find_algorithm(op, "binomial"), nullptr);
  }
}

// alltoallv is an operation of the registry like the others: its algorithms have ids and a
// default, so BRAID_ALGO_ALLTOALLV and CollectiveOptions::algorithm name them.
TEST(AlgorithmRegistryTest, AlltoallvOffersPairwiseFirst) {
  const auto alltoallv = algorithms_for(OpKind::kAlltoallv);
  ASSERT_FALSE(alltoallv.empty());
  EXPECT_EQ(alltoallv.front()->name, "pairwise");
  EXPECT_EQ(find_algorithm(OpKind::kAlltoallv, "pairwise"), alltoallv.front());
  EXPECT_NE(algorithm_id(*alltoallv.front()), kNoAlgorithm);
  EXPECT_NE(algorithm_id(*alltoallv.front()), algorithm_id(*find_algorithm(OpKind::kAlltoall, "pairwise")));
}

// algorithms_for() is a view of the table: every entry of the operation, and only those.
TEST(AlgorithmRegistryTest, AlgorithmsForListsExactlyTheOperationsEntries) {
  for (OpKind op : kRegistryOps) {
    for (const AlgorithmEntry* entry : algorithms_for(op)) {
      EXPECT_EQ(entry->op, op) << entry->name;
      EXPECT_EQ(find_algorithm(op, entry->name), entry);
    }
  }
  EXPECT_TRUE(algorithms_for(OpKind::kBarrier).empty());
  EXPECT_TRUE(algorithms_for(OpKind::kSendRecv).empty());
}

TEST(AlgorithmRegistryTest, AnEntryOutsideTheTableHasNoId) {
  AlgorithmEntry stray{OpKind::kGather, "carrier_pigeon", nullptr};
  EXPECT_EQ(algorithm_id(stray), kNoAlgorithm);
}

}  // namespace
}  // namespace braid
