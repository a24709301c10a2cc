#include "braid/serving/peer_watch.h"

#include "braid/comm/communicator_internal.h"
#include "braid/serving/kv_stream_spec.h"
#include "braid/transport/envelope.h"
#include "braid/transport/fabric.h"

namespace braid::serving {

void PeerWatch::check(std::span<const int> awaited) {
  last_ = std::chrono::steady_clock::now();
  world_ranks_.clear();
  for (int rank : awaited) world_ranks_.push_back(comm_.world_rank(rank));
  // No message is ever sent with this tag: the check only looks for lost peers and aborts.
  const MatchKey quiet{.comm_id = comm_.id(), .channel = Channel::kUser, .tag = static_cast<std::uint32_t>(kHeaderTag + 1)};
  detail::CollectiveAccess(comm_).fabric().check_health(world_ranks_, {.rank = comm_.rank(), .op = op_}, quiet);
}

}  // namespace braid::serving
