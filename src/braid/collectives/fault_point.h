// The fault-injection point of a collective the application calls (BRAID_FAULT,
// base/fault_spec.h): the blocking entry points (collectives.cc), the non-blocking ones at
// submission (async_collectives.cc) and compressed allreduce (compress/) open one, which
// counts as a call of its operation on this rank (transport/fabric.h: Fabric::fault_point).
// Collectives that a collective runs inside itself on the same thread (hierarchical's
// sub-communicator calls, compressed allreduce's allgathers) open nested scopes, which count
// nothing: "the nth allreduce" means the application's nth.
//
// Thread-safety: the nesting depth is per thread, so the user's thread and a collective queue's
// worker never see each other's scopes.
#pragma once

#include "braid/base/op_kind.h"
#include "braid/comm/communicator.h"

namespace braid {

class UserCallFaultPoint {
 public:
  UserCallFaultPoint(Communicator& comm, OpKind op);
  ~UserCallFaultPoint();
  UserCallFaultPoint(const UserCallFaultPoint&) = delete;
  UserCallFaultPoint& operator=(const UserCallFaultPoint&) = delete;
};

}  // namespace braid
