// Ring allreduce (Patarasuk & Yuan 2009): bandwidth-optimal, 2(n-1)/n of the buffer leaves
// each rank. The reduce-scatter and allgather phases of patterns/ring.h, in place on recv
// (the entry point has copied send into it).
#include "braid/collectives/algorithms.h"
#include "braid/collectives/patterns/ring.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

namespace {

std::byte* at(const CollectiveArgs& a, const ring::Block& b) {
  return a.recv + b.offset * static_cast<std::int64_t>(a.elem());
}

void reduce_scatter_phase(const CollectiveArgs& a, std::byte* scratch) {
  detail::CollectiveAccess access(a.comm);
  const int n = a.comm.size(), r = a.comm.rank();
  for (int step = 0; step < n - 1; ++step) {
    ring::Block out = ring::block(a.count, n, ring::reduce_scatter_send_block(r, step, n));
    ring::Block in = ring::block(a.count, n, ring::reduce_scatter_recv_block(r, step, n));
    Work received = access.post_collective_recv(scratch, a.envelope(in.count), ring::left_of(r, n));
    Work sent = access.post_collective_send(at(a, out), a.envelope(out.count), ring::right_of(r, n));
    received.wait();
    reduce_into(at(a, in), scratch, static_cast<std::size_t>(in.count), a.dtype, a.reduce_op);
    sent.wait();
  }
}

void allgather_phase(const CollectiveArgs& a) {
  detail::CollectiveAccess access(a.comm);
  const int n = a.comm.size(), r = a.comm.rank();
  for (int step = 0; step < n - 1; ++step) {
    ring::Block out = ring::block(a.count, n, ring::allgather_send_block(r, step, n));
    ring::Block in = ring::block(a.count, n, ring::allgather_recv_block(r, step, n));
    Work received = access.post_collective_recv(at(a, in), a.envelope(in.count), ring::left_of(r, n));
    Work sent = access.post_collective_send(at(a, out), a.envelope(out.count), ring::right_of(r, n));
    received.wait();
    sent.wait();
  }
}

}  // namespace

void allreduce_ring(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  std::byte* scratch = access.scratch(args.bytes(ring::block(args.count, args.comm.size(), 0).count));
  reduce_scatter_phase(args, scratch);
  allgather_phase(args);
}

}  // namespace braid::algorithms
