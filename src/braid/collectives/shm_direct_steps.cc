#include "braid/collectives/shm_direct_steps.h"

#include <algorithm>

#include "braid/collectives/exchange.h"
#include "braid/comm/communicator_internal.h"
#include "braid/transport/fabric.h"

namespace braid::algorithms {

ShmWorkspace& shm_workspace_of(const CollectiveArgs& args) {
  detail::CollectiveAccess access(args.comm);
  access.fabric().throw_if_poisoned();
  return access.attachment<ShmWorkspace>(args.comm, args.op, args.seq);
}

ShmBlockRounds::ShmBlockRounds(const CollectiveArgs& args, ShmWorkspace& ws)
    : a_(args), ws_(ws), n_(args.comm.size()), r_(args.comm.rank()),
      sub_bytes_((ws.slice_bytes() / 2) / args.elem() * args.elem()),
      chunk_(static_cast<std::int64_t>(sub_bytes_ / args.elem())) {}

std::int64_t ShmBlockRounds::elements(std::int64_t round) const { return std::min(chunk_, a_.count - first(round)); }

void ShmBlockRounds::stage(std::int64_t round, std::size_t half) const {
  const std::size_t offset = a_.bytes(first(round)), bytes = a_.bytes(elements(round));
  for (int q = 0; q < n_; ++q) {
    if (q != r_) std::memcpy(sub_chunk(r_, q, half), block_at(a_, a_.send, q) + offset, bytes);
  }
}

void ShmBlockRounds::run(const ShmWorkspace::RoundStep& read) {
  ws_.begin(a_.op, a_.seq);
  const std::int64_t rounds = (a_.count + chunk_ - 1) / chunk_;
  ws_.exchange_rounds(rounds, static_cast<std::size_t>(n_) * sub_bytes_,
                      [&](std::int64_t round, std::size_t half) { stage(round, half); }, read);
}

}  // namespace braid::algorithms
