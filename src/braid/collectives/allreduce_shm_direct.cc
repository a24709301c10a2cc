// Shared-memory direct allreduce, for communicators whose ranks all share one host. Shared
// memory is used as memory, not as a pipe (DESIGN.md): the buffer goes through the workspace
// (shm_workspace.h) in rounds of n slices. In each round every rank
//
//   1. copies the slices its peers will reduce into its own staging area (one copy in),
//   2. waits until every peer has staged, then reduces its own slice reading every rank's
//      staged copy directly, in rank order, into its result slot (and its output),
//   3. waits until every peer has reduced, then copies the peers' results out (one copy out).
//
// When every rank's send and recv lie in registered memory (alloc_registered) nothing is
// staged: allreduce_registered.cc reads the peers' buffers in place. (allreduce single_copy,
// allreduce_single_copy.cc, reads unregistered buffers out of the peers' processes instead,
// and falls back to the staged rounds here where the kernel does not allow it.)
//
// Messages up to ShmWorkspace::kSmallBytes take allreduce one_shot's path instead
// (allreduce_one_shot.cc): every rank posts its whole input and reduces all posted inputs
// itself, in rank order, so every rank computes the same bytes. One synchronisation per call.
//
// Every slice is reduced by exactly one rank and copied by the others, so all ranks hold
// identical bytes. Per rank, the buffer is read once and written once in user memory; the
// staging and result traffic stays in the caches because a round is small (a slice per
// rank). Ring allreduce over shm pipes moves each byte through a ring and back out again and
// synchronises n-1 times per phase. Reads `send` directly (no copy into recv first), in place
// or not: a rank's own slice is read before its result is written, and its peers' slices are
// staged before their results land.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/streaming_copy.h"

#include "braid/collectives/algorithms.h"
#include "braid/collectives/patterns/ring.h"
#include "braid/collectives/shm_direct_steps.h"
#include "braid/collectives/shm_workspace.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

namespace {

class DirectAllreduce {
 public:
  DirectAllreduce(const CollectiveArgs& a, ShmWorkspace& ws)
      : a_(a), ws_(ws), n_(a.comm.size()), r_(a.comm.rank()), elem_(a.elem()),
        round_elems_(static_cast<std::int64_t>(ws.slice_bytes() / elem_) * n_),
        write_out_(copy_for_output(a.bytes(a.count), n_)) {}

  void run() {
    const std::int64_t rounds = (a_.count + round_elems_ - 1) / round_elems_;
    const std::uint64_t base = ws_.begin(a_.op, a_.seq);
    const Deadline deadline = ws_.deadline();
    for (std::int64_t k = 0; k < rounds; ++k) {
      const std::int64_t first = k * round_elems_;
      round(base + static_cast<std::uint64_t>(k) + 1, first, std::min(round_elems_, a_.count - first), deadline);
    }
    ws_.end(static_cast<std::uint64_t>(rounds));
  }

 private:
  std::size_t bytes(std::int64_t elements) const { return static_cast<std::size_t>(elements) * elem_; }
  const std::byte* input(std::int64_t element) const { return a_.send + bytes(element); }
  std::byte* output(std::int64_t element) const { return a_.recv + bytes(element); }
  std::byte* staged(int rank, int slice) const {
    return ws_.staging(rank) + static_cast<std::size_t>(slice) * ws_.slice_bytes();
  }

  void round(std::uint64_t g, std::int64_t first, std::int64_t m, const Deadline& deadline) {
    for (int j = 0; j < n_; ++j) {
      const ring::Block b = ring::block(m, n_, j);
      if (j != r_) std::memcpy(staged(r_, j), input(first + b.offset), bytes(b.count));
    }
    ws_.publish(ShmPhase::kStaged, g);
    ws_.wait_for_peers(ShmPhase::kStaged, g, deadline);

    const ring::Block mine = ring::block(m, n_, r_);
    std::byte* result = ws_.result(r_);
    auto contribution = [&](int q) { return q == r_ ? input(first + mine.offset) : staged(q, r_); };
    reduce_in_rank_order(result, n_, contribution, mine.count, a_.dtype, a_.reduce_op);
    write_out_(output(first + mine.offset), result, bytes(mine.count));
    ws_.publish(ShmPhase::kReduced, g);
    ws_.wait_for_peers(ShmPhase::kReduced, g, deadline);

    for (int j = 0; j < n_; ++j) {
      const ring::Block b = ring::block(m, n_, j);
      if (j != r_) write_out_(output(first + b.offset), ws_.result(j), bytes(b.count));
    }
  }

  const CollectiveArgs& a_;
  ShmWorkspace& ws_;
  const int n_, r_;
  const std::size_t elem_;
  const std::int64_t round_elems_;
  const CopyFunction write_out_;  // non-temporal stores for outputs larger than the caches
};

// Whether some rank's send overlaps its recv without being it (the single-copy path reads a
// peer's send while the owner writes its recv: only send == recv is safe there). The same
// answer on every rank: it reads every rank's posted slot.
bool any_partly_in_place(const CollectiveArgs& args, const ShmWorkspace& ws, std::uint64_t call) {
  const std::size_t bytes = args.bytes(args.count);
  for (int q = 0; q < args.comm.size(); ++q) {
    const ShmRegistrations posted = ws.posted_registrations(q, call);
    if (send_overlaps_recv(posted, bytes, bytes) && posted.send.offset != posted.recv.offset) return true;
  }
  return false;
}

}  // namespace

bool allreduce_shm_direct_supports(const CollectiveArgs& args) { return ShmWorkspace::usable(args.comm); }

void allreduce_on_host(const CollectiveArgs& args, bool single_copy) {
  ShmWorkspace& ws = shm_workspace_of(args);
  if (args.bytes(args.count) <= ShmWorkspace::kSmallBytes) return allreduce_one_shot_on(args, ws);
  // Every rank posts where its buffers lie; if all are registered the zero-copy path runs
  // (allreduce_registered.cc), else every rank takes the same other path, whatever it
  // registered itself.
  const std::uint64_t call = ws.post_call_registered(args, args.bytes(args.count), args.bytes(args.count));
  if (ws.registered_everywhere(call)) return allreduce_registered_on(args, ws, call);
  if (single_copy && ws.single_copy() && !any_partly_in_place(args, ws, call)) {
    return allreduce_single_copy_on(args, ws, call);
  }
  DirectAllreduce(args, ws).run();
}

void allreduce_shm_direct(const CollectiveArgs& args) { allreduce_on_host(args, /*single_copy=*/false); }

}  // namespace braid::algorithms
