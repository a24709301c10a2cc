// Cross Memory Attach: reading (or writing) another process's memory with one copy
// (process_vm_readv / process_vm_writev), the
// single-copy mechanism of Open MPI's shared-memory BTL and MPICH. The shared-memory
// collectives use it for buffers that are not registered (comm/registered_buffer.h): a peer's
// ordinary heap memory cannot be mapped here, but it can be copied straight out of its process,
// which saves the copy into a shared segment that the staged path pays (Note [Single-copy
// collectives], collectives/allreduce_single_copy.cc).
//
// The kernel allows it between processes of one user unless a security policy forbids it
// (Yama's ptrace_scope, a seccomp filter, a container without the ptrace capability): callers
// probe with can_read_peer_memory first and keep the staged path where any rank cannot.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "braid/base/error.h"

namespace braid::shm {

// Copies `bytes` from address `remote` of process `pid` into `local`. Throws PeerLost when
// the process is gone (ESRCH), Corrupt when the range is not mapped there (EFAULT: the peer
// posted an address it does not own), SystemError for anything else (EPERM: the policy changed
// since the probe). `context` names the rank, peer and operation.
void read_peer_memory(pid_t pid, std::uint64_t remote, std::byte* local, std::size_t bytes, const ErrorContext& context);
// The other way (process_vm_writev): copies `bytes` from `local` to address `remote` of
// process `pid`. Same errors.
void write_peer_memory(pid_t pid, std::uint64_t remote, const std::byte* local, std::size_t bytes,
                       const ErrorContext& context);

// Whether this process may read process `pid`'s memory: reads expected.size() bytes at
// `remote` and compares them with `expected`. Never throws.
bool can_read_peer_memory(pid_t pid, std::uint64_t remote, std::span<const std::byte> expected);

// The address of `p` as a peer passes it to read_peer_memory.
inline std::uint64_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace braid::shm
