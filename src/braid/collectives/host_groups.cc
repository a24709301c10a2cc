#include "braid/collectives/host_groups.h"

namespace braid {

HostGroups::HostGroups(Communicator& comm) {
  const Topology& topology = comm.topology();
  const int host = topology.host_of(comm.rank());
  host_ = comm.split(host, comm.rank());
  leaders_ = comm.split(comm.local_rank() == 0 ? 0 : Communicator::kUndefinedColor, host);
}

}  // namespace braid
