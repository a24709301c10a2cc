// An elastic job's communicator: the generation of ranks alive now, rebuilt over the survivors
// when a rank is lost, without restarting any process (braid's own shrink; NCCL's
// ncclCommShrink and ULFM's MPI_Comm_shrink are the anchors). docs/reliability.md#elastic-recovery.
//
//   braid::ElasticGroup group = braid::ElasticGroup::join();     // under braid-run --elastic
//   for (;;) {
//     try { step(group.comm()); }
//     catch (const braid::PeerLost&) { group.shrink(last_step); restore(group.membership().resume_step); }
//   }
//
// The store is braid-run's (it must outlive any rank, rank 0 included), so join() needs the
// environment braid-run --elastic sets (BRAID_ELASTIC). Generation g's World rendezvouses under
// the key prefix "gen/<g>/" (bootstrap/prefixed_store.h), through its own store connection.
//
// A newcomer (BRAID_ELASTIC_JOIN set: a process braid-run --max-restarts started again, or one
// started by hand) is not in generation 0: is_newcomer() says so, and join_running() announces
// it and returns once a step boundary of the running members admitted it (membership.h). The
// members call admit() at a boundary where they agreed, in one collective, on announced_count().
//
// Thread-safety: one thread at a time, as a Communicator.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "braid/base/clock.h"
#include "braid/bootstrap/rank_discovery.h"
#include "braid/comm/communicator.h"
#include "braid/bootstrap/membership.h"

namespace braid {

class StoreClient;

class ElasticGroup {
 public:
  // Joins generation 0 of the job braid-run --elastic describes. Throws InvalidArgument naming
  // BRAID_ELASTIC when the job was not started that way.
  static ElasticGroup join();
  // Whether this process is a newcomer (BRAID_ELASTIC_JOIN is set).
  static bool is_newcomer();
  // A newcomer's join: takes its member id (the members may wait for it: --rejoin-wait), runs
  // `prepare` (what it can do alone: load the data, build the model), announces itself, waits
  // for admission (up to BRAID_TIMEOUT) and connects. Nothing when the job finished first.
  static std::optional<ElasticGroup> join_running(const std::function<void()>& prepare);

  ElasticGroup(ElasticGroup&&) noexcept;
  ElasticGroup& operator=(ElasticGroup&&) noexcept;
  ~ElasticGroup();

  Communicator& comm() { return *comm_; }
  const Membership& membership() const { return membership_; }
  int id() const { return info_.rank; }  // this process's member id: its launch rank, or a newcomer's new id
  int min_ranks() const { return min_ranks_; }

  // Call after a collective of comm() failed with PeerLost or Timeout; `last_step` is the last
  // step this rank completed. Drops the failed communicator, agrees on the survivors
  // (membership.h) and connects them; agrees again if a rank is lost during that. Throws
  // PeerLost when fewer than min_ranks() survive, or when the survivors left this rank out.
  const Membership& shrink(std::int64_t last_step);

  // The count of newcomers' announcements in the store (read by one member, then agreed).
  std::int64_t announced_count();
  // How many newcomers took an id (more than announced_count() while one is starting up).
  std::int64_t ids_taken();
  // At a step boundary where every member agreed on `announced` (> membership().announced_admitted):
  // drops this generation's communicator and connects the next one with the newcomers (or the one
  // a loss decided at the same moment: its resume step may be earlier than `step`). A failure to
  // connect is the caller's PeerLost / Timeout, recovered by shrink().
  const Membership& admit(std::int64_t step, std::int64_t announced);
  // Tells newcomers still waiting that the job has finished.
  void close();

 private:
  ElasticGroup(RankInfo info, int min_ranks, std::shared_ptr<StoreClient> store);
  static ElasticGroup open_store();
  void connect();  // builds comm_ for membership_

  RankInfo info_;
  int min_ranks_ = 1;
  std::shared_ptr<StoreClient> store_;  // the membership's own connection to braid-run's store
  Membership membership_;
  std::optional<Communicator> comm_;
};

}  // namespace braid
