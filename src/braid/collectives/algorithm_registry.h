// The algorithms each collective can run, by name ("selection is data", STYLE.md): one table,
// consulted by the entry points when a caller names an algorithm and by the tuner otherwise.
// An algorithm may refuse arguments it cannot handle (supports() false), and selection then
// falls back to the operation's default.
#pragma once

#include <string_view>
#include <vector>

#include "braid/collectives/collective_args.h"

namespace braid {

struct AlgorithmEntry {
  OpKind op;
  std::string_view name;
  void (*run)(const CollectiveArgs&);
  bool (*supports)(const CollectiveArgs&) = nullptr;  // null: any arguments
};

// The entry for (op, name), or nullptr.
const AlgorithmEntry* find_algorithm(OpKind op, std::string_view name);
// Every algorithm of `op`, the default first.
std::vector<const AlgorithmEntry*> algorithms_for(OpKind op);

// The algorithm to run: `requested` if non-empty (InvalidArgument naming the choices when it
// is unknown, or when it refuses these arguments), else the operation's default.
const AlgorithmEntry& choose_algorithm(const CollectiveArgs& args, std::string_view requested);

}  // namespace braid
