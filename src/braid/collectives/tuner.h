// The tuner: which algorithm of the registry (algorithm_registry.h, below it) a collective
// runs.
//
// Precedence (the first that yields a usable algorithm wins; "usable" = registered for the
// operation and supports() these arguments):
//   1. CollectiveOptions::algorithm, named by the caller: InvalidArgument when it is unknown
//      or refuses the arguments (the caller asked for exactly that);
//   2. BRAID_ALGO_<OP> (BRAID_ALGO_ALLREDUCE=ring; forcing_variable()): an unknown name raises
//      InvalidArgument naming the variable and the choices; a name that refuses these
//      arguments falls through;
//   3. the rules of the tuning file named by BRAID_TUNING_FILE (tuning_file.h), loaded once per
//      communicator;
//   4. the built-in table (builtin_tuning_table());
//   5. the first algorithm of the operation that supports the arguments (its default).
// In a table, the first matching rule whose algorithm is usable wins; a rule naming an
// algorithm this build lacks, or one that refuses the call, is skipped. Tables name only the
// tunable operations (tuning_table.h); alltoallv, whose size is not one count, has steps 1, 2
// and 5.
//
// Every rank must pick the same algorithm: the decision depends only on the call's arguments,
// the communicator's size and host count, and the environment, so BRAID_ALGO_* and
// BRAID_TUNING_FILE (its content) must be the same on every rank. braid-run passes its
// environment to every rank unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "braid/base/env.h"
#include "braid/collectives/algorithm_registry.h"
#include "braid/collectives/tuning_table.h"

namespace braid {

// The bytes a call is tuned by: what braid-bench's size column shows for the operation.
// allreduce, broadcast, reduce: count * element size (the whole message); allgather,
// reduce_scatter, alltoall, gather, scatter: the whole buffer of n blocks, count * n * element
// size (nccl-tests' convention: allgather's output, reduce_scatter's input, alltoall's buffer).
std::uint64_t selection_bytes(const CollectiveArgs& args);
// The same from its parts: the operation's count argument, element size and world size.
std::uint64_t selection_bytes(OpKind op, std::int64_t count, std::size_t elem, int world);

// (op, selection_bytes, world size, host count) of a call.
TuningKey tuning_key(const CollectiveArgs& args);

// The defaults, measured on a 2-core virtual machine with shared memory (docs/collectives.md
// lists them and why); immutable.
const TuningTable& builtin_tuning_table();

// BRAID_ALGO_<OP> for an operation with algorithms in the registry, nullptr for others.
const env::Variable* forcing_variable(OpKind op);

// Where a choice may come from, below an explicit request (steps 2-4 above). Views: the
// strings and tables belong to the communicator's SelectionConfig (or to a test).
struct SelectionSources {
  std::optional<std::string_view> forced;  // the value of forced_by, when set
  std::string_view forced_by;              // the variable's name, for error messages
  const TuningTable* file = nullptr;
  const TuningTable* builtin = nullptr;
};

// Steps 2-4 for `op` on `comm`. The environment is read, and the tuning file loaded, once per
// communicator, at its first collective that asks the tuner: selection runs on every call, and
// getenv plus a file read there would cost more than a small allreduce. Later changes to the
// environment or the file do not affect an existing communicator. InvalidArgument if
// BRAID_TUNING_FILE names a missing or malformed file (then nothing is cached, so every call
// raises it again, on every rank).
SelectionSources selection_sources(Communicator& comm, OpKind op);

// The precedence above over `candidates` (the operation's algorithms, default first): pure,
// so it is tested with stand-in algorithms. `requested` is CollectiveOptions::algorithm.
const AlgorithmEntry& select_algorithm(const CollectiveArgs& args, std::span<const AlgorithmEntry* const> candidates,
                                       std::string_view requested, const SelectionSources& sources);

// The algorithm a call of args.op runs: select_algorithm over the registry's entries for the
// operation, with the communicator's sources (none are read when `requested` is non-empty).
const AlgorithmEntry& choose_algorithm(const CollectiveArgs& args, std::string_view requested);

}  // namespace braid
