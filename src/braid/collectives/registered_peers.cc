#include "braid/collectives/registered_peers.h"

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

std::byte* RegisteredPeers::address(int peer, pid_t pid, const ShmRegistration& where, std::size_t bytes) {
  auto it = arenas_.find({peer, where.arena});
  if (it == arenas_.end()) {
    const shm::ArenaRef ref{.arena = where.arena, .fd = where.fd, .offset = where.offset};
    it = arenas_.emplace(std::pair(peer, where.arena), shm::PeerArena::map(pid, ref, world_rank_, peer)).first;
  }
  const shm::PeerArena& arena = it->second;
  if (where.offset > arena.size() || bytes > arena.size() - where.offset) {
    throw Corrupt({.rank = world_rank_, .peer = peer, .op = "shm.registered"},
                  fmt::format("rank {} posted {} bytes at offset {} of its registered arena {}, which holds {}", peer,
                              bytes, where.offset, where.arena, arena.size()));
  }
  return arena.data() + where.offset;
}

}  // namespace braid
