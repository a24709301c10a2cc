// The sub-communicators hierarchical algorithms work through: this rank's host (every rank of
// the communicator on the same host, ordered by rank), the host leaders (the lowest rank of
// each host, ordered by host; only leaders belong to it) and, when every host holds the same
// number of ranks, this rank's stripe (the ranks with the same position on their host, one
// per host, ordered by host): stripe j carries shard j of a buffer across hosts, so every
// rank of a host drives the inter-host links at once instead of the leader alone. Split once,
// on the first hierarchical collective (split is collective, and every rank enters that
// collective at the same point of the call order), then kept as a Communicator attachment.
#pragma once

#include <optional>

#include "braid/comm/communicator.h"
#include "braid/comm/communicator_internal.h"

namespace braid {

// Several hosts, each with the same number (>= 2) of ranks: where the host-striped schemes
// (allreduce_host_striped.cc, compress/compressed_allreduce_host_striped.cc) apply.
inline bool spans_uniform_hosts(const Topology& t) { return t.num_hosts() >= 2 && t.uniform_ranks_per_host() >= 2; }

// Several hosts, one of them with several ranks: where a hierarchical scheme has a hierarchy
// to use (allreduce_hierarchical.cc, alltoallv_hierarchical.cc). On the leaders' communicator
// (one rank per host) it is false, so a hierarchical algorithm cannot recurse.
inline bool spans_hierarchy(const Topology& t) {
  if (t.num_hosts() < 2) return false;
  for (int h = 0; h < t.num_hosts(); ++h) {
    if (t.ranks_on_host(h).size() > 1) return true;
  }
  return false;
}

class HostGroups : public CommAttachment {
 public:
  explicit HostGroups(Communicator& comm);

  Communicator& host() { return *host_; }
  bool is_leader() const { return leaders_.has_value(); }
  // REQUIRES: is_leader().
  Communicator& leaders() { return *leaders_; }
  // Every host holds the same number of ranks (so every rank belongs to a stripe).
  bool striped() const { return stripe_.has_value(); }
  // REQUIRES: striped().
  Communicator& stripe() { return *stripe_; }

 private:
  std::optional<Communicator> host_;
  std::optional<Communicator> leaders_;
  std::optional<Communicator> stripe_;
};

}  // namespace braid
