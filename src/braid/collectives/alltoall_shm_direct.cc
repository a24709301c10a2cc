// Shared-memory direct alltoall, for communicators whose ranks all share one host: in rounds,
// every rank copies the next chunk of each of its outgoing blocks into its workspace once, and
// every rank copies the chunk addressed to it out of each peer's workspace once — instead of
// sending each block through the shm transport's rings (a copy in and a copy out per byte,
// with a ring's flow control). The staging area (shm_workspace.h) is split into two halves
// that alternate by round, each holding one sub-chunk per destination rank (ShmBlockRounds,
// shm_direct_steps.h); a half is refilled
// only after every peer has read the round that last used it, and at the end every rank waits
// until its peers have read its last round, so the next collective finds the workspace free.
#include <cstring>

#include "braid/base/streaming_copy.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/shm_direct_steps.h"
#include "braid/collectives/shm_workspace.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

bool alltoall_shm_direct_supports(const CollectiveArgs& args) { return ShmWorkspace::usable(args.comm); }

void alltoall_shm_direct(const CollectiveArgs& a) {
  detail::CollectiveAccess access(a.comm);
  access.fabric().throw_if_poisoned();
  ShmWorkspace& ws = access.attachment<ShmWorkspace>(a.comm, a.op, a.seq);
  const int n = a.comm.size(), r = a.comm.rank();
  const std::size_t total = a.bytes(a.count) * static_cast<std::size_t>(n);
  // Only a call that may read out of the peers' processes posts where its buffers lie (a
  // registry lookup under a lock); the others post their signature alone, as before.
  if (single_copy_worth_it(ws, total)) {
    if (alltoall_single_copy_on(a, ws, ws.post_call_registered(a, total, total))) return;
  } else {
    ws.post_call(a, nullptr);
  }
  const CopyFunction copy_out = copy_for_output(a.bytes(a.count) * static_cast<std::size_t>(n), n);
  std::memcpy(block_at(a, a.recv, r), block_at(a, a.send, r), a.bytes(a.count));  // own block
  ShmBlockRounds rounds(a, ws);
  rounds.run([&](std::int64_t k, std::size_t half) {
    const std::size_t offset = a.bytes(rounds.first(k)), bytes = a.bytes(rounds.elements(k));
    for (int q = 0; q < n; ++q) {
      if (q != r) copy_out(block_at(a, a.recv, q) + offset, rounds.staged(q, r, half), bytes);
    }
  });
}

}  // namespace braid::algorithms
