// Each entry point makes the blocking operation's local checks now (so a bad argument raises
// at the call, not at wait()), then queues the blocking operation itself: the background
// thread runs exactly the code a blocking call runs, so results are the same bit for bit.
// The blocking operation repeats the checks; they cost nanoseconds.
#include "braid/collectives/async_collectives.h"

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/algorithm_registry.h"
#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/collective_checks.h"
#include "braid/collectives/collective_queue.h"

namespace braid {

namespace {

using collective_checks::check_common;
using collective_checks::check_reduce_op;
using collective_checks::check_root;
using collective_checks::check_total;

// An algorithm named in the options must exist and accept these arguments (InvalidArgument
// otherwise, as the blocking call raises). The default is always usable, so it is not looked
// up here: choose_algorithm then runs on the worker only, with the collective's real seq.
void check_algorithm(const CollectiveArgs& args, const CollectiveOptions& options) {
  if (!options.algorithm.empty()) choose_algorithm(args, options.algorithm);
}

CollectiveArgs probe(Communicator& comm, OpKind op, const void* send, void* recv, std::int64_t count, DType dtype) {
  return {.comm = comm, .op = op, .seq = -1, .send = static_cast<const std::byte*>(send),
          .recv = static_cast<std::byte*>(recv), .count = count, .dtype = dtype};
}

Work enqueue(Communicator& comm, OpKind op, std::function<void()> task) {
  return comm.attachment<CollectiveQueue>().submit({.rank = comm.rank(), .op = std::string(op_kind_name(op))},
                                                   std::move(task));
}

}  // namespace

Work iallreduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op,
                const CollectiveOptions& options) {
  check_common(comm, OpKind::kAllreduce, send, recv, count, dtype);
  check_reduce_op(comm, OpKind::kAllreduce, op);
  CollectiveArgs args = probe(comm, OpKind::kAllreduce, send, recv, count, dtype);
  args.reduce_op = op;
  check_algorithm(args, options);
  return enqueue(comm, OpKind::kAllreduce,
                 [&comm, send, recv, count, dtype, op, options] { allreduce(comm, send, recv, count, dtype, op, options); });
}

Work iallgather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype,
                const CollectiveOptions& options) {
  check_common(comm, OpKind::kAllgather, send, recv, send_count, dtype);
  check_total(comm, OpKind::kAllgather, send_count, dtype);
  check_algorithm(probe(comm, OpKind::kAllgather, send, recv, send_count, dtype), options);
  return enqueue(comm, OpKind::kAllgather,
                 [&comm, send, recv, send_count, dtype, options] { allgather(comm, send, recv, send_count, dtype, options); });
}

Work ireduce_scatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype,
                     ReduceOp op, const CollectiveOptions& options) {
  check_common(comm, OpKind::kReduceScatter, send, recv, recv_count, dtype);
  check_reduce_op(comm, OpKind::kReduceScatter, op);
  check_total(comm, OpKind::kReduceScatter, recv_count, dtype);
  CollectiveArgs args = probe(comm, OpKind::kReduceScatter, send, recv, recv_count, dtype);
  args.reduce_op = op;
  check_algorithm(args, options);
  return enqueue(comm, OpKind::kReduceScatter, [&comm, send, recv, recv_count, dtype, op, options] {
    reduce_scatter(comm, send, recv, recv_count, dtype, op, options);
  });
}

Work ibroadcast(Communicator& comm, void* data, std::int64_t count, DType dtype, int root,
                const CollectiveOptions& options) {
  check_common(comm, OpKind::kBroadcast, data, data, count, dtype);
  check_root(comm, OpKind::kBroadcast, root);
  CollectiveArgs args = probe(comm, OpKind::kBroadcast, data, data, count, dtype);
  args.root = root;
  check_algorithm(args, options);
  return enqueue(comm, OpKind::kBroadcast,
                 [&comm, data, count, dtype, root, options] { broadcast(comm, data, count, dtype, root, options); });
}

