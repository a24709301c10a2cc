// The public entry points: each names its operation's arguments (collective_ops.h checks them
// and runs the collective). Checks that need every rank's view (equal counts, dtypes, roots)
// happen on the wire: each message's envelope carries them and the receiver compares.
#include "braid/collectives/collectives.h"

#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/collective_ops.h"
#include "braid/collectives/fault_point.h"

namespace braid {

namespace {

void run(Communicator& comm, const CollectiveCall& call, const CollectiveOptions& options) {
  UserCallFaultPoint fault_point(comm, call.op);
  run_collective(checked(comm, call), options.algorithm);
}

}  // namespace

void allreduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op,
               const CollectiveOptions& options) {
  run(comm, {.op = OpKind::kAllreduce, .send = send, .recv = recv, .count = count, .dtype = dtype, .reduce_op = op},
      options);
}

void allgather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype,
               const CollectiveOptions& options) {
  run(comm, {.op = OpKind::kAllgather, .send = send, .recv = recv, .count = send_count, .dtype = dtype}, options);
}

void reduce_scatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                    const CollectiveOptions& options) {
  run(comm,
      {.op = OpKind::kReduceScatter, .send = send, .recv = recv, .count = recv_count, .dtype = dtype, .reduce_op = op},
      options);
}

void broadcast(Communicator& comm, void* data, std::int64_t count, DType dtype, int root,
               const CollectiveOptions& options) {
  run(comm, {.op = OpKind::kBroadcast, .send = data, .recv = data, .count = count, .dtype = dtype, .root = root},
      options);
}

void reduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op, int root,
            const CollectiveOptions& options) {
  run(comm,
    {.op = OpKind::kReduce, .send = send, .recv = recv, .count = count, .dtype = dtype, .reduce_op = op,
     .root = root},
    options);
}

void gather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype, int root,
            const CollectiveOptions& options) {
  run(comm, {.op = OpKind::kGather, .send = send, .recv = recv, .count = send_count, .dtype = dtype, .root = root},
      options);
}

void scatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype, int root,
             const CollectiveOptions& options) {
  run(comm, {.op = OpKind::kScatter, .send = send, .recv = recv, .count = recv_count, .dtype = dtype, .root = root},
      options);
}

void alltoall(Communicator& comm, const void* send, void* recv, std::int64_t count_per_peer, DType dtype,
              const CollectiveOptions& options) {
  run(comm, {.op = OpKind::kAlltoall, .send = send, .recv = recv, .count = count_per_peer, .dtype = dtype}, options);
}

void alltoallv(Communicator& comm, const void* send, const std::int64_t* send_counts, const std::int64_t* send_displs,
               void* recv, const std::int64_t* recv_counts, const std::int64_t* recv_displs, DType dtype,
               const CollectiveOptions& options) {
  const AlltoallvLayout layout{send_counts, send_displs, recv_counts, recv_displs};
  run(comm, {.op = OpKind::kAlltoallv, .send = send, .recv = recv, .dtype = dtype, .layout = &layout}, options);
}

}  // namespace braid
