#include "braid/collectives/fault_point.h"

#include "braid/comm/communicator_internal.h"
#include "braid/transport/fabric.h"

namespace braid {

namespace {

// Scopes open on this thread. A plain counter rather than state in the Communicator: nested
// calls run on sub-communicators, which share only the world's Fabric.
thread_local int open_scopes = 0;

}  // namespace

UserCallFaultPoint::UserCallFaultPoint(Communicator& comm, OpKind op) {
  if (open_scopes++ == 0) detail::CollectiveAccess(comm).fabric().fault_point(op);
}

UserCallFaultPoint::~UserCallFaultPoint() { --open_scopes; }

}  // namespace braid
