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
#include <cstring>

#include "braid/base/error.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/host_groups.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

// Several hosts, each with the same number of ranks, at least two: with one rank per host it
// is a plain allreduce (so the stripes' own allreduce cannot recurse), and with uneven hosts
// some rank would hold no shard (hierarchical serves those).
bool allreduce_host_striped_supports(const CollectiveArgs& args) { return spans_uniform_hosts(args.comm.topology()); }

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
  const std::int64_t shard = (args.count + shards - 1) / shards;
  const std::size_t padded_bytes = args.bytes(shard * shards), bytes = args.bytes(args.count);
  // Divisible counts work in place on recv (the entry point copied send into it).
  std::byte* buffer = args.recv;
  if (padded_bytes != bytes) {
    buffer = access.scratch(padded_bytes);  // the world's scratch: the phases use their own
    std::memcpy(buffer, args.recv, bytes);
    std::memset(buffer + bytes, 0, padded_bytes - bytes);
  }
  // In place, reduce_scatter leaves this rank's shard at the start of the buffer; allgather
  // then copies it to block `host rank` (it does not overlap the start) and fills the others.
  reduce_scatter(host, buffer, buffer, shard, args.dtype, op);
  allreduce(groups.stripe(), buffer, buffer, shard, args.dtype, op);
  allgather(host, buffer, buffer, shard, args.dtype);
  if (buffer != args.recv) std::memcpy(args.recv, buffer, bytes);
}

}  // namespace braid::algorithms
