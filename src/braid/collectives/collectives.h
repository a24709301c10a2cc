// Collective operations on a Communicator. The API is type-erased (a dtype tag and byte
// pointers) so each algorithm is compiled once rather than once per element type.
//
// Every rank must call the same collectives in the same order, with the same count, dtype,
// reduction op, root and algorithm (communicator.h); a disagreement raises braid::Mismatch.
// `options.algorithm` names an algorithm of the operation: the registry's table
// (algorithm_registry.cc) lists them, and docs/collectives.md their costs. Empty lets the
// tuner choose (tuner.h: BRAID_ALGO_<OP>, a tuning file, the built-in table, the default).
#pragma once

#include <cstdint>
#include <string>

#include "braid/base/dtype.h"
#include "braid/base/reduce_op.h"
#include "braid/comm/communicator.h"

namespace braid {

struct CollectiveOptions {
  std::string algorithm;  // empty: the tuner chooses (tuner.h)
};

// recv = op over all ranks of send, `count` elements each. In place: send == recv.
// avg divides once, at the end. Every rank ends with identical bytes.
void allreduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op,
               const CollectiveOptions& options = {});

// recv (send_count * size elements) = every rank's send, rank r's at offset r * send_count.
// In place (MPI_IN_PLACE style): send == recv + rank * send_count elements, already holding
// this rank's contribution.
void allgather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype,
               const CollectiveOptions& options = {});

// MPI_Reduce_scatter_block: send holds recv_count * size elements; rank r receives block r
// (recv_count elements) reduced by `op` over all ranks. avg divides once, at the end. In
// place: send == recv (the result lands at the start of the buffer).
void reduce_scatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                    const CollectiveOptions& options = {});

// `count` elements of `data` on rank `root` are copied into `data` on every rank.
// InvalidArgument if root is not in [0, size).
void broadcast(Communicator& comm, void* data, std::int64_t count, DType dtype, int root,
               const CollectiveOptions& options = {});

// MPI_Reduce: on `root`, recv (`count` elements) = op over all ranks of send; avg divides
// once, at the end. recv is not used elsewhere (may be null there). In place on the root:
// send == recv. Every rank sees the same fixed reduction order (a tree in rank order relative
// to the root).
void reduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op, int root,
            const CollectiveOptions& options = {});

// MPI_Gather: on `root`, recv (send_count * size elements) = every rank's send, rank r's at
// offset r * send_count; recv is not used elsewhere (may be null there). In place on the root
// (MPI_IN_PLACE style): send == recv + root * send_count.
void gather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype, int root,
            const CollectiveOptions& options = {});

// MPI_Scatter: block r (recv_count elements at r * recv_count) of the root's send lands in
// rank r's recv; send is not used elsewhere (may be null there). In place on the root:
// recv == send + root * recv_count (the root's block stays where it is).
void scatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype, int root,
             const CollectiveOptions& options = {});

// MPI_Alltoall: send and recv hold count_per_peer * size elements; send block p goes to rank
// p, and rank p's block lands in recv block p. In place: send == recv (the send buffer is
// staged in scratch first); partial overlap is not allowed.
void alltoall(Communicator& comm, const void* send, void* recv, std::int64_t count_per_peer, DType dtype,
              const CollectiveOptions& options = {});

// MPI_Alltoallv, counts and displacements in elements, one entry per rank: send_counts[p]
// elements at send_displs[p] go to rank p, whose block lands in recv_counts[p] elements at
// recv_displs[p]. A negative count or displacement raises InvalidArgument; a recv count that
// differs from the peer's send count raises Mismatch (the envelope carries the true count).
// Not in place.
void alltoallv(Communicator& comm, const void* send, const std::int64_t* send_counts, const std::int64_t* send_displs,
               void* recv, const std::int64_t* recv_counts, const std::int64_t* recv_displs, DType dtype,
               const CollectiveOptions& options = {});

}  // namespace braid
