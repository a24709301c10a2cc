#include "braid/engine/collective_tracing.h"

#include <fmt/format.h>

#include "braid/collectives/collective_observer.h"
#include "braid/comm/communicator_internal.h"

namespace braid {

void trace_collectives(Communicator& comm, trace::TraceRecorder& recorder, int lane) {
  if (!recorder.enabled()) return;
  recorder.name_lane(lane, "collectives");
  detail::CollectiveAccess(comm).attachment<CollectiveObserver>().set("tracer", [&recorder, lane](const CollectiveRecord& r) {
    recorder.record_comm({.name = fmt::format("{} #{}", op_kind_name(r.op), r.seq),
                          .start_ns = r.start_ns,
                          .end_ns = r.end_ns,
                          .bytes = r.bytes,
                          .algorithm = std::string(r.algorithm),
                          .lane = lane,
                          .failed = r.failed});
  });
}

void stop_tracing_collectives(Communicator& comm) {
  if (auto* observer = detail::CollectiveAccess(comm).find_attachment<CollectiveObserver>()) observer->set("tracer", {});
}

}  // namespace braid
