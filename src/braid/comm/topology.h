// Which ranks of a communicator share a host. Host identity comes from BRAID_HOST_ID, or the
// machine's hostname + boot id; ranks with equal ids talk over shared memory.
#pragma once

#include <string>
#include <vector>

namespace braid {

class Topology {
 public:
  Topology() = default;
  // host_ids[r] is rank r's host identity. Hosts are numbered by their lowest rank.
  explicit Topology(const std::vector<std::string>& host_ids);

  int num_hosts() const { return static_cast<int>(ranks_of_host_.size()); }
  int host_of(int rank) const { return host_of_rank_[static_cast<std::size_t>(rank)]; }
  // Ranks on host `host`, ascending.
  const std::vector<int>& ranks_on_host(int host) const { return ranks_of_host_[static_cast<std::size_t>(host)]; }
  bool same_host(int a, int b) const { return host_of(a) == host_of(b); }
  // Position of `rank` among the ranks of its host, and their number.
  int local_rank(int rank) const;
  int local_size(int rank) const { return static_cast<int>(ranks_on_host(host_of(rank)).size()); }
  // The number of ranks on each host when every host holds the same number, else 0.
  int uniform_ranks_per_host() const;

  // The topology of a subset of ranks (members[i] is the parent rank of new rank i).
  Topology subset(const std::vector<int>& members) const;

 private:
  std::vector<int> host_of_rank_;
  std::vector<std::vector<int>> ranks_of_host_;
  std::vector<std::string> host_ids_;
};

}  // namespace braid
