// braid-run --elastic's store: served by braid-run itself rather than by rank 0, so that it
// outlives any rank, and told by braid-run which rank processes have ended (the survivors'
// membership agreement, bootstrap/membership.h, waits for those reports).
#pragma once

#include <memory>

#include "braid/bootstrap/store.h"
#include "braid/tools/braid_run/job_environment.h"

namespace braid::launcher {

class ElasticStore {
 public:
  // Listens on the job's master address and port, with its token. Newcomers' member ids
  // start at `world_size` (bootstrap/membership.h).
  ElasticStore(const JobIdentity& identity, int world_size);

  // A fresh member id for a restarted process (--max-restarts): never its old one.
  int allocate_member_id();

  // Publishes that the process of rank `rank` has ended (bootstrap/membership.h's dead_member_key).
  void declare_dead(int rank);

 private:
  StoreServer server_;
  StoreClient client_;  // braid-run's own connection, for the death reports
};

}  // namespace braid::launcher
