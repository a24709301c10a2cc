// Ring allreduce (Patarasuk & Yuan 2009): bandwidth-optimal, 2(n-1)/n of the buffer leaves
// each rank. Composed of the reduce-scatter and allgather phases of patterns/ring.h.
#include <cstring>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/patterns/ring.h"

namespace braid {

namespace {

struct RingContext {
  Communicator& comm;
  std::byte* data;   // the result buffer, reduced in place
  std::int64_t count;
  DType dtype;
  ReduceOp op;
  std::int64_t seq;
  std::size_t elem;

  Envelope envelope(const ring::Block& b) const {
    return {.op = OpKind::kAllreduce, .seq = seq, .dtype = dtype, .bytes = static_cast<std::uint64_t>(b.count) * elem};
  }
  std::byte* at(const ring::Block& b) const { return data + b.offset * static_cast<std::int64_t>(elem); }
};

void reduce_scatter_phase(const RingContext& c, std::byte* scratch) {
  const int n = c.comm.size(), r = c.comm.rank();
  for (int step = 0; step < n - 1; ++step) {
    ring::Block out = ring::block(c.count, n, ring::reduce_scatter_send_block(r, step, n));
    ring::Block in = ring::block(c.count, n, ring::reduce_scatter_recv_block(r, step, n));
    Work received = c.comm.post_collective_recv(scratch, c.envelope(in), ring::left_of(r, n));
    Work sent = c.comm.post_collective_send(c.at(out), c.envelope(out), ring::right_of(r, n));
    received.wait();
    reduce_into(c.at(in), scratch, static_cast<std::size_t>(in.count), c.dtype, c.op);
    sent.wait();
  }
}

void allgather_phase(const RingContext& c) {
  const int n = c.comm.size(), r = c.comm.rank();
  for (int step = 0; step < n - 1; ++step) {
    ring::Block out = ring::block(c.count, n, ring::allgather_send_block(r, step, n));
    ring::Block in = ring::block(c.count, n, ring::allgather_recv_block(r, step, n));
    Work received = c.comm.post_collective_recv(c.at(in), c.envelope(in), ring::left_of(r, n));
    Work sent = c.comm.post_collective_send(c.at(out), c.envelope(out), ring::right_of(r, n));
    received.wait();
    sent.wait();
  }
}

void check_arguments(const Communicator& comm, const void* send, const void* recv, std::int64_t count, DType dtype) {
  ErrorContext ctx{.rank = comm.rank(), .op = "allreduce"};
  if (count < 0) throw InvalidArgument(ctx, fmt::format("count must be >= 0, got {}", count));
  if (count > 0 && (send == nullptr || recv == nullptr)) throw InvalidArgument(ctx, "null buffer with a non-zero count");
  if (!is_valid_dtype(static_cast<std::uint8_t>(dtype))) throw InvalidArgument(ctx, "invalid dtype");
}

}  // namespace

void allreduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op) {
  check_arguments(comm, send, recv, count, dtype);
  const std::size_t elem = dtype_size(dtype);
  const std::int64_t seq = comm.begin_collective();
  if (send != recv && count > 0) std::memcpy(recv, send, static_cast<std::size_t>(count) * elem);
  const int n = comm.size();
  if (n > 1 && count > 0) {
    RingContext c{comm, static_cast<std::byte*>(recv), count, dtype, op, seq, elem};
    std::byte* scratch = comm.scratch(static_cast<std::size_t>(ring::block(count, n, 0).count) * elem);
    reduce_scatter_phase(c, scratch);
    allgather_phase(c);
  }
  if (op == ReduceOp::kAvg && count > 0) divide_by(recv, static_cast<std::size_t>(count), dtype, n);
}

}  // namespace braid
