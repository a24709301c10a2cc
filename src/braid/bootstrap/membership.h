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
//
// The join (docs/reliability.md#rejoin): a newcomer takes a fresh id from elastic/next_id (never
// an old one: a restarted process is a new member), announces it as elastic/announce/<n>
// (n = the job's nth announcement, counted by elastic/announced) once it is ready to train, and
// waits for elastic/admitted/<id>. At a step boundary the members agree on the count of
// announcements in one collective (the trainer's), and all call admit_newcomers: it writes
// generation g+1 = the members plus the announced newcomers, through the same decider counter as
// the agreement above, so a loss noticed at the same moment and a join never write two records
// for one generation: whichever decides first is the generation every member adopts.
#pragma once

#include <cstdint>
#include <optional>
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
  std::int64_t announced_admitted = 0;  // newcomers' announcements handled (admitted or dropped) so far

  int size() const { return static_cast<int>(members.size()); }
  int rank_of(int id) const;  // -1 when `id` is not a member
  // "generation 1: ids 0,1,3 (3 ranks), resume at step 7"
  std::string describe() const;
  bool operator==(const Membership&) const = default;
};

// The first generation: ids 0..world_size-1, step 0.
Membership initial_membership(int world_size);

// "g;step;id,id,...;announced" and back (a record without the last field has announced 0);
// decode throws Corrupt naming the text on anything malformed.
std::string encode_membership(const Membership& m);
Membership decode_membership(std::string_view text);

// Key braid-run --elastic sets when the process of member `id` ends.
std::string dead_member_key(int id);

inline constexpr Seconds kPollInterval{0.02};

// The counter of newcomers' ids; braid-run --elastic sets it to the launch world size, so the
// first newcomer is id N.
inline constexpr const char* kNextIdKey = "elastic/next_id";
// The counter of newcomers' announcements.
inline constexpr const char* kAnnouncedKey = "elastic/announced";
// The counter of ids taken (elastic/next_id counts from N, this from 0).
inline constexpr const char* kIdsTakenKey = "elastic/ids_taken";
// Set by the members when the job has finished: a newcomer still waiting leaves.
inline constexpr const char* kClosedKey = "elastic/closed";

// A newcomer's side of the join. Takes an id (allocate_member_id), announces it when ready
// (announce_newcomer), then waits until a generation admits it (await_admission): returns that
// generation's membership, or nothing when the job closed first (it finished). Throws Timeout at
// `deadline`.
int allocate_member_id(StoreClient& store, Deadline deadline);
void announce_newcomer(StoreClient& store, int id, Deadline deadline);
std::optional<Membership> await_admission(StoreClient& store, int id, Deadline deadline);

// How many announcements the job has had (read by one member; agreed by a collective).
std::int64_t announced_count(StoreClient& store, Deadline deadline);
// How many newcomers' ids were taken: more than announced_count while one is starting up.
std::int64_t ids_taken(StoreClient& store, Deadline deadline);

// The members' side, at a step boundary where they agreed that `announced` announcements exist
// (more than current.announced_admitted): generation g+1 = the members and the newcomers of the
// announcements not handled yet, resuming at `step`. Each member calls it; the first to decide
// writes the record (and the newcomers' admission keys). When a loss was decided first, that
// record wins (the newcomers wait for the next boundary) and its resume step may be earlier.
Membership admit_newcomers(StoreClient& store, const Membership& current, int id, std::int64_t step,
                           std::int64_t announced, Deadline deadline);

// Agrees, with the other survivors of `current`, on the next generation after a failure. `id`
// is this member; `last_step` the last step it completed. Throws PeerLost when the agreed
// membership leaves this member out (it arrived too late), Timeout when no decision appears
// before `deadline`.
Membership agree_on_survivors(StoreClient& store, const Membership& current, int id, std::int64_t last_step,
                              Seconds settle, Deadline deadline);

}  // namespace braid
