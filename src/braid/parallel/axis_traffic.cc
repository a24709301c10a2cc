#include "braid/parallel/axis_traffic.h"

#include <algorithm>

#include "braid/collectives/collective_observer.h"
#include "braid/comm/communicator_internal.h"

namespace braid::parallel {
namespace {
constexpr std::string_view kObserverKey = "axis-traffic";
}

double algorithm_bytes(OpKind op, double bytes, int ranks) {
  const double n = ranks;
  switch (op) {
    case OpKind::kAllreduce:
      return 2.0 * (n - 1) / n * bytes;
    case OpKind::kAllgather:
    case OpKind::kReduceScatter:
    case OpKind::kAlltoall:
      return (n - 1) * bytes;
    case OpKind::kAlltoallv:  // bytes: everything this rank sends, its own share included
    case OpKind::kBroadcast:
    case OpKind::kReduce:
    case OpKind::kGather:
    case OpKind::kScatter:
      return (n - 1) / n * bytes;
    case OpKind::kSendRecv:
      return bytes;
    case OpKind::kBarrier:
    case OpKind::kSplit:
      return 0;
  }
  return 0;
}

AxisTraffic::~AxisTraffic() {
  while (!watched_.empty()) unwatch(*watched_.back());
}

void AxisTraffic::watch(Communicator& comm, std::string axis) {
  add(axis, 0);  // the axis is reported even when it moves nothing
  if (comm.size() == 1) return;
  const int ranks = comm.size();
  detail::CollectiveAccess(comm).attachment<CollectiveObserver>().set(
      kObserverKey, [this, axis = std::move(axis), ranks](const CollectiveRecord& r) {
        if (!r.failed) add(axis, algorithm_bytes(r.op, static_cast<double>(r.bytes), ranks), 1e-9 * static_cast<double>(r.end_ns - r.start_ns));
      });
  watched_.push_back(&comm);
}

void AxisTraffic::unwatch(Communicator& comm) {
  auto it = std::find(watched_.begin(), watched_.end(), &comm);
  if (it == watched_.end()) return;
  if (auto* observer = detail::CollectiveAccess(comm).find_attachment<CollectiveObserver>()) {
    observer->set(kObserverKey, {});
  }
  watched_.erase(it);
}

void AxisTraffic::add_sent(std::string_view axis, double bytes) { add(std::string(axis), bytes); }

void AxisTraffic::add(const std::string& axis, double bytes, double seconds) {
  MutexLock lock(mu_);
  bytes_[axis] += bytes;
  seconds_[axis] += seconds;
}

std::map<std::string, double> AxisTraffic::take() {
  MutexLock lock(mu_);
  std::map<std::string, double> out(bytes_.begin(), bytes_.end());
  for (auto& [axis, bytes] : bytes_) bytes = 0;
  return out;
}

std::map<std::string, double> AxisTraffic::take_seconds() {
  MutexLock lock(mu_);
  std::map<std::string, double> out(seconds_.begin(), seconds_.end());
  for (auto& [axis, seconds] : seconds_) seconds = 0;
  return out;
}

}  // namespace braid::parallel
