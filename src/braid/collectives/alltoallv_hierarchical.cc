// Hierarchical alltoallv, for jobs spanning several hosts with several ranks on some of them:
// the 2D scheme of DeepEP and Tutel. Instead of every rank exchanging with every off-host rank
// (n - local ranks messages over the slow links per rank), each host's blocks for another
// host cross the link once, as one message between the two hosts' leaders. Composed of
// collectives on the sub-communicators of host_groups.h (STYLE.md: compose, don't copy):
//
//   0. counts: every rank's row of counts reaches every rank (a sum of disjoint rows: reduce
//      to the host leader, allreduce among leaders, broadcast within the host), so every rank
//      checks every pair and raises the same Mismatch before any payload moves;
//   1. within each host, blocks between ranks of the host go straight from send to recv (one
//      host alltoallv), and each rank's blocks for other hosts go to its leader, packed in
//      destination order (a second host alltoallv that only the leader receives);
//   2. among the leaders, one alltoallv: leader A sends leader B the blocks from A's ranks to
//      B's ranks, source-major;
//   3. each leader scatters, within its host, to each of its ranks the blocks that arrived for
//      it (source host-major), which the rank unpacks into recv at its displacements.
//
// Each phase runs the algorithm the tuner picks for its communicator (shm_direct within a
// host, pairwise among the leaders); it refuses the leaders' communicator (one rank per host),
// so it cannot recurse. Bytes are only copied, so every rank ends with the exact bytes
// pairwise would deliver.
#include <cstring>
#include <vector>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/alltoallv_counts.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/host_groups.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

namespace {

using Counts = std::vector<std::int64_t>;

// Which ranks are where, and the matrix: what every phase's layout is computed from.
struct Plan {
  const CollectiveArgs& a;
  const Topology& topology;
  const AlltoallvCounts& counts;
  int host;  // this rank's

