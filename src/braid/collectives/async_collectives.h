// Non-blocking collectives: the operations of collectives.h (and barrier) that return at once
// with a braid::Work (work.h), while a background thread of the communicator runs them.
//
//   braid::Work grads = braid::iallreduce(comm, g, g, n, braid::DType::kF32, braid::ReduceOp::kAvg);
//   braid::Work params = braid::iallgather(comm, shard, full, m, braid::DType::kBF16);
//   compute();                 // overlaps with the communication
//   params.wait();             // any order; rethrows the op's error (Mismatch, PeerLost, ...)
//   grads.wait(braid::Seconds(1));   // Timeout if not done in 1 s; the op keeps running
//
// Contract:
//  - Same arguments and semantics as the blocking operation of the same name (collectives.h),
//    and the same ordering contract: every rank issues the same collectives, blocking and
//    non-blocking alike, in the same order.
//  - Arguments that can be checked locally (a negative count, a null buffer, a bad root, dtype,
//    reduction op or algorithm name) raise InvalidArgument at the call, and nothing is queued.
//    Everything that needs the peers (a count another rank disagrees with, a lost peer, a
//    timeout) is raised by wait() / test() of the Work, on the ranks involved.
//  - The buffers must stay alive and untouched (not read either, for the receive buffers)
//    until wait() has returned or test() returned true. alltoallv's count and displacement
//    arrays are copied at the call and may be reused at once.
//  - Ops run one at a time, in the order they were issued, on one background thread per
//    communicator (collective_queue.h); their Works may be waited for in any order.
//  - A blocking collective (allreduce, barrier, split, ...) issued while async ones are
//    pending runs after them: it first waits until the queue is empty (their errors, if any,
//    stay with their Works; a failed one has poisoned the communicator, so the blocking call
//    then fails too).
//  - Point-to-point calls (send, recv, isend, irecv) may be made while async collectives are
//    pending and run concurrently with them: they use their own channel and sequence numbers,
//    and the Fabric below is thread-safe.
//  - Moving or destroying the communicator first waits for its pending async collectives.
//
// Thread-safety: as for Communicator, one thread at a time issues calls on a communicator;
// Work handles may be waited on from any thread.
#pragma once

#include <cstdint>

#include "braid/collectives/collectives.h"
#include "braid/comm/work.h"

namespace braid {

Work iallreduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op,
                const CollectiveOptions& options = {});
Work iallgather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype,
                const CollectiveOptions& options = {});
Work ireduce_scatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype,
                     ReduceOp op, const CollectiveOptions& options = {});
Work ibroadcast(Communicator& comm, void* data, std::int64_t count, DType dtype, int root,
                const CollectiveOptions& options = {});
Work ireduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op, int root,
             const CollectiveOptions& options = {});
Work igather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype, int root,
             const CollectiveOptions& options = {});
Work iscatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype, int root,
              const CollectiveOptions& options = {});
Work ialltoall(Communicator& comm, const void* send, void* recv, std::int64_t count_per_peer, DType dtype,
               const CollectiveOptions& options = {});
Work ialltoallv(Communicator& comm, const void* send, const std::int64_t* send_counts, const std::int64_t* send_displs,
                void* recv, const std::int64_t* recv_counts, const std::int64_t* recv_displs, DType dtype,
                const CollectiveOptions& options = {});
Work ibarrier(Communicator& comm);

}  // namespace braid
