// Elastic membership: which of a job's processes form each generation of its communicator, agreed
// through the rendezvous store after a rank is lost (docs/reliability.md#elastic-recovery).
//
// Every process keeps one member id for its whole life: its launch rank (BRAID_RANK). A
// generation lists its members' ids in ascending order; a member's rank in that generation's
// communicator is its position in the list, so ranks stay dense after a loss.
//
// The agreement (agree_on_survivors), for a failure seen in generation g:
//   1. each survivor publishes elastic/gen/<g>/arrived/<id> = the last step it completed;
//   2. it waits, polling every kPollInterval (never spinning), until every member of g has either
//      arrived or been declared dead (elastic/dead/<id>, which braid-run --elastic sets the moment
//      the process ends), or until `settle` passes: ranks notice a loss at different times, and
//      the settle time is how long the first waits for the later ones;
//   3. the first survivor to increment elastic/gen/<g>/decider decides, from the arrivals present
//      at that moment, and writes elastic/gen/<g+1>/members; every survivor reads that one value,
//      so all adopt the same membership however their views differed.
// A merely slow member that arrives after the decision is not in it: it gets a PeerLost saying
// so and leaves (it may rejoin later) rather than joining a generation the others never wait for.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "braid/base/clock.h"

namespace braid {

class StoreClient;

struct Membership {
  std::int64_t generation = 0;
  std::vector<int> members;      // member ids, ascending: a member's rank is its position
  std::int64_t resume_step = 0;  // the step every member restarts from: the least last-completed

  int size() const { return static_cast<int>(members.size()); }
  int rank_of(int id) const;  // -1 when `id` is not a member
  // "generation 1: ids 0,1,3 (3 ranks), resume at step 7"
  std::string describe() const;
  bool operator==(const Membership&) const = default;
};

// The first generation: ids 0..world_size-1, step 0.
Membership initial_membership(int world_size);

// "g;step;id,id,..." and back; decode throws Corrupt naming the text on anything malformed.
std::string encode_membership(const Membership& m);
Membership decode_membership(std::string_view text);

// Key braid-run --elastic sets when the process of member `id` ends.
std::string dead_member_key(int id);

inline constexpr Seconds kPollInterval{0.02};

// Agrees, with the other survivors of `current`, on the next generation after a failure. `id`
// is this member; `last_step` the last step it completed. Throws PeerLost when the agreed
// membership leaves this member out (it arrived too late), Timeout when no decision appears
// before `deadline`.
Membership agree_on_survivors(StoreClient& store, const Membership& current, int id, std::int64_t last_step,
                              Seconds settle, Deadline deadline);

}  // namespace braid
