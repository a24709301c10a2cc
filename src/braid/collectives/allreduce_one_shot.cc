// Allreduce one_shot: the latency-first path for small messages on one host (vLLM's and
// TensorRT-LLM's "one-shot" custom allreduce, over the shared-memory workspace of
// shm_workspace.h). Every rank writes its input once into its call slot, behind the call's
// signature, and publishes; after the one synchronisation every rank reads every rank's slot
// and reduces them itself, in rank order 0..n-1 (reduce_in_rank_order), into its output. No
// message, no second synchronisation: a rank's slot is rewritten two calls later, and every
// peer has read it by then, since it posted the next call only after reading this one.
//
// Every rank computes every element from the same bytes in the same order, so the results are
// bitwise identical on every rank (floats included) and equal to shm_direct's and two_shot's.
// Messages above ShmWorkspace::kFastBytes go in rounds of kFastBytes, one call each. Each rank
// reads n inputs per element, against two_shot's one plus a copy: one_shot wins where the
// synchronisation dominates (docs/collectives.md, "The built-in table").
//
// Allocation-free and lock-free once the workspace exists: the fast path below takes no mutex
// and allocates nothing (tests/mp/programs/fast_allreduce_rank.cc counts it).
#include <algorithm>

#include "braid/collectives/algorithms.h"
#include "braid/collectives/shm_direct_steps.h"
#include "braid/collectives/shm_workspace.h"

namespace braid::algorithms {

void allreduce_one_shot_on(const CollectiveArgs& a, ShmWorkspace& ws) {
  const std::size_t elem = a.elem();
  const std::int64_t per_round = static_cast<std::int64_t>(ShmWorkspace::kFastBytes / elem);
  const int n = a.comm.size();
  for (std::int64_t first = 0; first < a.count; first += per_round) {
    const std::int64_t m = std::min(per_round, a.count - first);
    const std::size_t offset = static_cast<std::size_t>(first) * elem;
    const std::uint64_t call = ws.post_call(a, {a.send + offset, static_cast<std::size_t>(m) * elem});
    auto input = [&](int q) { return ws.posted_input(q, call, static_cast<std::size_t>(m) * elem); };
    reduce_in_rank_order(a.recv + offset, n, input, m, a.dtype, a.reduce_op);
  }
}

void allreduce_one_shot(const CollectiveArgs& args) { allreduce_one_shot_on(args, shm_workspace_of(args)); }

}  // namespace braid::algorithms
