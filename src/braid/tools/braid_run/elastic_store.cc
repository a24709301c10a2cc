#include "braid/tools/braid_run/elastic_store.h"

#include "braid/base/log.h"
#include "braid/bootstrap/membership.h"

namespace braid::launcher {

ElasticStore::ElasticStore(const JobIdentity& identity, int world_size)
    : server_(identity.master_addr, static_cast<std::uint16_t>(identity.master_port), identity.job_token),
      client_(identity.master_addr, server_.port(), identity.job_token, /*rank=*/-1) {
  client_.add(kNextIdKey, world_size, Deadline::after(Seconds(5)));
}

int ElasticStore::allocate_member_id() { return braid::allocate_member_id(client_, Deadline::after(Seconds(5))); }

void ElasticStore::declare_dead(int rank) {
  try {
    client_.set(dead_member_key(rank), "1", Deadline::after(Seconds(5)));
  } catch (const Error& e) {
    // The survivors then decide after their settle time instead: slower, not wrong.
    log::warn("braid-run: could not report rank {}'s end to the store: {}", rank, e.what());
  }
}

}  // namespace braid::launcher
