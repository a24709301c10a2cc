#include "braid/collectives/host_groups.h"

namespace braid {

HostGroups::HostGroups(Communicator& comm) {
  const Topology& topology = comm.topology();
  const int host = topology.host_of(comm.rank());
  host_ = comm.split(host, comm.rank());
  leaders_ = comm.split(comm.local_rank() == 0 ? 0 : Communicator::kUndefinedColor, host);
  // Every rank sees the same topology, so every rank takes the same branch.
  if (topology.uniform_ranks_per_host() > 0) stripe_ = comm.split(comm.local_rank(), host);
}

}  // namespace braid
