#include "braid/collectives/algorithm_registry.h"

#include <array>

#include "braid/collectives/algorithms.h"

namespace braid {

namespace {

// The first entry of each operation is its default; an operation's entries stand together.
constexpr std::array kAlgorithms{
    AlgorithmEntry{OpKind::kAllreduce, "ring", algorithms::allreduce_ring},
    AlgorithmEntry{OpKind::kAllreduce, "recursive_doubling", algorithms::allreduce_recursive_doubling},
    AlgorithmEntry{OpKind::kAllreduce, "rabenseifner", algorithms::allreduce_rabenseifner,
                   algorithms::allreduce_rabenseifner_supports},
    AlgorithmEntry{OpKind::kAllreduce, "tree", algorithms::allreduce_tree},
    AlgorithmEntry{OpKind::kAllreduce, "shm_direct", algorithms::allreduce_shm_direct,
                   algorithms::allreduce_shm_direct_supports, /*reads_send=*/true},
    AlgorithmEntry{OpKind::kAllreduce, "one_shot", algorithms::allreduce_one_shot,
                   algorithms::allreduce_shm_direct_supports, /*reads_send=*/true},
    AlgorithmEntry{OpKind::kAllreduce, "two_shot", algorithms::allreduce_two_shot,
                   algorithms::allreduce_shm_direct_supports, /*reads_send=*/true},
    AlgorithmEntry{OpKind::kAllreduce, "single_copy", algorithms::allreduce_single_copy,
                   algorithms::allreduce_single_copy_supports, /*reads_send=*/true},
    AlgorithmEntry{OpKind::kAllreduce, "hierarchical", algorithms::allreduce_hierarchical,
                   algorithms::allreduce_hierarchical_supports},
    AlgorithmEntry{OpKind::kAllreduce, "host_striped", algorithms::allreduce_host_striped,
                   algorithms::allreduce_host_striped_supports},
    AlgorithmEntry{OpKind::kAllgather, "ring", algorithms::allgather_ring},
    AlgorithmEntry{OpKind::kAllgather, "recursive_doubling", algorithms::allgather_recursive_doubling,
                   algorithms::allgather_recursive_doubling_supports},
    AlgorithmEntry{OpKind::kAllgather, "bruck", algorithms::allgather_bruck},
    AlgorithmEntry{OpKind::kAllgather, "shm_direct", algorithms::allgather_shm_direct,
                   algorithms::allgather_shm_direct_supports},
    AlgorithmEntry{OpKind::kReduceScatter, "ring", algorithms::reduce_scatter_ring},
    AlgorithmEntry{OpKind::kReduceScatter, "recursive_halving", algorithms::reduce_scatter_recursive_halving,
                   algorithms::reduce_scatter_recursive_halving_supports},
    AlgorithmEntry{OpKind::kReduceScatter, "shm_direct", algorithms::reduce_scatter_shm_direct,
                   algorithms::reduce_scatter_shm_direct_supports},
    AlgorithmEntry{OpKind::kBroadcast, "binomial", algorithms::broadcast_binomial},
    AlgorithmEntry{OpKind::kBroadcast, "chain", algorithms::broadcast_chain},
    AlgorithmEntry{OpKind::kBroadcast, "shm_direct", algorithms::broadcast_shm_direct,
                   algorithms::broadcast_shm_direct_supports},
    AlgorithmEntry{OpKind::kReduce, "binomial", algorithms::reduce_binomial},
    AlgorithmEntry{OpKind::kGather, "linear", algorithms::gather_linear},
    AlgorithmEntry{OpKind::kGather, "binomial", algorithms::gather_binomial},
    AlgorithmEntry{OpKind::kScatter, "linear", algorithms::scatter_linear},
    AlgorithmEntry{OpKind::kScatter, "binomial", algorithms::scatter_binomial},
    AlgorithmEntry{OpKind::kAlltoall, "pairwise", algorithms::alltoall_pairwise},
    AlgorithmEntry{OpKind::kAlltoall, "scattered", algorithms::alltoall_scattered},
    AlgorithmEntry{OpKind::kAlltoall, "shm_direct", algorithms::alltoall_shm_direct,
                   algorithms::alltoall_shm_direct_supports},
    AlgorithmEntry{OpKind::kAlltoallv, "pairwise", algorithms::alltoallv_pairwise},
    AlgorithmEntry{OpKind::kAlltoallv, "shm_direct", algorithms::alltoallv_shm_direct,
                   algorithms::alltoallv_shm_direct_supports},
    AlgorithmEntry{OpKind::kAlltoallv, "hierarchical", algorithms::alltoallv_hierarchical,
                   algorithms::alltoallv_hierarchical_supports},
};

// Ids must fit the envelope's byte, with 0 left for "no algorithm".
static_assert(kAlgorithms.size() < 255, "algorithm ids are one byte on the wire");

// algorithms_for() hands out runs of this table, so an operation's entries must not be split.
constexpr bool grouped_by_op() {
  for (std::size_t i = 1; i < kAlgorithms.size(); ++i) {
    for (std::size_t j = i + 1; j < kAlgorithms.size(); ++j) {
      if (kAlgorithms[j].op == kAlgorithms[i - 1].op && kAlgorithms[i].op != kAlgorithms[i - 1].op) return false;
    }
  }
  return true;
}
static_assert(grouped_by_op(), "keep each operation's algorithms together in kAlgorithms");

// The entries' addresses, in table order: what algorithms_for() returns runs of.
constexpr auto kEntries = [] {
  std::array<const AlgorithmEntry*, kAlgorithms.size()> entries{};
  for (std::size_t i = 0; i < kAlgorithms.size(); ++i) entries[i] = &kAlgorithms[i];
  return entries;
}();

}  // namespace

const AlgorithmEntry* find_algorithm(OpKind op, std::string_view name) {
  for (const auto& entry : kAlgorithms) {
    if (entry.op == op && entry.name == name) return &entry;
  }
  return nullptr;
}

std::uint8_t algorithm_id(const AlgorithmEntry& entry) {
  // Every call asks (run_collective): an entry of the table is found by its address, without
  // comparing names; only a copy (a test's stand-in) takes the search.
  if (&entry >= kAlgorithms.data() && &entry < kAlgorithms.data() + kAlgorithms.size()) {
    return static_cast<std::uint8_t>(&entry - kAlgorithms.data() + 1);
  }
  for (std::size_t i = 0; i < kAlgorithms.size(); ++i) {
    if (kAlgorithms[i].op == entry.op && kAlgorithms[i].name == entry.name) return static_cast<std::uint8_t>(i + 1);
  }
  return kNoAlgorithm;
}

const AlgorithmEntry* algorithm_by_id(std::uint8_t id) {
  return id == kNoAlgorithm || id > kAlgorithms.size() ? nullptr : &kAlgorithms[id - 1];
}

std::span<const AlgorithmEntry* const> algorithms_for(OpKind op) {
  std::size_t first = 0;
  while (first < kAlgorithms.size() && kAlgorithms[first].op != op) ++first;
  std::size_t end = first;
  while (end < kAlgorithms.size() && kAlgorithms[end].op == op) ++end;
  return std::span<const AlgorithmEntry* const>(kEntries).subspan(first, end - first);
}

}  // namespace braid
