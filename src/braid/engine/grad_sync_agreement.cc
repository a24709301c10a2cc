// The three things every rank of a GradSync settles together, one small collective each: that
// all registered the same model (at the first finish), which parameters went without a
// gradient (so that every rank raises, not only the one that found them), and DDP's bucket
// rebuild from the order gradients became ready on rank 0. The rest of GradSync is in
// grad_sync.cc.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/fnv1a.h"
#include "braid/collectives/collectives.h"
#include "braid/engine/grad_sync.h"
#include "braid/engine/readiness_tracker.h"

namespace braid {

// Every rank registered the same parameter sizes: one allgather of a signature, at the first
// finish(). A different model on one rank would otherwise surface as a confusing size mismatch
// inside some bucket's allreduce, or not at all.
void GradSync::check_same_model() {
  Fnv1a signature;  // over the registered counts: equal on every rank that registered the same model
  for (const Param& p : params_) signature.add(p.count);
  std::uint64_t mine = signature.value();
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm_.size()));
  allgather(comm_, &mine, all.data(), 1, DType::kI64);
  for (int r = 0; r < comm_.size(); ++r) {
    if (all[static_cast<std::size_t>(r)] != mine) {
      throw Mismatch({.rank = comm_.rank(), .peer = r, .op = "GradSync::finish"},
                     fmt::format("rank {} registered other parameters (count or sizes differ from this rank's {} "
                                 "parameters)",
                                 r, params_.size()));
    }
  }
}

// Unused parameters are found per rank, but the error must be raised on every rank: one
// allgather of the counts, after every bucket has completed (with zeros for the missing
// gradients), so no rank is left waiting and the communicator stays usable.
void GradSync::agree_on_unused(const std::vector<int>& unused) {
  std::int32_t mine = static_cast<std::int32_t>(unused.size());
  std::vector<std::int32_t> all(static_cast<std::size_t>(comm_.size()));
  allgather(comm_, &mine, all.data(), 1, DType::kI32);
  auto first = std::find_if(all.begin(), all.end(), [](std::int32_t n) { return n > 0; });
  if (first == all.end()) return;
  int rank = static_cast<int>(first - all.begin());
  std::string names;
  for (std::size_t i = 0; i < unused.size() && i < 8; ++i) {
    names += fmt::format("{}'{}'", i == 0 ? "" : ", ", params_[static_cast<std::size_t>(unused[i])].name);
  }
  std::string detail = mine > 0 ? fmt::format("{} parameter(s) received no gradient this step: {}{}", mine, names,
                                               mine > 8 ? ", ..." : "")
                                : fmt::format("rank {} had {} parameter(s) without a gradient", rank, *first);
  discard_step();
  throw InvalidArgument({.rank = comm_.rank(), .peer = mine > 0 ? -1 : rank, .op = "GradSync::finish"},
                        detail + " (set GradSyncOptions::allow_unused to treat them as zero)");
}

// DDP's bucket rebuild: the order gradients really became ready on rank 0 (a permutation;
// parameters that never did are appended in registration order) is broadcast, and every rank
// plans the same buckets from it. The compression state keyed by the old buckets is dropped.
void GradSync::rebuild_from_rank0_order() {
  std::vector<std::int32_t> order(params_.size());
  if (comm_.rank() == 0) {
    MutexLock lock(mu_);
    std::vector<char> seen(params_.size(), 0);
    std::size_t next = 0;
    for (int p : tracker_->observed_order()) {
      if (!seen[static_cast<std::size_t>(p)]) order[next++] = p, seen[static_cast<std::size_t>(p)] = 1;
    }
    for (std::size_t p = 0; p < params_.size(); ++p) {
      if (!seen[p]) order[next++] = static_cast<std::int32_t>(p);
    }
  }
  broadcast(comm_, order.data(), static_cast<std::int64_t>(order.size()), DType::kI32, 0);
  std::vector<int> as_int(order.begin(), order.end());
  engine::BucketPlan rebuilt = engine::plan_buckets(param_infos(), as_int, plan_.cap_bytes);
  if (rebuilt == plan_) return;
  MutexLock lock(mu_);
  adopt_plan(std::move(rebuilt));
  state_.clear();
}

}  // namespace braid
