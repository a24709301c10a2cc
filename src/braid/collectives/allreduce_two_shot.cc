// Allreduce two_shot: reduce_scatter then allgather through the same call slots of the
// shared-memory workspace (shm_workspace.h), for the mid-sized messages where one_shot's n reads
// per element cost more than a second synchronisation. Per round of up to
// ShmWorkspace::kFastBytes:
//
//   1. every rank writes its input into its call slot, behind the signature, and publishes
//      (kPosted), as one_shot does;
//   2. rank r reduces block r (ring::block) of every rank's input, in rank order, into the
//      reduced-blocks area of its own slot, and publishes (kGathered);
//   3. every rank copies every rank's reduced block into its output.
//
// Each block is reduced by one rank in rank order and copied by the others, so every rank
// holds the same bytes, and the same as one_shot's. A slot is rewritten two calls later: by
// then every peer has posted the next call, so it has finished step 3 of this one.
#include <algorithm>
#include <cstring>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/patterns/ring.h"
#include "braid/collectives/shm_direct_steps.h"
#include "braid/collectives/shm_workspace.h"

namespace braid::algorithms {

namespace {

void two_shot_round(const CollectiveArgs& a, ShmWorkspace& ws, std::int64_t first, std::int64_t m) {
  const std::size_t elem = a.elem();
  const int n = a.comm.size(), r = a.comm.rank();
  const std::size_t offset = static_cast<std::size_t>(first) * elem;
  const std::uint64_t call = ws.post_call(a, {a.send + offset, static_cast<std::size_t>(m) * elem});

  const ring::Block mine = ring::block(m, n, r);
  const std::size_t at = static_cast<std::size_t>(mine.offset) * elem;
  auto input = [&](int q) { return ws.posted_input(q, call, static_cast<std::size_t>(m) * elem) + at; };
  reduce_in_rank_order(ws.reduced_blocks(r, call) + at, n, input, mine.count, a.dtype, a.reduce_op);
  ws.publish(ShmPhase::kGathered, call);
  ws.wait_for_peers(ShmPhase::kGathered, call, ws.deadline());

  for (int j = 0; j < n; ++j) {
    const ring::Block b = ring::block(m, n, j);
    const std::size_t from = static_cast<std::size_t>(b.offset) * elem;
    std::memcpy(a.recv + offset + from, ws.reduced_blocks(j, call) + from, static_cast<std::size_t>(b.count) * elem);
  }
}

}  // namespace

void allreduce_two_shot(const CollectiveArgs& a) {
  ShmWorkspace& ws = shm_workspace_of(a);
  const std::int64_t per_round = static_cast<std::int64_t>(ShmWorkspace::kFastBytes / a.elem());
  for (std::int64_t first = 0; first < a.count; first += per_round) {
    two_shot_round(a, ws, first, std::min(per_round, a.count - first));
  }
}

}  // namespace braid::algorithms
