#include "braid/engine/readiness_tracker.h"

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/error.h"

namespace braid::engine {

namespace {

// A plan from plan_buckets is always consistent; this guards hand-made or stale plans, where a
// bucket without params would be "complete" before any gradient and an id listed twice would
// never let its bucket complete (a hang in GradSync).
void check_plan(const BucketPlan& plan) {
  std::vector<bool> listed(plan.bucket_of.size(), false);
  std::size_t count = 0;
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const std::vector<int>& params = plan.buckets[b].params;
    if (params.empty()) throw InvalidArgument({.op = "readiness tracker"}, fmt::format("bucket {} has no params", b));
    for (int p : params) {
      bool ok = p >= 0 && static_cast<std::size_t>(p) < plan.bucket_of.size() &&
                plan.bucket_of[static_cast<std::size_t>(p)] == static_cast<int>(b) &&
                !listed[static_cast<std::size_t>(p)];
      if (!ok) {
        throw InvalidArgument({.op = "readiness tracker"},
                              fmt::format("bucket {} lists param {}: out of range, listed twice, or placed "
                                          "elsewhere by bucket_of", b, p));
      }
      listed[static_cast<std::size_t>(p)] = true;
    }
    count += params.size();
  }
  BRAID_CHECK_EQ(count, plan.bucket_of.size(), InvalidArgument, {.op = "readiness tracker"},
                 "params in the buckets vs in bucket_of");
}

}  // namespace

ReadinessTracker::ReadinessTracker(const BucketPlan& plan)
    : bucket_of_(plan.bucket_of), ready_(plan.bucket_of.size(), false) {
  check_plan(plan);
  bucket_params_.reserve(plan.buckets.size());
  for (const Bucket& bucket : plan.buckets) bucket_params_.push_back(bucket.params);
  observed_.reserve(ready_.size());
  reset();
}

std::vector<int> ReadinessTracker::mark_ready(int param) {
  if (param < 0 || param >= param_count()) {
    throw InvalidArgument({.op = "mark_ready"},
                          fmt::format("param {} is out of range (the model has {} params)", param, param_count()));
  }
  auto index = static_cast<std::size_t>(param);
  if (ready_[index]) {
    throw InvalidArgument({.op = "mark_ready"}, fmt::format("param {} was already marked ready this step", param));
  }
  ready_[index] = true;
  observed_.push_back(param);
  --missing_[static_cast<std::size_t>(bucket_of_[index])];

  // Only the lowest unlaunched bucket can unblock anything: later complete buckets wait for it.
  std::vector<int> launch;
  while (next_launch_ < bucket_count() && missing_[static_cast<std::size_t>(next_launch_)] == 0) {
    launch.push_back(next_launch_++);
  }
  return launch;
}

std::vector<int> ReadinessTracker::complete_unready() {
  std::vector<int> launch;
  for (const std::vector<int>& params : bucket_params_) {
    for (int param : params) {
      if (ready_[static_cast<std::size_t>(param)]) continue;
      std::vector<int> now = mark_ready(param);
      launch.insert(launch.end(), now.begin(), now.end());
    }
  }
  return launch;
}

std::vector<int> ReadinessTracker::unready_params() const {
  std::vector<int> unready;
  for (int param = 0; param < param_count(); ++param) {
    if (!ready_[static_cast<std::size_t>(param)]) unready.push_back(param);
  }
  return unready;
}

bool ReadinessTracker::bucket_complete(int bucket) const {
  BRAID_CHECK(bucket >= 0 && bucket < bucket_count(), InvalidArgument, {.op = "bucket_complete"},
              "bucket {} of a plan with {}", bucket, bucket_count());
  return missing_[static_cast<std::size_t>(bucket)] == 0;
}

void ReadinessTracker::reset() {
  missing_.assign(bucket_params_.size(), 0);
  for (std::size_t b = 0; b < bucket_params_.size(); ++b) missing_[b] = static_cast<int>(bucket_params_[b].size());
  ready_.assign(ready_.size(), false);
  observed_.clear();
  next_launch_ = 0;
}

}  // namespace braid::engine
