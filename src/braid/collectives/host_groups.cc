#include "braid/collectives/host_groups.h"

namespace braid {

HostGroups::HostGroups(Communicator& comm) {
  const Topology& topology = comm.topology();
  const int host = topology.host_of(comm.rank());
  host_ = comm.split(host, comm.rank());
  leaders_ = comm.split(comm.local_rank() == 0 ? 0 : Communicator::kUndefinedColor, host);
  // Every rank sees the same topology, so every rank takes the same branch.
  bool uniform = true;
  for (int h = 1; h < topology.num_hosts(); ++h) {
    uniform = uniform && topology.ranks_on_host(h).size() == topology.ranks_on_host(0).size();
  }
  if (uniform) stripe_ = comm.split(comm.local_rank(), host);
}

}  // namespace braid
