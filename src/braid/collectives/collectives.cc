// The public entry points: check the arguments once, number the collective, pick the
// algorithm, run it. Checks that need every rank's view (equal counts, dtypes, roots) happen
// on the wire: each message's envelope carries them and the receiver compares.
#include "braid/collectives/collectives.h"

#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/algorithm_registry.h"
#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/collective_checks.h"
#include "braid/collectives/collective_observer.h"

namespace braid {

namespace {

using collective_checks::check_common;
using collective_checks::check_reduce_op;
using collective_checks::check_root;
using collective_checks::check_total;

CollectiveArgs make_args(Communicator& comm, OpKind op, const void* send, void* recv, std::int64_t count, DType dtype) {
  return {.comm = comm, .op = op, .seq = comm.begin_collective(), .send = static_cast<const std::byte*>(send),
          .recv = static_cast<std::byte*>(recv), .count = count, .dtype = dtype};
}

// The chosen algorithm on `args`, reported to the communicator's observer (if any).
void run_chosen(const AlgorithmEntry& algorithm, const CollectiveArgs& args) {
  run_observed(args, algorithm.name, args.bytes(args.count), [&] { algorithm.run(args); });
}

}  // namespace

void allreduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op,
               const CollectiveOptions& options) {
  check_common(comm, OpKind::kAllreduce, send, recv, count, dtype);
  check_reduce_op(comm, OpKind::kAllreduce, op);
  CollectiveArgs args{.comm = comm, .op = OpKind::kAllreduce, .seq = comm.begin_collective(),
                      .send = static_cast<const std::byte*>(send), .recv = static_cast<std::byte*>(recv),
                      .count = count, .dtype = dtype, .reduce_op = op};
  const AlgorithmEntry& algorithm = choose_algorithm(args, options.algorithm);
  args.algorithm = algorithm_id(algorithm);
  const bool copies_itself = algorithm.reads_send && comm.size() > 1;
  if (send != recv && count > 0 && !copies_itself) std::memcpy(recv, send, args.bytes(count));
  if (comm.size() > 1 && count > 0) run_chosen(algorithm, args);
  if (op == ReduceOp::kAvg && count > 0) divide_by(recv, static_cast<std::size_t>(count), dtype, comm.size());
}

void allgather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype,
               const CollectiveOptions& options) {
  check_common(comm, OpKind::kAllgather, send, recv, send_count, dtype);
  check_total(comm, OpKind::kAllgather, send_count, dtype);
  CollectiveArgs args = make_args(comm, OpKind::kAllgather, send, recv, send_count, dtype);
  const AlgorithmEntry& algorithm = choose_algorithm(args, options.algorithm);
  args.algorithm = algorithm_id(algorithm);
  if (send_count == 0) return;
  // Every algorithm starts from this rank's block in place (MPI_IN_PLACE when already there).
  std::byte* own = args.recv + static_cast<std::size_t>(comm.rank()) * args.bytes(send_count);
  if (args.send != own) std::memcpy(own, send, args.bytes(send_count));
  if (comm.size() > 1) run_chosen(algorithm, args);
}

void reduce_scatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                    const CollectiveOptions& options) {
  check_common(comm, OpKind::kReduceScatter, send, recv, recv_count, dtype);
  check_reduce_op(comm, OpKind::kReduceScatter, op);
  check_total(comm, OpKind::kReduceScatter, recv_count, dtype);
  CollectiveArgs args = make_args(comm, OpKind::kReduceScatter, send, recv, recv_count, dtype);
  args.reduce_op = op;
  const AlgorithmEntry& algorithm = choose_algorithm(args, options.algorithm);
  args.algorithm = algorithm_id(algorithm);
  if (recv_count == 0) return;
  if (comm.size() > 1) {
    run_chosen(algorithm, args);
  } else if (send != recv) {
    std::memcpy(recv, send, args.bytes(recv_count));
  }
  if (op == ReduceOp::kAvg) divide_by(recv, static_cast<std::size_t>(recv_count), dtype, comm.size());
}

void broadcast(Communicator& comm, void* data, std::int64_t count, DType dtype, int root,
               const CollectiveOptions& options) {
  check_common(comm, OpKind::kBroadcast, data, data, count, dtype);
  check_root(comm, OpKind::kBroadcast, root);
  CollectiveArgs args = make_args(comm, OpKind::kBroadcast, data, data, count, dtype);
  args.root = root;
  const AlgorithmEntry& algorithm = choose_algorithm(args, options.algorithm);
  args.algorithm = algorithm_id(algorithm);
  if (comm.size() > 1 && count > 0) run_chosen(algorithm, args);
}

void reduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op, int root,
            const CollectiveOptions& options) {
  check_root(comm, OpKind::kReduce, root);
  check_common(comm, OpKind::kReduce, send, comm.rank() == root ? recv : send, count, dtype);
  check_reduce_op(comm, OpKind::kReduce, op);
  CollectiveArgs args = make_args(comm, OpKind::kReduce, send, recv, count, dtype);
  args.reduce_op = op;
  args.root = root;
  const AlgorithmEntry& algorithm = choose_algorithm(args, options.algorithm);
  args.algorithm = algorithm_id(algorithm);
  if (count == 0) return;
  if (comm.size() > 1) {
    run_chosen(algorithm, args);
  } else if (send != recv) {
    std::memcpy(recv, send, args.bytes(count));
  }
  if (op == ReduceOp::kAvg && comm.rank() == root) divide_by(recv, static_cast<std::size_t>(count), dtype, comm.size());
}

void gather(Communicator& comm, const void* send, void* recv, std::int64_t send_count, DType dtype, int root,
            const CollectiveOptions& options) {
  check_root(comm, OpKind::kGather, root);
  check_common(comm, OpKind::kGather, send, comm.rank() == root ? recv : send, send_count, dtype);
  check_total(comm, OpKind::kGather, send_count, dtype);
  CollectiveArgs args = make_args(comm, OpKind::kGather, send, recv, send_count, dtype);
  args.root = root;
  const AlgorithmEntry& algorithm = choose_algorithm(args, options.algorithm);
  args.algorithm = algorithm_id(algorithm);
  if (send_count == 0) return;
  if (comm.rank() == root) {
    std::byte* own = args.recv + static_cast<std::size_t>(root) * args.bytes(send_count);
    if (args.send != own) std::memcpy(own, send, args.bytes(send_count));
  }
  if (comm.size() > 1) run_chosen(algorithm, args);
}

void scatter(Communicator& comm, const void* send, void* recv, std::int64_t recv_count, DType dtype, int root,
             const CollectiveOptions& options) {
  check_root(comm, OpKind::kScatter, root);
  check_common(comm, OpKind::kScatter, comm.rank() == root ? send : recv, recv, recv_count, dtype);
  check_total(comm, OpKind::kScatter, recv_count, dtype);
  CollectiveArgs args = make_args(comm, OpKind::kScatter, send, recv, recv_count, dtype);
  args.root = root;
  const AlgorithmEntry& algorithm = choose_algorithm(args, options.algorithm);
  args.algorithm = algorithm_id(algorithm);
  if (recv_count == 0) return;
  if (comm.rank() == root) {
    const std::byte* own = args.send + static_cast<std::size_t>(root) * args.bytes(recv_count);
    if (own != args.recv) std::memcpy(recv, own, args.bytes(recv_count));
  }
  if (comm.size() > 1) run_chosen(algorithm, args);
}

void alltoall(Communicator& comm, const void* send, void* recv, std::int64_t count_per_peer, DType dtype,
              const CollectiveOptions& options) {
  check_common(comm, OpKind::kAlltoall, send, recv, count_per_peer, dtype);
  check_total(comm, OpKind::kAlltoall, count_per_peer, dtype);
  CollectiveArgs args = make_args(comm, OpKind::kAlltoall, send, recv, count_per_peer, dtype);
  const AlgorithmEntry& algorithm = choose_algorithm(args, options.algorithm);
  args.algorithm = algorithm_id(algorithm);
  if (count_per_peer == 0) return;
  if (send == recv) {  // in place: every block is read after others have landed, so stage it
    std::byte* staged = comm.scratch(args.bytes(count_per_peer * comm.size()));
    std::memcpy(staged, send, args.bytes(count_per_peer * comm.size()));
    args.send = staged;
  }
  run_chosen(algorithm, args);
}

void alltoallv(Communicator& comm, const void* send, const std::int64_t* send_counts, const std::int64_t* send_displs,
               void* recv, const std::int64_t* recv_counts, const std::int64_t* recv_displs, DType dtype,
               const CollectiveOptions& options) {
  const AlltoallvLayout layout{send_counts, send_displs, recv_counts, recv_displs};
  check_alltoallv_layout(comm, send, recv, layout, dtype);
  CollectiveArgs args = make_args(comm, OpKind::kAlltoallv, send, recv, 0, dtype);
  if (!options.algorithm.empty() && options.algorithm != "pairwise") {
    throw InvalidArgument({.rank = comm.rank(), .op = "alltoallv", .seq = args.seq},
                          fmt::format("unknown algorithm '{}' (available: pairwise)", options.algorithm));
  }
  std::uint64_t bytes = 0;
  for (int p = 0; p < comm.size(); ++p) bytes += args.bytes(send_counts[p]);
  run_observed(args, "pairwise", bytes, [&] { algorithms::alltoallv_pairwise(args, layout); });
}

}  // namespace braid
