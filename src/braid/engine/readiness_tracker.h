// ReadinessTracker: during one step, which gradients are ready and which buckets may be
// launched now. Pure bookkeeping over a BucketPlan — no buffers, no communicator — so the
// launch rule below is tested exhaustively without processes (STYLE.md: PyTorch's reducer
// mixes this with the communication; here GradSync, the issuer, asks and then acts).
//
// The launch rule (DDP's reducer, "mark_bucket_ready" / next_bucket_): a bucket is launched
// only when all of its params are ready AND every lower-index bucket has been launched. The
// order in which gradients become ready may differ from rank to rank (threads, unused
// branches, autograd scheduling), but every rank must issue its collectives in the same order
// (DESIGN.md, ordering contract); launching in bucket index order gives every rank the
// sequence 0, 1, 2, ... whatever its readiness order. The cost is that a complete bucket may
// wait behind an incomplete earlier one — which is why plans are rebuilt from the observed
// order after the first step, so that index order matches the order buckets really complete.
//
// Thread-safety: none. A plain value-like class; GradSync calls it under its own mutex
// (mark_ready may come from several autograd threads at once).
#pragma once

#include <vector>

#include "braid/engine/bucket_plan.h"

namespace braid::engine {

class ReadinessTracker {
 public:
  // Copies what it needs from `plan`; the plan need not outlive the tracker.
  explicit ReadinessTracker(const BucketPlan& plan);

  // Marks `param` ready for this step and returns the buckets that may be launched now, in
  // increasing index order (usually empty or one bucket; several when this param completes a
  // bucket that later, already complete buckets were waiting behind). Every bucket is returned
  // exactly once per step. Throws InvalidArgument naming the param when it is out of range or
  // was already marked this step; the tracker is unchanged then.
  std::vector<int> mark_ready(int param);

  // Marks every still unready param (allow_unused: its gradient counts as zero), in plan order
  // (bucket by bucket, slot by slot), and returns the buckets this makes launchable, in order.
  // Afterwards all_ready() holds and every bucket has been returned once this step.
  std::vector<int> complete_unready();

  // Params in the order they were marked this step (complete_unready's appended at the end):
  // once all_ready(), a permutation of all ids, the input for the next plan_buckets.
  const std::vector<int>& observed_order() const { return observed_; }
  // Param ids never marked this step, ascending (for finish()'s "unused parameter" error).
  std::vector<int> unready_params() const;
  bool all_ready() const { return observed_.size() == ready_.size(); }
  bool bucket_complete(int bucket) const;   // InvalidArgument unless 0 <= bucket < bucket_count()
  // Buckets 0 .. launched_buckets()-1 have been returned for launch this step.
  int launched_buckets() const { return next_launch_; }
  int bucket_count() const { return static_cast<int>(missing_.size()); }
  int param_count() const { return static_cast<int>(ready_.size()); }

  // Starts a new step with the same plan.
  void reset();

 private:
  std::vector<int> bucket_of_;                   // per param
  std::vector<std::vector<int>> bucket_params_;  // per bucket, plan order
  std::vector<int> missing_;                     // per bucket: params not yet ready this step
  std::vector<bool> ready_;                      // per param
  std::vector<int> observed_;
  int next_launch_ = 0;                          // lowest bucket not yet launched
};

}  // namespace braid::engine
