#include "braid/tools/braid_serve/collective_meter.h"

#include <fmt/format.h>

#include "braid/base/op_kind.h"
#include "braid/collectives/collective_observer.h"

namespace braid::serve {
namespace {

constexpr const char* kKey = "braid-serve";

}  // namespace

CollectiveMeter::CollectiveMeter(Communicator& comm) : comm_(&comm) {
  detail::CollectiveAccess(comm).attachment<CollectiveObserver>().set(kKey, [this](const CollectiveRecord& r) {
    std::string name = fmt::format("{} {} {} B", op_kind_name(r.op), r.algorithm, r.bytes);
    MutexLock lock(mu_);
    total_ns_ += r.end_ns - r.start_ns;
    ++calls_[name];
  });
}

CollectiveMeter::~CollectiveMeter() {
  if (auto* observer = detail::CollectiveAccess(*comm_).find_attachment<CollectiveObserver>()) observer->set(kKey, {});
}

std::int64_t CollectiveMeter::total_ns() const {
  MutexLock lock(mu_);
  return total_ns_;
}

std::map<std::string, std::int64_t> CollectiveMeter::calls() const {
  MutexLock lock(mu_);
  return calls_;
}

}  // namespace braid::serve
