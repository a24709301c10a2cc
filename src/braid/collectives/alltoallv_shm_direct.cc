// Shared-memory direct alltoallv, for communicators whose ranks all share one host, with any
// counts (uneven, zero). Each rank first posts its row of counts (what it sends to every rank,
// what it expects from every rank) with the call's signature, so every rank knows the whole
// matrix (alltoallv_counts.h): a count disagreement raises the same Mismatch on every rank
// before any payload moves, and every rank computes the same rounds.
//
// The payload moves in rounds through the two alternating halves of each rank's staging area
// (run_rounds below: one synchronisation per round). A rank's outgoing *stream* is its blocks
// for its peers in rank order, back to back; round k stages bytes [k H, (k+1) H) of that
// stream into the rank's own half (one copy in), H being the whole half. Every receiver knows where its block
// sits in each sender's stream, and copies the part of it that round k covers out of the
// sender's half (one copy out). Packing the stream, rather than giving every destination a
// fixed share of the half as the equal-count alltoall does (shm_direct_steps.h), keeps the
// halves full when the counts are skewed (MoE routing): the round count is that of the
// sender with the most to send, not of the largest single block.
//
// Reading from the sender's segment (rather than the sender writing into the receiver's) keeps
// each staging copy a write into the writer's own segment, and costs the same two copies per
// byte as writing would; on one socket both touch the same memory (docs/collectives.md).
//
// Where every rank may read its peers' memory (ShmWorkspace::single_copy) and the call's mean
// bytes per rank lie in the single-copy band, no payload is staged: every block between two
// ranks is copied once, straight from its sender's send into its receiver's recv, by one of the
// two (alltoallv_single_copy_on, single_copy_collectives.cc; which one: single_copy_plan below). For that every rank posts its displacements after
// its counts, and every rank decides from the same posted rows, so all take the same path.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "braid/base/streaming_copy.h"
#include "braid/collectives/algorithms.h"
#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/alltoallv_counts.h"
#include "braid/collectives/shm_workspace.h"
#include "braid/comm/communicator_internal.h"
#include "braid/transport/shm/cross_memory.h"

