#include "braid/collectives/algorithm_registry.h"

#include <array>
#include <string>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/algorithms.h"

namespace braid {

namespace {

// The first entry of each operation is its default.
constexpr std::array kAlgorithms{
    AlgorithmEntry{OpKind::kAllreduce, "ring", algorithms::allreduce_ring},
    AlgorithmEntry{OpKind::kAllreduce, "recursive_doubling", algorithms::allreduce_recursive_doubling},
    AlgorithmEntry{OpKind::kAllreduce, "rabenseifner", algorithms::allreduce_rabenseifner,
                   algorithms::allreduce_rabenseifner_supports},
    AlgorithmEntry{OpKind::kAllreduce, "tree", algorithms::allreduce_tree},
    AlgorithmEntry{OpKind::kAllgather, "ring", algorithms::allgather_ring},
    AlgorithmEntry{OpKind::kAllgather, "recursive_doubling", algorithms::allgather_recursive_doubling,
                   algorithms::allgather_recursive_doubling_supports},
    AlgorithmEntry{OpKind::kAllgather, "bruck", algorithms::allgather_bruck},
    AlgorithmEntry{OpKind::kReduceScatter, "ring", algorithms::reduce_scatter_ring},
    AlgorithmEntry{OpKind::kReduceScatter, "recursive_halving", algorithms::reduce_scatter_recursive_halving,
                   algorithms::reduce_scatter_recursive_halving_supports},
    AlgorithmEntry{OpKind::kBroadcast, "binomial", algorithms::broadcast_binomial},
    AlgorithmEntry{OpKind::kBroadcast, "chain", algorithms::broadcast_chain},
    AlgorithmEntry{OpKind::kReduce, "binomial", algorithms::reduce_binomial},
    AlgorithmEntry{OpKind::kGather, "linear", algorithms::gather_linear},
    AlgorithmEntry{OpKind::kScatter, "linear", algorithms::scatter_linear},
    AlgorithmEntry{OpKind::kAlltoall, "pairwise", algorithms::alltoall_pairwise},
};

}  // namespace

const AlgorithmEntry* find_algorithm(OpKind op, std::string_view name) {
  for (const auto& entry : kAlgorithms) {
    if (entry.op == op && entry.name == name) return &entry;
  }
  return nullptr;
}

std::vector<const AlgorithmEntry*> algorithms_for(OpKind op) {
  std::vector<const AlgorithmEntry*> found;
  for (const auto& entry : kAlgorithms) {
    if (entry.op == op) found.push_back(&entry);
  }
  return found;
}

const AlgorithmEntry& choose_algorithm(const CollectiveArgs& args, std::string_view requested) {
  ErrorContext ctx{.rank = args.comm.rank(), .op = std::string(op_kind_name(args.op)), .seq = args.seq};
  std::vector<const AlgorithmEntry*> candidates = algorithms_for(args.op);
  if (candidates.empty()) throw InvalidArgument(ctx, "no algorithm implements this operation");
  if (requested.empty()) {
    for (const AlgorithmEntry* entry : candidates) {
      if (entry->supports == nullptr || entry->supports(args)) return *entry;
    }
    throw InvalidArgument(ctx, "no algorithm supports these arguments");
  }
  const AlgorithmEntry* entry = find_algorithm(args.op, requested);
  if (entry == nullptr) {
    std::string names;
    for (const AlgorithmEntry* c : candidates) names += fmt::format("{}{}", names.empty() ? "" : ", ", c->name);
    throw InvalidArgument(ctx, fmt::format("unknown algorithm '{}' (available: {})", requested, names));
  }
  if (entry->supports != nullptr && !entry->supports(args)) {
    throw InvalidArgument(ctx, fmt::format("algorithm '{}' does not support these arguments", requested));
  }
  return *entry;
}

}  // namespace braid
