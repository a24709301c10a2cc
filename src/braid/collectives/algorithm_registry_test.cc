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

TEST(AlgorithmRegistryTest, AnEntryOutsideTheTableHasNoId) {
  AlgorithmEntry stray{OpKind::kGather, "carrier_pigeon", nullptr};
  EXPECT_EQ(algorithm_id(stray), kNoAlgorithm);
}

}  // namespace
}  // namespace braid
