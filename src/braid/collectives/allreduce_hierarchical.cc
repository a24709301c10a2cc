// Hierarchical allreduce, for jobs spanning several hosts with several ranks each: the slow
// inter-host links carry the buffer once per host instead of once per rank. Composed of
// collectives on the sub-communicators of host_groups.h (STYLE.md: compose, don't copy):
//
//   1. reduce to the host leader within each host (shared memory),
//   2. allreduce among the host leaders (across hosts; the tuner picks the algorithm),
//   3. broadcast from the leader within each host.
//
// Each phase uses the algorithm the tuner picks for its own communicator and size. The
// leaders' allreduce leaves identical bytes on every leader and the broadcast copies them, so
// every rank ends bitwise identical. avg is summed here; the entry point divides once by the
// full world size at the end.
#include "braid/collectives/algorithms.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/host_groups.h"
#include "braid/comm/communicator_internal.h"

namespace braid::algorithms {

bool allreduce_hierarchical_supports(const CollectiveArgs& args) { return spans_hierarchy(args.comm.topology()); }

void allreduce_hierarchical(const CollectiveArgs& args) {
  HostGroups& groups = detail::CollectiveAccess(args.comm).attachment<HostGroups>(args.comm);
  const ReduceOp op = args.reduce_op == ReduceOp::kAvg ? ReduceOp::kSum : args.reduce_op;
  Communicator& host = groups.host();
  // In place on recv (the entry point copied send into it); the leader is host rank 0.
  reduce(host, args.recv, args.recv, args.count, args.dtype, op, /*root=*/0);
  if (groups.is_leader()) allreduce(groups.leaders(), args.recv, args.recv, args.count, args.dtype, op);
  broadcast(host, args.recv, args.count, args.dtype, /*root=*/0);
}

}  // namespace braid::algorithms
