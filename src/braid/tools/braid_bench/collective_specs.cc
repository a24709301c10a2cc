// How each collective maps onto the shared sweep (collective_bench.h): sizes as nccl-tests
// counts them, busbw factors, and exact references built from small-integer inputs.
#include "collective_bench.h"
#include "reference_values.h"

namespace braid::bench {

namespace {

CollectiveSpec allreduce_spec() {
  CollectiveSpec spec;
  spec.op = OpKind::kAllreduce;
  spec.reduces = true;
  spec.busbw_factor = [](int n) { return 2.0 * (n - 1) / n; };
  spec.count_for = [](std::uint64_t bytes, int, std::size_t elem) { return static_cast<std::int64_t>(bytes / elem); };
  spec.size_of = [](std::int64_t count, int, std::size_t elem) { return static_cast<std::uint64_t>(count) * elem; };
  spec.send_elements = [](std::int64_t count, int) { return count; };
  spec.recv_elements = [](std::int64_t count, int) { return count; };
  spec.input = [](ReduceOp op, int rank, int, std::int64_t i) { return input_value(op, rank, i); };
  spec.expected = [](ReduceOp op, int, int n, std::int64_t, std::int64_t i, DType dtype) {
    return expected_value(op, n, i, dtype);
  };
  spec.run = [](const CollectiveCall& c) { allreduce(c.comm, c.send, c.recv, c.count, c.dtype, c.op, c.options); };
  return spec;
}

// nccl-tests' all_gather size: the whole gathered buffer; each rank contributes size / n.
CollectiveSpec allgather_spec() {
  CollectiveSpec spec;
  spec.op = OpKind::kAllgather;
  spec.busbw_factor = [](int n) { return static_cast<double>(n - 1) / n; };
  spec.count_for = [](std::uint64_t bytes, int n, std::size_t elem) { return static_cast<std::int64_t>(bytes / elem) / n; };
  spec.size_of = [](std::int64_t count, int n, std::size_t elem) { return static_cast<std::uint64_t>(count * n) * elem; };
  spec.send_elements = [](std::int64_t count, int) { return count; };
  spec.recv_elements = [](std::int64_t count, int n) { return count * n; };
  spec.input = [](ReduceOp, int rank, int, std::int64_t i) { return input_value(ReduceOp::kSum, rank, i); };
  spec.expected = [](ReduceOp, int, int, std::int64_t count, std::int64_t i, DType) {
    return input_value(ReduceOp::kSum, static_cast<int>(i / count), i % count);
  };
  spec.run = [](const CollectiveCall& c) { allgather(c.comm, c.send, c.recv, c.count, c.dtype, c.options); };
  return spec;
}

// nccl-tests' reduce_scatter size: each rank's input; each rank receives size / n.
CollectiveSpec reduce_scatter_spec() {
  CollectiveSpec spec;
  spec.op = OpKind::kReduceScatter;
  spec.reduces = true;
  spec.busbw_factor = [](int n) { return static_cast<double>(n - 1) / n; };
  spec.count_for = [](std::uint64_t bytes, int n, std::size_t elem) { return static_cast<std::int64_t>(bytes / elem) / n; };
  spec.size_of = [](std::int64_t count, int n, std::size_t elem) { return static_cast<std::uint64_t>(count * n) * elem; };
  spec.send_elements = [](std::int64_t count, int n) { return count * n; };
  spec.recv_elements = [](std::int64_t count, int) { return count; };
  spec.input = [](ReduceOp op, int rank, int, std::int64_t i) { return input_value(op, rank, i); };
  spec.expected = [](ReduceOp op, int rank, int n, std::int64_t count, std::int64_t i, DType dtype) {
    return expected_value(op, n, rank * count + i, dtype);
  };
  spec.run = [](const CollectiveCall& c) { reduce_scatter(c.comm, c.send, c.recv, c.count, c.dtype, c.op, c.options); };
  return spec;
}

// Broadcast from rank 0: the root sends its (never modified) input buffer, the others
// receive into theirs.
CollectiveSpec broadcast_spec() {
  CollectiveSpec spec;
  spec.op = OpKind::kBroadcast;
  spec.busbw_factor = [](int) { return 1.0; };
  spec.count_for = [](std::uint64_t bytes, int, std::size_t elem) { return static_cast<std::int64_t>(bytes / elem); };
  spec.size_of = [](std::int64_t count, int, std::size_t elem) { return static_cast<std::uint64_t>(count) * elem; };
  spec.send_elements = [](std::int64_t count, int) { return count; };
  spec.recv_elements = [](std::int64_t count, int) { return count; };
  spec.input = [](ReduceOp, int rank, int, std::int64_t i) { return input_value(ReduceOp::kSum, rank, i); };
  spec.expected = [](ReduceOp, int, int, std::int64_t, std::int64_t i, DType) { return input_value(ReduceOp::kSum, 0, i); };
  spec.result = [](const CollectiveCall& c) { return c.comm.rank() == 0 ? c.send : static_cast<const void*>(c.recv); };
  spec.run = [](const CollectiveCall& c) {
    void* data = c.comm.rank() == 0 ? const_cast<void*>(c.send) : c.recv;
    broadcast(c.comm, data, c.count, c.dtype, 0, c.options);
  };
  return spec;
}

// nccl-tests' alltoall size: the whole send buffer of a rank (= its receive buffer); each peer
// gets size / n. Rank p's element i is input(p, i), so element j of the block rank r receives
// from peer p is input(p, r * count + j): derived from (p, r, j) alone.
CollectiveSpec alltoall_spec() {
  CollectiveSpec spec;
  spec.op = OpKind::kAlltoall;
  spec.busbw_factor = [](int n) { return static_cast<double>(n - 1) / n; };
  spec.count_for = [](std::uint64_t bytes, int n, std::size_t elem) { return static_cast<std::int64_t>(bytes / elem) / n; };
  spec.size_of = [](std::int64_t count, int n, std::size_t elem) { return static_cast<std::uint64_t>(count * n) * elem; };
  spec.send_elements = [](std::int64_t count, int n) { return count * n; };
  spec.recv_elements = [](std::int64_t count, int n) { return count * n; };
  spec.input = [](ReduceOp, int rank, int, std::int64_t i) { return input_value(ReduceOp::kSum, rank, i); };
  spec.expected = [](ReduceOp, int rank, int, std::int64_t count, std::int64_t i, DType) {
    return input_value(ReduceOp::kSum, static_cast<int>(i / count), rank * count + i % count);
  };
  spec.run = [](const CollectiveCall& c) { alltoall(c.comm, c.send, c.recv, c.count, c.dtype, c.options); };
  return spec;
}

// Reduce to rank 0 (busbw factor 1, as nccl-tests). Ranks other than the root receive
// nothing: there the check is that their input was left untouched.
CollectiveSpec reduce_spec() {
  CollectiveSpec spec = allreduce_spec();
  spec.op = OpKind::kReduce;
  spec.busbw_factor = [](int) { return 1.0; };
  spec.result = [](const CollectiveCall& c) { return c.comm.rank() == 0 ? static_cast<const void*>(c.recv) : c.send; };
  spec.expected = [](ReduceOp op, int rank, int n, std::int64_t, std::int64_t i, DType dtype) {
    return rank == 0 ? expected_value(op, n, i, dtype) : input_value(op, rank, i);
  };
  spec.run = [](const CollectiveCall& c) { reduce(c.comm, c.send, c.recv, c.count, c.dtype, c.op, 0, c.options); };
  return spec;
}

// Gather to rank 0; size = the whole gathered buffer, as allgather. Other ranks: their input
// is checked to be untouched.
CollectiveSpec gather_spec() {
  CollectiveSpec spec = allgather_spec();
  spec.op = OpKind::kGather;
  spec.result = [](const CollectiveCall& c) { return c.comm.rank() == 0 ? static_cast<const void*>(c.recv) : c.send; };
  spec.result_elements = [](std::int64_t count, int n, int rank) { return rank == 0 ? count * n : count; };
  spec.expected = [](ReduceOp, int rank, int, std::int64_t count, std::int64_t i, DType) {
    return rank == 0 ? input_value(ReduceOp::kSum, static_cast<int>(i / count), i % count)
                     : input_value(ReduceOp::kSum, rank, i);
  };
  spec.run = [](const CollectiveCall& c) { gather(c.comm, c.send, c.recv, c.count, c.dtype, 0, c.options); };
  return spec;
}

// Scatter from rank 0; size = the root's whole send buffer; rank r receives block r of it.
CollectiveSpec scatter_spec() {
  CollectiveSpec spec;
  spec.op = OpKind::kScatter;
  spec.busbw_factor = [](int n) { return static_cast<double>(n - 1) / n; };
  spec.count_for = [](std::uint64_t bytes, int n, std::size_t elem) { return static_cast<std::int64_t>(bytes / elem) / n; };
  spec.size_of = [](std::int64_t count, int n, std::size_t elem) { return static_cast<std::uint64_t>(count * n) * elem; };
  spec.send_elements = [](std::int64_t count, int n) { return count * n; };
  spec.recv_elements = [](std::int64_t count, int) { return count; };
  spec.input = [](ReduceOp, int rank, int, std::int64_t i) { return input_value(ReduceOp::kSum, rank, i); };
  spec.expected = [](ReduceOp, int rank, int, std::int64_t count, std::int64_t i, DType) {
    return input_value(ReduceOp::kSum, 0, rank * count + i);
  };
  spec.run = [](const CollectiveCall& c) { scatter(c.comm, c.send, c.recv, c.count, c.dtype, 0, c.options); };
  return spec;
}

}  // namespace

std::vector<CollectiveSpec> collective_specs() {
  return {allreduce_spec(), allgather_spec(), reduce_scatter_spec(), broadcast_spec(),
          reduce_spec(),    gather_spec(),    scatter_spec(),        alltoall_spec(), alltoallv_spec()};
}

}  // namespace braid::bench
