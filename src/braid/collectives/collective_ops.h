// What each collective operation does at its entry point, written once for the blocking form
// (collectives.cc) and the non-blocking one (async_collectives.cc): its argument rule and the
// steps around its algorithm, one row per operation in a table (collective_ops.cc).
//
//   blocking:      run_collective(checked(comm, call), options.algorithm);
//   non-blocking:  args = checked(comm, call) at the call, run_collective(args, ...) queued.
//
// Adding an operation: its row in kOps, at its OpKind's place (the table is indexed by kind),
// and its steps function beside it; its algorithms are rows of the registry
// (algorithm_registry.cc).
#pragma once

#include <cstdint>
#include <string_view>

#include "braid/collectives/collective_args.h"

namespace braid {

// A public call's arguments as it takes them, before any check. What `count` counts is stated
// per operation in collectives.h; reduce_op and root only matter where the operation has them
// (is_reducing, is_rooted), layout only for alltoallv (count 0 there).
struct CollectiveCall {
  OpKind op;
  const void* send;
  void* recv;
  std::int64_t count = 0;
  DType dtype;
  ReduceOp reduce_op = ReduceOp::kSum;
  int root = 0;
  const AlltoallvLayout* layout = nullptr;
};

// The call's arguments once every rule a rank can check alone holds (InvalidArgument naming
// the rank and the operation otherwise), not yet numbered (seq -1) nor given an algorithm.
// Checks that need every rank's view (equal counts, dtypes, roots) happen on the wire instead:
// each message's envelope carries them and the receiver compares. args.layout points at
// *call.layout, which must outlive the result.
CollectiveArgs checked(Communicator& comm, const CollectiveCall& call);

// Runs checked arguments: numbers the collective (detail::CollectiveAccess::begin_collective), chooses its
// algorithm (choose_algorithm, tuner.h: `requested` if non-empty), then the operation's steps
// around the algorithm (this rank's block put in place, an average divided, ...). A call with
// a layout first checks that this rank's own send and receive counts agree (Mismatch).
void run_collective(CollectiveArgs args, std::string_view requested);

}  // namespace braid