namespace braid::algorithms {

namespace {

// Where each block of one sender's stream lies, in elements: block for d at [start[d], start[d] + count).
struct StreamLayout {
  std::vector<std::int64_t> start;  // by destination; unused for the sender itself
  std::int64_t total = 0;
};

StreamLayout stream_of(const AlltoallvCounts& counts, int sender) {
  StreamLayout stream;
  stream.start.assign(static_cast<std::size_t>(counts.size()), 0);
  for (int d = 0; d < counts.size(); ++d) {
    if (d == sender) continue;
    stream.start[static_cast<std::size_t>(d)] = stream.total;
    stream.total += counts.sent(sender, d);
  }
  return stream;
}

// The part of [start, start + count) that round k covers, [first, end) (empty when first >= end).
struct Piece {
  std::int64_t first, end;
};
Piece overlap(std::int64_t start, std::int64_t count, std::int64_t k, std::int64_t half) {
  return {std::max(start, k * half), std::min(start + count, (k + 1) * half)};
}

// What each rank posts after the call's signature: its row of counts (AlltoallvCounts::row_of:
// n send counts, n receive counts), then its n send displacements and its n receive ones.
std::size_t posted_values(int n) { return 4 * static_cast<std::size_t>(n); }

std::vector<std::int64_t> posted_row(const CollectiveArgs& a) {
  const int n = a.comm.size();
  std::vector<std::int64_t> row = AlltoallvCounts::row_of(*a.layout, n);
  row.insert(row.end(), a.layout->send_displs, a.layout->send_displs + n);
  row.insert(row.end(), a.layout->recv_displs, a.layout->recv_displs + n);
  return row;
}

// Rank q's posted row, in a world of n.
const std::byte* posted_row_of(const ShmWorkspace& ws, std::uint64_t call, int q, int n) {
  return ws.posted_input(q, call, posted_values(n) * sizeof(std::int64_t));
}

// Value `i` of rank q's posted row.
std::int64_t posted_value(const ShmWorkspace& ws, std::uint64_t call, int q, int n, std::size_t i) {
  std::int64_t value;
  std::memcpy(&value, posted_row_of(ws, call, q, n) + i * sizeof value, sizeof value);
  return value;
}

// The matrix from every rank's posted row.
AlltoallvCounts posted_counts(const ShmWorkspace& ws, std::uint64_t call, int n) {
  AlltoallvCounts counts(n);
  std::vector<std::int64_t> row(2 * static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) {
    std::memcpy(row.data(), posted_row_of(ws, call, q, n), row.size() * sizeof(std::int64_t));
    counts.set_row(q, row.data());
  }
  return counts;
}

// How the call runs on the single-copy path, or nullopt when it stages: single copy not agreed,
// or the mean bytes a rank receives below the band's lower edge (single_copy_large_enough).
// (No rank's send overlaps its recv, where a peer would read what its owner overwrites:
// check_alltoallv_layout refuses such a call.) Every rank reads the same posted rows, so every
// rank decides alike. Unlike the other single-copy paths it has no upper edge: with MoE-skewed
// counts the staged rounds leave the hot rank copying most blocks out: at 64 MiB single copy
// took 21-22 ms against 30-33 staged on 4 ranks, and 9.4-9.7 (pushed) against 9.4-11.0 staged
// on 2 (Intel Xeon, 2026-12-04, docs/collectives.md row 24).
//
// Each block is copied by one of its two ends. Pulled, a rank copies what it receives; pushed,
// what it sends. The call's time is that of the rank that copies most, so it pushes when the
// largest row sum of the matrix (bytes a rank sends, its own block included) is below the
// largest column sum (bytes a rank receives): MoE dispatch, where every rank sends its tokens
// and the popular experts' ranks receive most, pushes; its combine, the transpose, pulls.
std::optional<SingleCopyPlan> single_copy_plan(const CollectiveArgs& a, const ShmWorkspace& ws, std::uint64_t call,
                                               const AlltoallvCounts& counts) {
  const int n = a.comm.size(), r = a.comm.rank();
  std::int64_t moved = 0, most_sent = 0, most_received = 0;
  for (int s = 0; s < n; ++s) {
    std::int64_t sent = 0, received = 0;
    for (int d = 0; d < n; ++d) {
      sent += counts.sent(s, d);
      received += counts.sent(d, s);
    }
    moved += sent;
    most_sent = std::max(most_sent, sent);
    most_received = std::max(most_received, received);
  }
  if (!single_copy_large_enough(ws, a.bytes(moved) / static_cast<std::size_t>(n))) return std::nullopt;
  SingleCopyPlan plan{.push = most_sent < most_received};
  // Pulled: where q's block for this rank starts in q's send; pushed: where this rank's block
  // starts in q's recv.
  const std::size_t column = (plan.push ? 3 : 2) * static_cast<std::size_t>(n) + static_cast<std::size_t>(r);
  for (int q = 0; q < n; ++q) plan.peer_displs.push_back(posted_value(ws, call, q, n, column));
  return plan;
}

// One synchronisation per round instead of exchange_rounds' two: round k waits for every
// peer's "staged k - 1", reads it, stages k into the other half and publishes "staged k". A
// peer that published "staged k - 1" has finished reading round k - 2, the last user of the
// half round k fills, so no second wait is needed. At the end every rank reads the last round
// and waits until every peer has too ("reduced"), so the next collective finds the workspace
// free. The counters stay those of ShmWorkspace::begin/end, monotonic and equal on every rank.
template <class Stage, class Read>
void run_rounds(ShmWorkspace& ws, const CollectiveArgs& a, std::int64_t rounds, const Stage& stage, const Read& read) {
  const std::uint64_t base = ws.begin(a.op, a.seq);
  const Deadline until = ws.deadline();
  for (std::int64_t k = 0; k < rounds; ++k) {
    if (k > 0) {
      ws.wait_for_peers(ShmPhase::kStaged, base + static_cast<std::uint64_t>(k), until);
      read(k - 1);
    }
    stage(k);
    ws.publish(ShmPhase::kStaged, base + static_cast<std::uint64_t>(k) + 1);
  }
  const std::uint64_t last = base + static_cast<std::uint64_t>(rounds);
  if (rounds > 0) {
    ws.wait_for_peers(ShmPhase::kStaged, last, until);
    read(rounds - 1);
    ws.publish(ShmPhase::kReduced, last);
    ws.wait_for_peers(ShmPhase::kReduced, last, until);
  }
  ws.end(static_cast<std::uint64_t>(rounds));
}

}  // namespace

bool alltoallv_shm_direct_supports(const CollectiveArgs& args) {
  // Each rank's posted row (4n int64) must fit the small slot it is posted in.
  const auto row_bytes = posted_values(args.comm.size()) * sizeof(std::int64_t);
  return ShmWorkspace::usable(args.comm) && row_bytes <= ShmWorkspace::kSmallBytes;
}

void alltoallv_shm_direct(const CollectiveArgs& a) {
  detail::CollectiveAccess access(a.comm);
  access.fabric().throw_if_poisoned();
  ShmWorkspace& ws = access.attachment<ShmWorkspace>(a.comm, a.op, a.seq);
  const AlltoallvLayout& layout = *a.layout;
  const int n = a.comm.size(), r = a.comm.rank();
  const std::vector<std::int64_t> row = posted_row(a);
  // Plain addresses, registered or not (a registered send is read like any other): no registry
  // lookup, whose lock the small calls that stage would pay.
  const ShmRegistrations addresses{.send = {.offset = shm::address_of(a.send)}, .recv = {.offset = shm::address_of(a.recv)}};
  const std::uint64_t call = ws.post_call(a, std::as_bytes(std::span(row)), addresses);
  const AlltoallvCounts counts = posted_counts(ws, call, n);
  if (std::exception_ptr error = counts.disagreement(a)) ws.fail(error);

  if (layout.send_counts[r] > 0) {
    std::memcpy(a.recv + a.bytes(layout.recv_displs[r]), a.send + a.bytes(layout.send_displs[r]),
                a.bytes(layout.send_counts[r]));
  }
  if (const std::optional<SingleCopyPlan> plan = single_copy_plan(a, ws, call, counts)) {
    alltoallv_single_copy_on(a, ws, call, *plan);
    return;
  }

  const std::size_t elem = a.elem();
  const std::int64_t half = static_cast<std::int64_t>(static_cast<std::size_t>(n) * ws.slice_bytes() / 2 / elem);
  std::vector<StreamLayout> streams;  // every sender's, for where this rank's blocks lie
  std::int64_t rounds = 0;
  for (int s = 0; s < n; ++s) {
    streams.push_back(stream_of(counts, s));
    rounds = std::max(rounds, (streams.back().total + half - 1) / half);
  }
  std::int64_t received = 0;
  for (int s = 0; s < n; ++s) received += layout.recv_counts[s];
  const CopyFunction copy_out = copy_for_output(a.bytes(received), n);
  const StreamLayout& mine = streams[static_cast<std::size_t>(r)];
  const std::size_t half_bytes = static_cast<std::size_t>(half) * elem;
  auto stage = [&](std::int64_t k) {
    const std::size_t at = static_cast<std::size_t>(k % 2) * half_bytes;
    for (int d = 0; d < n; ++d) {
      if (d == r) continue;
      const std::int64_t start = mine.start[static_cast<std::size_t>(d)];
      const Piece p = overlap(start, layout.send_counts[d], k, half);
      if (p.first >= p.end) continue;
      std::memcpy(ws.staging(r) + at + a.bytes(p.first - k * half),
                  a.send + a.bytes(layout.send_displs[d] + p.first - start), a.bytes(p.end - p.first));
    }
  };
  auto read = [&](std::int64_t k) {
    const std::size_t at = static_cast<std::size_t>(k % 2) * half_bytes;
    for (int s = 0; s < n; ++s) {
      if (s == r) continue;
      const std::int64_t start = streams[static_cast<std::size_t>(s)].start[static_cast<std::size_t>(r)];
      const Piece p = overlap(start, layout.recv_counts[s], k, half);
      if (p.first >= p.end) continue;
      copy_out(a.recv + a.bytes(layout.recv_displs[s] + p.first - start),
               ws.staging(s) + at + a.bytes(p.first - k * half), a.bytes(p.end - p.first));
    }
  };
  run_rounds(ws, a, rounds, stage, read);
}

}  // namespace braid::algorithms
