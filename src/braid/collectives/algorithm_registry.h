// The algorithms each collective can run, by name ("selection is data", STYLE.md): one table
// (algorithm_registry.cc), the only list of them. It knows nothing of how one is chosen: the
// tuner (tuner.h), above it, picks among an operation's entries, and the entry points run the
// pick. An algorithm may refuse arguments it cannot handle (supports() false), and selection
// then moves on to the next choice.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "braid/collectives/collective_args.h"

namespace braid {

struct AlgorithmEntry {
  OpKind op;
  std::string_view name;
  void (*run)(const CollectiveArgs&);
  bool (*supports)(const CollectiveArgs&) = nullptr;  // null: any arguments
  // allreduce: the algorithm reads send itself, so the entry point need not copy it into recv.
  bool reads_send = false;
};

// The entry for (op, name), or nullptr.
const AlgorithmEntry* find_algorithm(OpKind op, std::string_view name);
// The entry's id in messages (Envelope::algorithm): its position in the table plus one, the
// same on every rank of a job since all run one build. kNoAlgorithm for an unknown entry.
std::uint8_t algorithm_id(const AlgorithmEntry& entry);
// The entry whose algorithm_id is `id`, nullptr for kNoAlgorithm or an unknown id.
const AlgorithmEntry* algorithm_by_id(std::uint8_t id);
// Every algorithm of `op`, the default first (empty for an operation without algorithms). A
// view of the table: it allocates nothing, since selection asks on every collective call.
std::span<const AlgorithmEntry* const> algorithms_for(OpKind op);

}  // namespace braid
