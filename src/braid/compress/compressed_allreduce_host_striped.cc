// The two-stage codecs (fp16, bf16, int8, sign) across several hosts with several ranks each:
// compress only what crosses hosts. Inside a host the wire is memory, where encoding costs
// more CPU than it saves bytes; between hosts the link is the bottleneck. So:
//   1. reduce_scatter in fp32 within the host (shared memory): local rank j holds shard j of
//      the host's sum (averaged over the host's ranks when the call averages);
//   2. the two-stage compressed allreduce of shard j over stripe j (host_groups.h: the ranks
//      with position j on their host, one per host), so every rank of a host drives the links
//      at once and encodes a 1/L share of the tensor instead of all of it;
//   3. allgather in fp32 within the host.
// Per direction a host link carries the compressed tensor once (L stripes of 1/L each) instead
// of about 1.75 times under the flat scheme with two ranks per host, and the values are rounded
// after the host's sum (fewer, larger values rounded once) instead of per rank.
//
// Every rank of a stripe ends with the same bytes of its shard (the two-stage scheme's
// guarantee) and the allgather copies them, so every rank of every host ends bitwise
// identical. Error feedback keeps its residuals per shard under "<name>@stripe": each rank
// compensates the host sum it encodes, not its own gradient.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "braid/collectives/collectives.h"
#include "braid/collectives/host_groups.h"
#include "braid/comm/communicator_internal.h"
#include "braid/compress/compressed_call.h"

namespace braid::compress {

namespace {

// Where a shard of this rank's host sits: the L shards of `count` elements, cut on the codec's
// block boundaries, each padded to the largest (reduce_scatter and allgather move equal blocks).
struct HostShards {
  std::vector<ShardBounds> shards;
  std::size_t padded = 0;  // elements per block
  bool exact() const { return shards.back().size() == padded && shards.front().size() == padded; }
};

HostShards cut_host_shards(std::size_t count, int ranks, std::size_t align) {
  HostShards h;
  for (int q = 0; q < ranks; ++q) {
    h.shards.push_back(shard_bounds(count, ranks, q, align));
    h.padded = std::max(h.padded, h.shards.back().size());
  }
  return h;
}

// The stripe's call sees stripe ranks (one per host); the caller's tamper hook and its error
// messages speak in ranks of the caller's communicator.
CompressedAllreduceOptions stripe_options(const CompressedCall& call, int local) {
  CompressedAllreduceOptions o = call.options;
  o.name = call.options.name + "@stripe";
  o.error_feedback = call.error_feedback;
  o.non_finite = NonFinitePolicy::kPropagate;  // checked on the whole communicator already
  o.checksum = call.encode.checksum;
  if (call.options.tamper) {
    const Topology& topology = call.comm.topology();
    o.tamper = [&call, &topology, local](int peer, std::span<std::byte> payload) {
      call.options.tamper(peer < 0 ? -1 : topology.ranks_on_host(peer)[static_cast<std::size_t>(local)], payload);
    };
  }
  return o;
}

}  // namespace

bool host_striped_applies(Communicator& comm) { return spans_uniform_hosts(comm.topology()); }

void allreduce_two_stage_host_striped(const CompressedCall& call) {
  call.check_finite(call.data);  // on every rank at once, before any rank moves data
  HostGroups& groups = detail::CollectiveAccess(call.comm).attachment<HostGroups>(call.comm);
  Communicator& host = groups.host();
  Communicator& stripe = groups.stripe();
  const int local = host.rank();
  const HostShards layout = cut_host_shards(call.data.size(), host.size(), two_stage_shard_align(call.codec.spec()));
  const auto padded = static_cast<std::int64_t>(layout.padded);
  const ReduceOp op = call.options.average ? ReduceOp::kAvg : ReduceOp::kSum;

  // Stage 1: the host's sum, shard by shard. Uneven shards travel through a padded copy.
  std::span<float> blocks = layout.exact() ? call.data : call.floats(0, layout.padded * layout.shards.size());
  if (!layout.exact()) {
    for (std::size_t q = 0; q < layout.shards.size(); ++q) {
      const ShardBounds& s = layout.shards[q];
      float* block = blocks.data() + q * layout.padded;
      std::copy_n(call.data.data() + s.begin, s.size(), block);
      std::fill(block + s.size(), block + layout.padded, 0.0f);
    }
  }
  std::span<float> shard = call.floats(1, layout.padded);
  reduce_scatter(host, blocks.data(), shard.data(), padded, DType::kF32, op);

  // Stage 2: across hosts, compressed (averaged over the hosts: with the host average above,
  // over every rank).
  const std::size_t mine = layout.shards[static_cast<std::size_t>(local)].size();
  CompressedAllreduceOptions options = stripe_options(call, local);
  CompressionStats across = compressed_allreduce(stripe, shard.first(mine), call.state, options);

  // Stage 3: every rank of the host gets every shard.
  allgather(host, shard.data(), blocks.data(), padded, DType::kF32);
  if (!layout.exact()) {
    for (std::size_t q = 0; q < layout.shards.size(); ++q) {
      const ShardBounds& s = layout.shards[q];
      std::copy_n(blocks.data() + q * layout.padded, s.size(), call.data.data() + s.begin);
    }
  }
  // This rank compressed its shard only; inside the host fp32 travelled (ring-equivalent
  // volume of the reduce_scatter and the allgather, (L-1) blocks each).
  call.stats.elements = mine;
  call.stats.payload_bytes = across.payload_bytes;
  call.stats.wire_bytes = across.wire_bytes + 2 * static_cast<std::uint64_t>(host.size() - 1) * layout.padded * sizeof(float);
}

}  // namespace braid::compress
