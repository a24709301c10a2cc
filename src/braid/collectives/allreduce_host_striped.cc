// Host-striped allreduce, for jobs on several hosts with the same number L >= 2 of ranks on
// each: every rank of a host drives the inter-host links at once, on its own 1/L of the
// buffer, where the leader variant (allreduce_hierarchical.cc) sends the whole buffer through
// one rank while the others wait. Composed of collectives on the sub-communicators of
// host_groups.h (STYLE.md: compose, don't copy):
//
//   1. reduce_scatter within each host (shared memory): local rank j holds shard j of the
//      host's sum,
//   2. allreduce shard j over stripe j (the ranks at position j of every host, across hosts;
//      the tuner picks the algorithm, for the shard's size),
//   3. allgather the shards within each host.
//
// In pieces: from 8 MiB the buffer is cut into 4 MiB pieces, each taken through the three
// steps as the whole buffer would be, the stripe's allreduce of piece i running on the
// stripe's queue (iallreduce) while this thread reduce-scatters piece i+1 and allgathers piece
// i-1. The link then goes from one piece to the next without waiting for the host's
// shared-memory phases, which otherwise add their time to the link's (measured below).
//
// Bytes leaving a host: those of L allreduces of M/L each, i.e. the leader variant's M, but
// on L streams in parallel, and with no host reduce / broadcast of the whole buffer before and
// after the inter-host step (the phases move M/L per rank, not M through the leader).
//
// The shards need L equal blocks: a count not divisible by L is padded, in the scratch
// buffer, to L x ceil(count / L) elements (the pad, fewer than L elements, is zero and
// dropped at the end; its cost is a copy in and out of the buffer, small beside the inter-host
// step this algorithm is for). Every element of shard j is reduced by stripe j's allreduce,
// which leaves identical bytes on its ranks, and the allgather copies them: every rank ends
// bitwise identical. avg is summed here; the entry point divides once by the world size.
#include <algorithm>
#include <cstring>
#include <deque>
#include <utility>

#include "braid/base/error.h"
#include "braid/collectives/async_collectives.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/host_groups.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

// Several hosts, each with the same number of ranks, at least two: with one rank per host it
// is a plain allreduce (so the stripes' own allreduce cannot recurse), and with uneven hosts
// some rank would hold no shard (hierarchical serves those).
bool allreduce_host_striped_supports(const CollectiveArgs& args) { return spans_uniform_hosts(args.comm.topology()); }

namespace {

// One piece of the buffer: `count` elements (a multiple of the host size) from `offset`.
struct Piece {
  std::int64_t offset = 0, count = 0;
};

// Bytes per piece: the buffer is cut so that a piece's inter-host allreduce runs while the next
// piece is reduce-scattered inside the host (and the previous one allgathered), hiding the
// shared-memory phases behind the link; below two pieces there is nothing to overlap. Measured
// (docs/performance.md, "host_striped in pieces"; 2 emulated hosts x 2 ranks, 16 MiB): 1 MiB
// pieces bring a 1 Gbit/s link to the frame ceiling (95.6% of the rate) and 4 MiB to 93.7%,
// from 84-85% in one piece; at 10 Gbit/s, where 2 cores carry the TCP work, 1-2 MiB pieces cost
// 2-13% in calls and 4 MiB did not.
constexpr std::size_t kPieceBytes = std::size_t{4} << 20;

std::int64_t piece_elements(std::int64_t padded, std::int64_t shards, std::size_t element_bytes) {
  std::int64_t target = static_cast<std::int64_t>(kPieceBytes / element_bytes) / shards * shards;
  target = std::max(shards, target);
  return padded < 2 * target ? padded : target;
}

// Waits for the pieces still in flight when a phase threw: their allreduces write into the
// caller's buffer, which must not be handed back while they run. Their own errors are the
// same failure seen again, so they are dropped.
struct InFlight {
  std::deque<std::pair<Work, Piece>> pieces;
  ~InFlight() {
    for (auto& [work, piece] : pieces) {
      try {
        work.wait();
      } catch (...) {  // NOLINT(bugprone-empty-catch): the first error is already propagating
      }
    }
  }
};

}  // namespace

void allreduce_host_striped(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  HostGroups& groups = access.attachment<HostGroups>(args.comm);
  if (!groups.striped()) {  // supports() and HostGroups read the same topology: a bug if hit
    throw InvalidArgument({.rank = args.comm.rank(), .op = "allreduce", .seq = args.seq},
                          "host_striped: hosts hold different numbers of ranks");
  }
  const ReduceOp op = args.reduce_op == ReduceOp::kAvg ? ReduceOp::kSum : args.reduce_op;
  Communicator& host = groups.host();
  const std::int64_t shards = host.size();
  const std::int64_t padded = (args.count + shards - 1) / shards * shards;
  const std::size_t padded_bytes = args.bytes(padded), bytes = args.bytes(args.count);
  // Divisible counts work in place on recv (the entry point copied send into it).
  std::byte* buffer = args.recv;
  if (padded_bytes != bytes) {
    buffer = access.scratch(padded_bytes);  // the world's scratch: the phases use their own
    std::memcpy(buffer, args.recv, bytes);
    std::memset(buffer + bytes, 0, padded_bytes - bytes);
  }
  // Each piece as the whole buffer once was: in place, reduce_scatter leaves this rank's shard
  // at the start of the piece; allgather then copies it to block `host rank` (it does not
  // overlap the start) and fills the others. The stripe's allreduces run on its own queue, one
  // after the other, so the link goes from one piece to the next while this thread works on
  // the host's phases.
  const std::int64_t step = piece_elements(padded, shards, dtype_size(args.dtype));
  auto at = [&](const Piece& piece) { return buffer + args.bytes(piece.offset); };
  auto shard_of = [shards](std::int64_t count) { return count / shards; };
  auto finish = [&](InFlight& flight) {
    auto [work, piece] = std::move(flight.pieces.front());
    flight.pieces.pop_front();
    work.wait();
    allgather(host, at(piece), at(piece), shard_of(piece.count), args.dtype);
  };
  if (step == padded) {  // one piece: nothing to overlap, so no hand-off to the stripe's queue
    reduce_scatter(host, buffer, buffer, shard_of(padded), args.dtype, op);
    allreduce(groups.stripe(), buffer, buffer, shard_of(padded), args.dtype, op);
    allgather(host, buffer, buffer, shard_of(padded), args.dtype);
  } else {
    InFlight flight;
    for (std::int64_t offset = 0; offset < padded; offset += step) {
      Piece piece{offset, std::min(step, padded - offset)};
      reduce_scatter(host, at(piece), at(piece), shard_of(piece.count), args.dtype, op);
      flight.pieces.emplace_back(
          iallreduce(groups.stripe(), at(piece), at(piece), shard_of(piece.count), args.dtype, op), piece);
      if (flight.pieces.size() > 1) finish(flight);
    }
    while (!flight.pieces.empty()) finish(flight);
  }
  if (buffer != args.recv) std::memcpy(args.recv, buffer, bytes);
}

}  // namespace braid::algorithms
