// Every collective algorithm, one per file named <operation>_<algorithm>.cc. Each takes the
// checked arguments of its operation (collective_args.h) and must leave bitwise-identical
// results on every rank. The registry (algorithm_registry.cc) lists them by name.
#pragma once

#include "braid/collectives/collective_args.h"

namespace braid::algorithms {

// allreduce: count = elements per rank; recv = op over ranks of send.
void allreduce_ring(const CollectiveArgs& args);

// allgather: count = elements per rank; recv holds n blocks and, on entry, this rank's block
// at block index rank (the entry point puts it there).
void allgather_ring(const CollectiveArgs& args);
void allgather_recursive_doubling(const CollectiveArgs& args);
bool allgather_recursive_doubling_supports(const CollectiveArgs& args);  // n a power of two
void allgather_bruck(const CollectiveArgs& args);

// reduce_scatter: count = elements per rank's result; send holds n blocks (read only, may
// equal recv); recv = block `rank` reduced over ranks (avg not yet divided).
void reduce_scatter_ring(const CollectiveArgs& args);
void reduce_scatter_recursive_halving(const CollectiveArgs& args);
bool reduce_scatter_recursive_halving_supports(const CollectiveArgs& args);  // n a power of two

// broadcast: count elements of recv (== send) from args.root to every rank.
void broadcast_binomial(const CollectiveArgs& args);
void broadcast_chain(const CollectiveArgs& args);

}  // namespace braid::algorithms
