#include "braid/collectives/alltoallv_args.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

namespace {

// True when any block of this side is non-empty; throws on a bad count or displacement.
bool check_side(const ErrorContext& ctx, const char* side, const std::int64_t* counts, const std::int64_t* displs,
                int n, DType dtype) {
  if (counts == nullptr || displs == nullptr) throw InvalidArgument(ctx, fmt::format("null {} counts or displacements", side));
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(dtype_size(dtype));
  bool any = false;
  for (int p = 0; p < n; ++p) {
    ErrorContext at = ctx;  // names the peer whose block is bad
    at.peer = p;
    if (counts[p] < 0 || displs[p] < 0) {
      throw InvalidArgument(at, fmt::format("{} count {} / displacement {} for rank {} must be >= 0", side, counts[p],
                                             displs[p], p));
    }
    if (counts[p] > limit - displs[p]) {
      throw InvalidArgument(at, fmt::format("{} block of rank {} ({} elements at {}) overflows", side, p, counts[p],
                                             displs[p]));
    }
    any = any || counts[p] > 0;
  }
  return any;
}

// A non-empty block of one side, as a byte range of the address space.
struct Block {
  std::uint64_t begin, end;
  int peer;
  bool recv;
};

void add_blocks(std::vector<Block>& blocks, const void* base, const std::int64_t* counts, const std::int64_t* displs,
                int n, DType dtype, bool recv) {
  const auto at = reinterpret_cast<std::uintptr_t>(base);
  const auto elem = static_cast<std::uint64_t>(dtype_size(dtype));
  for (int p = 0; p < n; ++p) {
    if (counts[p] == 0) continue;
    const std::uint64_t begin = at + static_cast<std::uint64_t>(displs[p]) * elem;
    blocks.push_back({begin, begin + static_cast<std::uint64_t>(counts[p]) * elem, p, recv});
  }
}

// No send block may share a byte with a recv block (MPI's rule for a collective's buffers):
// every algorithm receives into recv while some of send is still to be sent, or read by a peer
// in place (alltoallv shm_direct's single copy). Sorted by start, a block overlaps a block of
// the other side iff it starts before the furthest end seen on that side.
void check_disjoint(const ErrorContext& ctx, const void* send, const void* recv, const AlltoallvLayout& layout,
                    int n, DType dtype) {
  std::vector<Block> blocks;
  add_blocks(blocks, send, layout.send_counts, layout.send_displs, n, dtype, false);
  const std::size_t sends = blocks.size();
  add_blocks(blocks, recv, layout.recv_counts, layout.recv_displs, n, dtype, true);
  // The usual call: the two sides' whole ranges are apart, and nothing needs sorting.
  auto range = [](auto first, auto last) {
    std::uint64_t begin = UINT64_MAX, end = 0;
    for (auto b = first; b != last; ++b) begin = std::min(begin, b->begin), end = std::max(end, b->end);
    return std::pair{begin, end};
  };
  const auto [send_begin, send_end] = range(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(sends));
  const auto [recv_begin, recv_end] = range(blocks.begin() + static_cast<std::ptrdiff_t>(sends), blocks.end());
  if (send_end <= recv_begin || recv_end <= send_begin) return;
  std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.begin < b.begin; });
  const Block* furthest[2] = {nullptr, nullptr};  // by side: send, recv
  for (const Block& b : blocks) {
    const Block* other = furthest[b.recv ? 0 : 1];
    if (other != nullptr && b.begin < other->end) {
      const Block& sent = b.recv ? *other : b;
      const Block& received = b.recv ? b : *other;
      ErrorContext at = ctx;
      at.peer = sent.peer;
      throw InvalidArgument(at, fmt::format("the send block for rank {} ({} bytes) overlaps the recv block from rank {} "
                                            "({} bytes): alltoallv's buffers must not alias",
                                            sent.peer, sent.end - sent.begin, received.peer, received.end - received.begin));
    }
    const Block*& mine = furthest[b.recv ? 1 : 0];
    if (mine == nullptr || b.end > mine->end) mine = &b;
  }
}

}  // namespace

void check_alltoallv_layout(const Communicator& comm, const void* send, const void* recv,
                            const AlltoallvLayout& layout, DType dtype) {
  const int n = comm.size();
  ErrorContext ctx{.rank = comm.rank(), .op = std::string(op_kind_name(OpKind::kAlltoallv))};
  if (!is_valid_dtype(static_cast<std::uint8_t>(dtype))) {
    throw InvalidArgument(ctx, fmt::format("invalid dtype value {}", static_cast<int>(dtype)));
  }
  const bool sends = check_side(ctx, "send", layout.send_counts, layout.send_displs, n, dtype);
  const bool receives = check_side(ctx, "recv", layout.recv_counts, layout.recv_displs, n, dtype);
  if ((sends && send == nullptr) || (receives && recv == nullptr)) {
    throw InvalidArgument(ctx, "null buffer with a non-zero count");
  }
  if ((sends || receives) && send == recv) throw InvalidArgument(ctx, "alltoallv cannot run in place (send == recv)");
  if (sends && receives) check_disjoint(ctx, send, recv, layout, n, dtype);
}

void check_alltoallv_self(const Communicator& comm, const AlltoallvLayout& layout) {
  const int r = comm.rank();
  if (layout.send_counts[r] != layout.recv_counts[r]) {
    throw Mismatch({.rank = r, .op = std::string(op_kind_name(OpKind::kAlltoallv))},
                   fmt::format("rank {} sends itself {} elements but expects to receive {}", r, layout.send_counts[r],
                               layout.recv_counts[r]));
  }
}

std::uint64_t alltoallv_send_bytes(const CollectiveArgs& args) {
  std::uint64_t bytes = 0;
  for (int p = 0; p < args.comm.size(); ++p) bytes += args.bytes(args.layout->send_counts[p]);
  return bytes;
}

AlltoallvLayoutCopy::AlltoallvLayoutCopy(const AlltoallvLayout& layout, int size)
    : size_(static_cast<std::size_t>(size)) {
  values_.reserve(4 * size_);
  for (const std::int64_t* side : {layout.send_counts, layout.send_displs, layout.recv_counts, layout.recv_displs}) {
    values_.insert(values_.end(), side, side + size_);
  }
}

AlltoallvLayout AlltoallvLayoutCopy::view() const {
  const std::int64_t* base = values_.data();
  return {base, base + size_, base + 2 * size_, base + 3 * size_};
}

}  // namespace braid
