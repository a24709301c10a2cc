#include "braid/comm/topology.h"

#include <algorithm>
#include <map>

namespace braid {

Topology::Topology(const std::vector<std::string>& host_ids) : host_ids_(host_ids) {
  std::map<std::string, int> host_index;
  host_of_rank_.resize(host_ids.size());
  for (std::size_t r = 0; r < host_ids.size(); ++r) {
    auto [it, inserted] = host_index.try_emplace(host_ids[r], static_cast<int>(ranks_of_host_.size()));
    if (inserted) ranks_of_host_.emplace_back();
    host_of_rank_[r] = it->second;
    ranks_of_host_[static_cast<std::size_t>(it->second)].push_back(static_cast<int>(r));
  }
}

int Topology::local_rank(int rank) const {
  const auto& peers = ranks_on_host(host_of(rank));
  return static_cast<int>(std::find(peers.begin(), peers.end(), rank) - peers.begin());
}

Topology Topology::subset(const std::vector<int>& members) const {
  std::vector<std::string> ids;
  ids.reserve(members.size());
  for (int m : members) ids.push_back(host_ids_[static_cast<std::size_t>(m)]);
  return Topology(ids);
}

int Topology::uniform_ranks_per_host() const {
  if (ranks_of_host_.empty()) return 0;
  const std::size_t per_host = ranks_of_host_.front().size();
  for (const auto& ranks : ranks_of_host_) {
    if (ranks.size() != per_host) return 0;
  }
  return static_cast<int>(per_host);
}

}  // namespace braid
