// Shared-memory direct alltoall, for communicators whose ranks all share one host: in rounds,
// every rank copies the next chunk of each of its outgoing blocks into its workspace once, and
// every rank copies the chunk addressed to it out of each peer's workspace once — instead of
// sending each block through the shm transport's rings (a copy in and a copy out per byte,
// with a ring's flow control). The staging area (shm_workspace.h) is split into two halves
// that alternate by round, each holding one sub-chunk per destination rank; a half is refilled
// only after every peer has read the round that last used it, and at the end every rank waits
// until its peers have read its last round, so the next collective finds the workspace free.
#include <algorithm>
#include <cstring>

#include "braid/base/streaming_copy.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/shm_workspace.h"

namespace braid::algorithms {

bool alltoall_shm_direct_supports(const CollectiveArgs& args) { return ShmWorkspace::usable(args.comm); }

void alltoall_shm_direct(const CollectiveArgs& a) {
  a.comm.fabric().throw_if_poisoned();
  ShmWorkspace& ws = a.comm.attachment<ShmWorkspace>(a.comm, a.op, a.seq);
  ws.post_call(a, nullptr);
  const int n = a.comm.size(), r = a.comm.rank();
  // One sub-chunk per destination in each half of the staging area (n slices in all).
  const std::size_t sub = (ws.slice_bytes() / 2) / a.elem() * a.elem();
  const std::int64_t chunk = static_cast<std::int64_t>(sub / a.elem());
  const std::int64_t rounds = (a.count + chunk - 1) / chunk;
  ws.begin(a.op, a.seq);
  const CopyFunction copy_out = copy_for_output(a.bytes(a.count) * static_cast<std::size_t>(n));
  std::memcpy(block_at(a, a.recv, r), block_at(a, a.send, r), a.bytes(a.count));  // own block
  auto piece = [&](std::int64_t k) { return std::min(chunk, a.count - k * chunk); };
  auto staged = [&](int owner, int destination, std::size_t at) {
    return ws.staging(owner) + at + static_cast<std::size_t>(destination) * sub;
  };
  ws.exchange_rounds(
      rounds, static_cast<std::size_t>(n) * sub,
      [&](std::int64_t k, std::size_t at) {
        for (int q = 0; q < n; ++q) {
          if (q != r) std::memcpy(staged(r, q, at), block_at(a, a.send, q) + a.bytes(k * chunk), a.bytes(piece(k)));
        }
      },
      [&](std::int64_t k, std::size_t at) {
        for (int q = 0; q < n; ++q) {
          if (q != r) copy_out(block_at(a, a.recv, q) + a.bytes(k * chunk), staged(q, r, at), a.bytes(piece(k)));
        }
      });
}

}  // namespace braid::algorithms