  bool on_host(int rank, int h) const { return topology.host_of(rank) == h; }
  const std::vector<int>& ranks_of(int h) const { return topology.ranks_on_host(h); }
  // Elements rank s sends to ranks off its own host (what phase 1 packs for its leader).
  std::int64_t off_host(int s) const {
    std::int64_t total = 0;
    for (int d = 0; d < counts.size(); ++d) total += on_host(d, topology.host_of(s)) ? 0 : counts.sent(s, d);
    return total;
  }
  // Elements from the ranks of host `from` to the ranks of host `to`.
  std::int64_t between(int from, int to) const {
    std::int64_t total = 0;
    for (int s : ranks_of(from)) {
      for (int d : ranks_of(to)) total += counts.sent(s, d);
    }
    return total;
  }
  // Elements reaching rank d from ranks off its host (what phase 3 scatters to it).
  std::int64_t arriving(int d) const {
    std::int64_t total = 0;
    for (int s = 0; s < counts.size(); ++s) total += on_host(s, topology.host_of(d)) ? 0 : counts.sent(s, d);
    return total;
  }
};

// Packed blocks back to back; `displs` are the prefix sums of `counts`.
Counts prefix(const Counts& counts) {
  Counts displs(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  return displs;
}

// A host alltoallv in which every rank sends `out` elements to the leader (host rank 0) and
// the leader receives `in[i]` from host rank i, packed; or the reverse (leader sends `in[i]`
// to host rank i). Zero counts everywhere else.
void with_leader(Communicator& host, const CollectiveArgs& a, const std::byte* send, const Counts& send_counts,
                 std::byte* recv, const Counts& recv_counts) {
  alltoallv(host, send, send_counts.data(), prefix(send_counts).data(), recv, recv_counts.data(),
            prefix(recv_counts).data(), a.dtype);
}

// Phase 0: the matrix, identical on every rank.
AlltoallvCounts all_counts(const CollectiveArgs& a, HostGroups& groups) {
  AlltoallvCounts counts(a.comm.size());
  counts.set_row(a.comm.rank(), *a.layout);
  std::span<std::int64_t> values = counts.values();
  const auto size = static_cast<std::int64_t>(values.size());
  reduce(groups.host(), values.data(), values.data(), size, DType::kI64, ReduceOp::kSum, /*root=*/0);
  if (groups.is_leader()) allreduce(groups.leaders(), values.data(), values.data(), size, DType::kI64, ReduceOp::kSum);
  broadcast(groups.host(), values.data(), size, DType::kI64, /*root=*/0);
  return counts;
}

// Phase 1a: blocks between ranks of one host, straight from send to recv.
void exchange_on_host(const Plan& p, Communicator& host) {
  const AlltoallvLayout& l = *p.a.layout;
  Counts sc, sd, rc, rd;
  for (int q : p.ranks_of(p.host)) {
    sc.push_back(l.send_counts[q]);
    sd.push_back(l.send_displs[q]);
    rc.push_back(l.recv_counts[q]);
    rd.push_back(l.recv_displs[q]);
  }
  alltoallv(host, p.a.send, sc.data(), sd.data(), p.a.recv, rc.data(), rd.data(), p.a.dtype);
}

// Phase 1b: this rank's off-host blocks, packed in destination order, into `pack`.
void pack_off_host(const Plan& p, std::byte* pack) {
  const AlltoallvLayout& l = *p.a.layout;
  for (int d = 0; d < p.counts.size(); ++d) {
    if (p.on_host(d, p.host) || l.send_counts[d] == 0) continue;
    std::memcpy(pack, p.a.send + p.a.bytes(l.send_displs[d]), p.a.bytes(l.send_counts[d]));
    pack += p.a.bytes(l.send_counts[d]);
  }
}

// Leader, phase 2 input: from `gathered` (host rank i's packed off-host blocks, i ascending)
// to `out`: for each other host B ascending, for each rank s of this host, s's blocks for B.
void order_by_host(const Plan& p, const std::byte* gathered, std::byte* out) {
  for (int b = 0; b < p.topology.num_hosts(); ++b) {
    if (b == p.host) continue;
    const std::byte* from = gathered;
    for (int s : p.ranks_of(p.host)) {
      for (int d = 0; d < p.counts.size(); ++d) {
        if (p.on_host(d, p.host)) continue;
        const std::size_t bytes = p.a.bytes(p.counts.sent(s, d));
        if (p.on_host(d, b)) {
          std::memcpy(out, from, bytes);
          out += bytes;
        }
        from += bytes;
      }
    }
  }
}

// Leader, phase 3 input: from `arrived` (for each other host A ascending: for s in A, for d in
// this host, block s -> d) to `out`: for each rank d of this host, for each host A, for s in A.
void order_by_destination(const Plan& p, const std::byte* arrived, std::byte* out) {
  for (int d : p.ranks_of(p.host)) {
    const std::byte* from = arrived;
    for (int h = 0; h < p.topology.num_hosts(); ++h) {
      if (h == p.host) continue;
      for (int s : p.ranks_of(h)) {
        for (int q : p.ranks_of(p.host)) {
          const std::size_t bytes = p.a.bytes(p.counts.sent(s, q));
          if (q == d) {
            std::memcpy(out, from, bytes);
            out += bytes;
          }
          from += bytes;
        }
      }
    }
  }
}

// Phase 3 output: this rank's arrivals (host-major, then source) into recv.
void unpack_arrivals(const Plan& p, const std::byte* arrived) {
  const AlltoallvLayout& l = *p.a.layout;
  for (int h = 0; h < p.topology.num_hosts(); ++h) {
    if (h == p.host) continue;
    for (int s : p.ranks_of(h)) {
      std::memcpy(p.a.recv + p.a.bytes(l.recv_displs[s]), arrived, p.a.bytes(l.recv_counts[s]));
      arrived += p.a.bytes(l.recv_counts[s]);
    }
  }
}

// Regions of one scratch allocation, each 64-byte aligned and distinct even when empty (the
// nested alltoallv refuses send == recv).
class Regions {
 public:
  explicit Regions(const CollectiveArgs& a) : a_(a) {}
  std::size_t add(std::int64_t elements) {
    const std::size_t at = total_;
    total_ += (a_.bytes(elements) + 64) / 64 * 64;
    return at;
  }
  std::byte* base() { return detail::CollectiveAccess(a_.comm).scratch(total_); }

 private:
  const CollectiveArgs& a_;
  std::size_t total_ = 0;
};

void leaders_exchange(const Plan& p, Communicator& leaders, const std::byte* out, std::byte* in) {
  Counts sc, rc;
  for (int h = 0; h < p.topology.num_hosts(); ++h) {
    sc.push_back(h == p.host ? 0 : p.between(p.host, h));  // a host's own blocks never leave it
    rc.push_back(h == p.host ? 0 : p.between(h, p.host));
  }
  alltoallv(leaders, out, sc.data(), prefix(sc).data(), in, rc.data(), prefix(rc).data(), p.a.dtype);
}

}  // namespace

bool alltoallv_hierarchical_supports(const CollectiveArgs& args) { return spans_hierarchy(args.comm.topology()); }

void alltoallv_hierarchical(const CollectiveArgs& a) {
  HostGroups& groups = detail::CollectiveAccess(a.comm).attachment<HostGroups>(a.comm);
  const AlltoallvCounts counts = all_counts(a, groups);
  if (std::exception_ptr error = counts.disagreement(a)) std::rethrow_exception(error);  // on every rank alike
  const Plan p{a, a.comm.topology(), counts, a.comm.topology().host_of(a.comm.rank())};
  Communicator& host = groups.host();
  const std::vector<int>& mine = p.ranks_of(p.host);
  const bool leader = groups.is_leader();
  exchange_on_host(p, host);

  // Scratch: own pack and own arrivals; the leader also gathers, reorders and forwards.
  Counts to_leader(mine.size(), 0), gathered(mine.size(), 0), from_leader(mine.size(), 0), scattered(mine.size(), 0);
  to_leader[0] = p.off_host(a.comm.rank());
  from_leader[0] = p.arriving(a.comm.rank());
  std::int64_t gathered_total = 0, arriving_total = 0;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    gathered[i] = leader ? p.off_host(mine[i]) : 0;
    scattered[i] = leader ? p.arriving(mine[i]) : 0;
    gathered_total += gathered[i];
    arriving_total += scattered[i];
  }
  Regions regions(a);
  const std::size_t pack_at = regions.add(to_leader[0]), own_at = regions.add(from_leader[0]);
  const std::size_t gather_at = regions.add(gathered_total), by_host_at = regions.add(gathered_total);
  const std::size_t arrived_at = regions.add(arriving_total), by_dest_at = regions.add(arriving_total);
  std::byte* base = regions.base();

  pack_off_host(p, base + pack_at);
  with_leader(host, a, base + pack_at, to_leader, base + gather_at, gathered);
  if (leader) {
    order_by_host(p, base + gather_at, base + by_host_at);
    leaders_exchange(p, groups.leaders(), base + by_host_at, base + arrived_at);
    order_by_destination(p, base + arrived_at, base + by_dest_at);
  }
  with_leader(host, a, base + by_dest_at, scattered, base + own_at, from_leader);
  unpack_arrivals(p, base + own_at);
}

}  // namespace braid::algorithms
