// Each entry point checks its arguments now (checked(), collective_ops.h: the blocking
// operation's own rule, so a bad argument raises at the call, not at wait()), then queues the
// checked arguments: the background thread runs them as a blocking call runs them
// (run_collective), so results are the same bit for bit.
#include "braid/collectives/async_collectives.h"

#include <string>
#include <utility>

#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/collective_ops.h"
#include "braid/collectives/collective_queue.h"
#include "braid/collectives/fault_point.h"
#include "braid/collectives/tuner.h"
#include "braid/comm/communicator_internal.h"

namespace braid {

namespace {

// An algorithm named in the options must exist and accept these arguments (InvalidArgument
// otherwise, as the blocking call raises). The default is always usable, so it is not looked
// up here: choose_algorithm then runs on the worker only, with the collective's real seq.
void check_algorithm(const CollectiveArgs& args, const CollectiveOptions& options) {
  if (!options.algorithm.empty()) choose_algorithm(args, options.algorithm);
}

Work submit(Communicator& comm, OpKind op, std::function<void()> task) {
  detail::CollectiveAccess access(comm);
  return access.attachment<CollectiveQueue>().submit({.rank = comm.rank(), .op = std::string(op_kind_name(op))},
                                                     std::move(task));
}

Work enqueue(Communicator& comm, const CollectiveCall& call, const CollectiveOptions& options) {
  UserCallFaultPoint fault_point(comm, call.op);
  const CollectiveArgs args = checked(comm, call);
  check_algorithm(args, options);
  return submit(args.comm, args.op, [args, algorithm = options.algorithm] { run_collective(args, algorithm); });
}

}  // namespace

Work iallreduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op,
                const CollectiveOptions& options) {
  return enqueue(
      comm, {.op = OpKind::kAllreduce, .send = send, .recv = recv, .count = count, .dtype = dtype, .reduce_op = op},
      options);
}

Work iallgather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype,
                const CollectiveOptions& options) {
  return enqueue(comm, {.op = OpKind::kAllgather, .send = send, .recv = recv, .count = send_count, .dtype = dtype},
                 options);
}

Work ireduce_scatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype,
                     ReduceOp op, const CollectiveOptions& options) {
  return enqueue(
      comm,
      {.op = OpKind::kReduceScatter, .send = send, .recv = recv, .count = recv_count, .dtype = dtype, .reduce_op = op},
      options);
}

Work ibroadcast(Communicator& comm, void* data, std::int64_t count, DType dtype, int root,
                const CollectiveOptions& options) {
  return enqueue(comm,
                 {.op = OpKind::kBroadcast, .send = data, .recv = data, .count = count, .dtype = dtype, .root = root},
                 options);
}

Work ireduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op, int root,
             const CollectiveOptions& options) {
  return enqueue(comm,
               {.op = OpKind::kReduce, .send = send, .recv = recv, .count = count, .dtype = dtype, .reduce_op = op,
                .root = root},
               options);
}

Work igather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype, int root,
             const CollectiveOptions& options) {
  return enqueue(comm,
                 {.op = OpKind::kGather, .send = send, .recv = recv, .count = send_count, .dtype = dtype, .root = root},
                 options);
}

Work iscatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype, int root,
              const CollectiveOptions& options) {
  return enqueue(
      comm, {.op = OpKind::kScatter, .send = send, .recv = recv, .count = recv_count, .dtype = dtype, .root = root},
      options);
}

Work ialltoall(Communicator& comm, const void* send, void* recv, std::int64_t count_per_peer, DType dtype,
               const CollectiveOptions& options) {
  return enqueue(comm, {.op = OpKind::kAlltoall, .send = send, .recv = recv, .count = count_per_peer, .dtype = dtype},
                 options);
}

Work ialltoallv(Communicator& comm, const void* send, const std::int64_t* send_counts, const std::int64_t* send_displs,
                void* recv, const std::int64_t* recv_counts, const std::int64_t* recv_displs, DType dtype,
                const CollectiveOptions& options) {
  const AlltoallvLayout layout{send_counts, send_displs, recv_counts, recv_displs};
  CollectiveArgs args =
      checked(comm, {.op = OpKind::kAlltoallv, .send = send, .recv = recv, .dtype = dtype, .layout = &layout});
  check_algorithm(args, options);
  // The arrays are copied (4n integers, next to n messages): callers may reuse them at once.
  args.layout = nullptr;  // the caller's; the task points at its own copy
  return submit(comm, OpKind::kAlltoallv,
                [args, algorithm = options.algorithm, copy = AlltoallvLayoutCopy(layout, comm.size())] {
                  const AlltoallvLayout owned = copy.view();
                  CollectiveArgs queued = args;
                  queued.layout = &owned;
                  run_collective(queued, algorithm);
                });
}

Work ibarrier(Communicator& comm) {
  return submit(comm, OpKind::kBarrier, [&comm] { comm.barrier(); });
}

}  // namespace braid
