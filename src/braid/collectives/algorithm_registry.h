// The algorithms each collective can run, by name ("selection is data", STYLE.md): one table,
// consulted by the entry points when a caller names an algorithm and by the tuner otherwise.
// An algorithm may refuse arguments it cannot handle (supports() false), and selection then
// moves on to the next choice (tuner.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

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
// Every algorithm of `op`, the default first.
std::vector<const AlgorithmEntry*> algorithms_for(OpKind op);

// The algorithm to run: `requested` if non-empty (InvalidArgument naming the choices when it
// is unknown, or when it refuses these arguments), else the tuner's choice: BRAID_ALGO_<OP>,
// then BRAID_TUNING_FILE, then the built-in table, then the first algorithm that supports the
// arguments (the precedence is spelled out in tuner.h).
const AlgorithmEntry& choose_algorithm(const CollectiveArgs& args, std::string_view requested);

}  // namespace braid
