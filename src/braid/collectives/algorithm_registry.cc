#include "braid/collectives/algorithm_registry.h"

#include <array>
#include <string>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/tuner.h"

namespace braid {

namespace {

// The first entry of each operation is its default.
constexpr std::array kAlgorithms{
    AlgorithmEntry{OpKind::kAllreduce, "ring", algorithms::allreduce_ring},
    AlgorithmEntry{OpKind::kAllreduce, "recursive_doubling", algorithms::allreduce_recursive_doubling},
    AlgorithmEntry{OpKind::kAllreduce, "rabenseifner", algorithms::allreduce_rabenseifner,
                   algorithms::allreduce_rabenseifner_supports},
    AlgorithmEntry{OpKind::kAllreduce, "tree", algorithms::allreduce_tree},
    AlgorithmEntry{OpKind::kAllreduce, "shm_direct", algorithms::allreduce_shm_direct,
                   algorithms::allreduce_shm_direct_supports, /*reads_send=*/true},
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
    AlgorithmEntry{OpKind::kAlltoall, "shm_direct", algorithms::alltoall_shm_direct,
                   algorithms::alltoall_shm_direct_supports},
};

}  // namespace

const AlgorithmEntry* find_algorithm(OpKind op, std::string_view name) {
  for (const auto& entry : kAlgorithms) {
    if (entry.op == op && entry.name == name) return &entry;
  }
  return nullptr;
}

// Ids must fit the envelope's byte, with 0 left for "no algorithm".
static_assert(kAlgorithms.size() < 255, "algorithm ids are one byte on the wire");

std::uint8_t algorithm_id(const AlgorithmEntry& entry) {
  for (std::size_t i = 0; i < kAlgorithms.size(); ++i) {
    if (kAlgorithms[i].op == entry.op && kAlgorithms[i].name == entry.name) return static_cast<std::uint8_t>(i + 1);
  }
  return kNoAlgorithm;
}

std::vector<const AlgorithmEntry*> algorithms_for(OpKind op) {
  std::vector<const AlgorithmEntry*> found;
  for (const auto& entry : kAlgorithms) {
    if (entry.op == op) found.push_back(&entry);
  }
  return found;
}

const AlgorithmEntry& choose_algorithm(const CollectiveArgs& args, std::string_view requested) {
  // Runs on every collective call: the candidates live on the stack, not in a vector.
  std::array<const AlgorithmEntry*, kAlgorithms.size()> found{};
  std::size_t count = 0;
  for (const auto& entry : kAlgorithms) {
    if (entry.op == args.op) found[count++] = &entry;
  }
  const std::span<const AlgorithmEntry* const> candidates(found.data(), count);
  // An explicit request needs neither the environment nor the tuning file.
  SelectionSources sources = requested.empty() ? selection_sources(args.comm, args.op) : SelectionSources{};
  return select_algorithm(args, candidates, requested, sources);
}

}  // namespace braid
