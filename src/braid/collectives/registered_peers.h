// The peers' registered arenas a rank has mapped (transport/shm/memfd_arena.h), for the
// zero-copy collectives: a call names a peer's send or recv as (arena, fd, offset) in its
// signature slot (ShmRegistration); the first call that names an arena maps it through
// /proc/<pid>/fd/<fd>, and later ones reuse the mapping. Arena ids are never reused within a
// process and arenas live as long as their pool, so a cached mapping stays right however the
// peer frees and reallocates blocks in it. The mappings go with the workspace, i.e. with the
// communicator.
//
// Thread-safety: as ShmWorkspace (the one thread running the communicator's collectives).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "braid/collectives/shm_workspace.h"
#include "braid/transport/shm/memfd_arena.h"

namespace braid {

class RegisteredPeers {
 public:
  explicit RegisteredPeers(int world_rank) : world_rank_(world_rank) {}

  // `bytes` at `where` in world rank `peer`'s (process `pid`) arena, mapped on first use.
  // Throws SystemError if it cannot be mapped, Corrupt if the range runs past the arena.
  std::byte* address(int peer, pid_t pid, const ShmRegistration& where, std::size_t bytes);

  std::size_t mapped() const { return arenas_.size(); }

 private:
  const int world_rank_;
  std::map<std::pair<int, std::uint32_t>, shm::PeerArena> arenas_;  // (world rank, arena id)
};

}  // namespace braid