Work ireduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op, int root,
             const CollectiveOptions& options) {
  check_root(comm, OpKind::kReduce, root);
  check_common(comm, OpKind::kReduce, send, comm.rank() == root ? recv : send, count, dtype);
  check_reduce_op(comm, OpKind::kReduce, op);
  CollectiveArgs args = probe(comm, OpKind::kReduce, send, recv, count, dtype);
  args.reduce_op = op;
  args.root = root;
  check_algorithm(args, options);
  return enqueue(comm, OpKind::kReduce, [&comm, send, recv, count, dtype, op, root, options] {
    reduce(comm, send, recv, count, dtype, op, root, options);
  });
}

Work igather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype, int root,
             const CollectiveOptions& options) {
  check_root(comm, OpKind::kGather, root);
  check_common(comm, OpKind::kGather, send, comm.rank() == root ? recv : send, send_count, dtype);
  check_total(comm, OpKind::kGather, send_count, dtype);
  CollectiveArgs args = probe(comm, OpKind::kGather, send, recv, send_count, dtype);
  args.root = root;
  check_algorithm(args, options);
  return enqueue(comm, OpKind::kGather, [&comm, send, recv, send_count, dtype, root, options] {
    gather(comm, send, recv, send_count, dtype, root, options);
  });
}

Work iscatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype, int root,
              const CollectiveOptions& options) {
  check_root(comm, OpKind::kScatter, root);
  check_common(comm, OpKind::kScatter, comm.rank() == root ? send : recv, recv, recv_count, dtype);
  check_total(comm, OpKind::kScatter, recv_count, dtype);
  CollectiveArgs args = probe(comm, OpKind::kScatter, send, recv, recv_count, dtype);
  args.root = root;
  check_algorithm(args, options);
  return enqueue(comm, OpKind::kScatter, [&comm, send, recv, recv_count, dtype, root, options] {
    scatter(comm, send, recv, recv_count, dtype, root, options);
  });
}

Work ialltoall(Communicator& comm, const void* send, void* recv, std::int64_t count_per_peer, DType dtype,
               const CollectiveOptions& options) {
  check_common(comm, OpKind::kAlltoall, send, recv, count_per_peer, dtype);
  check_total(comm, OpKind::kAlltoall, count_per_peer, dtype);
  check_algorithm(probe(comm, OpKind::kAlltoall, send, recv, count_per_peer, dtype), options);
  return enqueue(comm, OpKind::kAlltoall, [&comm, send, recv, count_per_peer, dtype, options] {
    alltoall(comm, send, recv, count_per_peer, dtype, options);
  });
}

Work ialltoallv(Communicator& comm, const void* send, const std::int64_t* send_counts, const std::int64_t* send_displs,
                void* recv, const std::int64_t* recv_counts, const std::int64_t* recv_displs, DType dtype,
                const CollectiveOptions& options) {
  try {
    check_alltoallv_layout(comm, send, recv, {send_counts, send_displs, recv_counts, recv_displs}, dtype);
  } catch (const Mismatch&) {
    // This rank disagrees with itself (own send and receive counts): a disagreement, not a bad
    // argument, so the queued call raises it at wait(), after the ops issued before it.
  }
  if (!options.algorithm.empty() && options.algorithm != "pairwise") {
    throw InvalidArgument({.rank = comm.rank(), .op = "alltoallv"},
                          fmt::format("unknown algorithm '{}' (available: pairwise)", options.algorithm));
  }
  // The arrays are copied (4n integers, next to n messages): callers may reuse them at once.
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> layout;
  for (const std::int64_t* side : {send_counts, send_displs, recv_counts, recv_displs}) {
    layout.insert(layout.end(), side, side + n);
  }
  return enqueue(comm, OpKind::kAlltoallv, [&comm, send, recv, dtype, options, n, layout = std::move(layout)] {
    alltoallv(comm, send, layout.data(), layout.data() + n, recv, layout.data() + 2 * n, layout.data() + 3 * n, dtype,
              options);
  });
}

Work ibarrier(Communicator& comm) {
  return enqueue(comm, OpKind::kBarrier, [&comm] { comm.barrier(); });
}

}  // namespace braid
