// Shared-memory direct broadcast, for communicators whose ranks all share one host: the root
// copies the message into its workspace once and every other rank copies it out once, in
// pipelined chunks, instead of passing it hop by hop through the shm transport's rings (two
// copies per hop). The root's staging area (shm_workspace.h) is split into two halves that
// alternate by round: the root fills one while the others empty the other.
//
//   root:   wait until every peer has consumed the round that last used this half (g-2),
//           copy chunk g in, publish "staged g"
//   others: wait for "staged g", copy chunk g out, publish "consumed g" (the kReduced counter)
//
// At the end the root waits until every peer has consumed the last round, so that the next
// collective on the workspace may reuse its staging area at once (the invariant the other
// shared-memory algorithms rely on). Messages up to ShmWorkspace::kSmallBytes travel in the
// root's call slot, behind the call's signature. Every rank ends with the root's bytes.
#include <algorithm>
#include <cstring>

#include "braid/base/streaming_copy.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/shm_workspace.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

namespace {

void broadcast_rounds(const CollectiveArgs& a, ShmWorkspace& ws) {
  const int n = a.comm.size();
  const bool root = a.comm.rank() == a.root;
  const std::size_t half = (static_cast<std::size_t>(n) * ws.slice_bytes() / 2) / a.elem() * a.elem();
  const std::int64_t chunk = static_cast<std::int64_t>(half / a.elem());
  const std::int64_t rounds = (a.count + chunk - 1) / chunk;
  const std::uint64_t base = ws.begin(a.op, a.seq);
  const Deadline deadline = ws.deadline();
  const CopyFunction copy_out = copy_for_output(a.bytes(a.count), n);
  std::uint64_t g = base;
  for (std::int64_t k = 0; k < rounds; ++k) {
    g = base + static_cast<std::uint64_t>(k) + 1;
    const std::int64_t first = k * chunk, m = std::min(chunk, a.count - first);
    std::byte* slot = ws.staging(a.root) + (g % 2) * half;
    std::byte* data = a.recv + a.bytes(first);
    if (root) {
      if (g >= base + 3) ws.wait_for_peers(ShmPhase::kReduced, g - 2, deadline);
      std::memcpy(slot, data, a.bytes(m));
      ws.publish(ShmPhase::kStaged, g);
      ws.publish(ShmPhase::kReduced, g);
    } else {
      ws.publish(ShmPhase::kStaged, g);  // nothing to stage: keeps every counter in step
      ws.wait_for_peers(ShmPhase::kStaged, g, deadline);
      copy_out(data, slot, a.bytes(m));
      ws.publish(ShmPhase::kReduced, g);
    }
  }
  if (root) ws.wait_for_peers(ShmPhase::kReduced, g, deadline);
  ws.end(static_cast<std::uint64_t>(rounds));
}

}  // namespace

bool broadcast_shm_direct_supports(const CollectiveArgs& args) { return ShmWorkspace::usable(args.comm); }

void broadcast_shm_direct(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  access.fabric().throw_if_poisoned();  // the small path sends no message
  ShmWorkspace& ws = access.attachment<ShmWorkspace>(args.comm, args.op, args.seq);
  if (args.bytes(args.count) <= ShmWorkspace::kSmallBytes) {
    const bool root = args.comm.rank() == args.root;
    const std::uint64_t call = ws.post_call(args, root ? args.recv : nullptr);
    if (!root) std::memcpy(args.recv, ws.posted_input(args.root, call, args.bytes(args.count)), args.bytes(args.count));
    return;
  }
  const std::uint64_t call = ws.post_call_registered(args, 0, args.bytes(args.count));
  if (broadcast_registered_on(args, ws, call)) return;  // the root's buffer registered: pulled in place
  if (broadcast_single_copy_on(args, ws, call)) return;  // the root's buffer read out of its process
  broadcast_rounds(args, ws);
}

}  // namespace braid::algorithms
