// What every communicator of one job shares: the rendezvous store (served by rank 0), the
// Fabric of connections to every rank, and the world's host topology. Built once by
// Communicator::init(); kept alive by the communicators that use it.
#pragma once

#include <memory>
#include <string>

#include "braid/bootstrap/key_value_store.h"
#include "braid/bootstrap/rank_discovery.h"
#include "braid/bootstrap/store.h"
#include "braid/comm/topology.h"
#include "braid/transport/fabric.h"

namespace braid {

struct World {
  RankInfo info;
  std::string job_id;  // agreed by every rank; prefixes this job's /dev/shm names
  // Declaration order is destruction order reversed: the fabric closes first, the store
  // server (rank 0) last, so no rank loses the store while it still needs it.
  std::unique_ptr<StoreServer> store_server;
  std::shared_ptr<KeyValueStore> store;  // braid's StoreClient, or the one join() was given
  Topology topology;
  std::shared_ptr<Fabric> fabric;

  // Rendezvous, host discovery and transport set-up for the job the environment describes.
  static std::shared_ptr<World> create();
  // Rendezvous through a store the caller's framework already shares (torch.distributed's
  // c10d store): `rank` of `size`, no store server, no launcher variables needed. The job
  // token is BRAID_JOB_TOKEN where set, else drawn by rank 0 and shared through `store`.
  static std::shared_ptr<World> join(int rank, int size, std::shared_ptr<KeyValueStore> store);
};

}  // namespace braid
