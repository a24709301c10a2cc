// The two sub-communicators hierarchical algorithms work through: this rank's host (every rank
// of the communicator on the same host, ordered by rank) and the host leaders (the lowest rank
// of each host, ordered by host; only leaders belong to it). Split once, on the first
// hierarchical collective (split is collective, and every rank enters that collective at the
// same point of the call order), then kept as a Communicator attachment.
#pragma once

#include <optional>

#include "braid/comm/communicator.h"

namespace braid {

class HostGroups : public CommAttachment {
 public:
  explicit HostGroups(Communicator& comm);

  Communicator& host() { return *host_; }
  bool is_leader() const { return leaders_.has_value(); }
  // REQUIRES: is_leader().
  Communicator& leaders() { return *leaders_; }

 private:
  std::optional<Communicator> host_;
  std::optional<Communicator> leaders_;
};

}  // namespace braid
