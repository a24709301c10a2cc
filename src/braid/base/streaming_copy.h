// memcpy with non-temporal stores: the destination's cache lines are written without being
// read first (no read-for-ownership) and without evicting what the caches hold. For output
// that will not be read again soon — the result of a collective larger than the caches — it
// saves a third of the memory traffic of a plain copy. glibc's memcpy switches to such stores
// by itself only for single calls larger than a share of the L3; collectives copy in pieces
// of ~100 KiB, so they ask for it explicitly.
#pragma once

#include <cstddef>

namespace braid {

// Like memcpy (no overlap); ends with a store fence, so the bytes are globally visible in
// order with later stores (e.g. a flag published to another process).
void streaming_copy(void* dst, const void* src, std::size_t bytes);

// The copy for a collective in which each of `ranks_on_host` ranks of one host writes an output
// of `output_bytes` in pieces: streaming_copy once those outputs together reach 4 MiB, memcpy
// below. The ranks of a host share its L3 (8 MiB on the machines braid was measured on), so it
// is their joint footprint that decides whether an output stays cached until it is read:
// counting only one rank's output kept 4 ranks at 1-2 MiB allreduces on plain stores, 1.6x
// slower (docs/performance.md).
using CopyFunction = void (*)(void* dst, const void* src, std::size_t bytes);
CopyFunction copy_for_output(std::size_t output_bytes, int ranks_on_host);

}  // namespace braid
