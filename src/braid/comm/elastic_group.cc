#include "braid/comm/elastic_group.h"

#include <cstdlib>

#include <fmt/format.h>

#include "braid/base/env.h"
#include "braid/base/error.h"
#include "braid/base/log.h"
#include "braid/bootstrap/prefixed_store.h"
#include "braid/bootstrap/store.h"

namespace braid {

namespace {

std::shared_ptr<StoreClient> connect_store(const RankInfo& info) {
  return std::make_shared<StoreClient>(info.master_addr, info.master_port, info.job_token, info.rank);
}

}  // namespace

ElasticGroup ElasticGroup::open_store() {
  std::optional<long long> min_ranks = env::get_int_if_set(env::kElastic);
  if (!min_ranks) {
    throw InvalidArgument({.op = "elastic join"},
                          "BRAID_ELASTIC is not set: an elastic job must be started by braid-run --elastic, whose "
                          "store outlives every rank (under plain braid-run the store leaves with rank 0)");
  }
  RankInfo info = discover_rank_info();
  std::shared_ptr<StoreClient> store = connect_store(info);
  return ElasticGroup(std::move(info), static_cast<int>(*min_ranks), std::move(store));
}

ElasticGroup ElasticGroup::join() {
  ElasticGroup group = open_store();
  group.connect();
  return group;
}

bool ElasticGroup::is_newcomer() { return env::get(env::kElasticJoin).has_value(); }

std::optional<ElasticGroup> ElasticGroup::join_running(const std::function<void()>& prepare) {
  ElasticGroup group = open_store();
  // The job's injected fault was meant for its first generation, as after a shrink.
  ::unsetenv(std::string(env::kFault.name).c_str());
  const std::string join = env::get(env::kElasticJoin).value_or("new");
  const Deadline deadline = Deadline::from_env();
  if (join == "new") {
    group.info_.rank = allocate_member_id(*group.store_, deadline);
  } else {
    std::optional<long long> id = env::get_int_if_set(env::kElasticJoin);
    if (!id || *id < 0) {
      throw InvalidArgument({.op = "elastic join"},
                            fmt::format("BRAID_ELASTIC_JOIN='{}': expected 'new' or a member id >= 0", join));
    }
    group.info_.rank = static_cast<int>(*id);
  }
  prepare();
  announce_newcomer(*group.store_, group.id(), deadline);
  std::optional<Membership> admitted = await_admission(*group.store_, group.id(), deadline);
  if (!admitted) return std::nullopt;
  group.membership_ = *admitted;
  log::info("member {}: admitted to {}", group.id(), group.membership_.describe());
  group.connect();
  return group;
}

std::int64_t ElasticGroup::announced_count() { return braid::announced_count(*store_, Deadline::from_env()); }

std::int64_t ElasticGroup::ids_taken() { return braid::ids_taken(*store_, Deadline::from_env()); }

const Membership& ElasticGroup::admit(std::int64_t step, std::int64_t announced) {
  comm_.reset();
  membership_ = admit_newcomers(*store_, membership_, id(), step, announced, Deadline::from_env());
  if (membership_.rank_of(id()) < 0) {
    throw PeerLost({.op = "elastic admit"},
                   fmt::format("member {} was left out of {}: a loss was decided while it admitted newcomers", id(),
                               membership_.describe()));
  }
  connect();
  return membership_;
}

void ElasticGroup::close() {
  try {
    store_->set(kClosedKey, "1", Deadline::after(Seconds(5)));
  } catch (const Error& e) {
    log::warn("member {}: could not tell waiting newcomers the job finished: {}", id(), e.what());
  }
}

ElasticGroup::ElasticGroup(RankInfo info, int min_ranks, std::shared_ptr<StoreClient> store)
    : info_(std::move(info)), min_ranks_(min_ranks), store_(std::move(store)),
      membership_(initial_membership(info_.world_size)) {}

ElasticGroup::ElasticGroup(ElasticGroup&&) noexcept = default;
ElasticGroup& ElasticGroup::operator=(ElasticGroup&&) noexcept = default;
ElasticGroup::~ElasticGroup() = default;

void ElasticGroup::connect() {
  // Each generation has its own store connection: the World may use its store from its own
  // threads while the membership's connection stays with this one.
  auto view = std::make_shared<PrefixedStore>(connect_store(info_), fmt::format("gen/{}/", membership_.generation));
  comm_.emplace(Communicator::init(membership_.rank_of(id()), membership_.size(), std::move(view)));
}

const Membership& ElasticGroup::shrink(std::int64_t last_step) {
  // The failed generation's connections, threads and segments go before the next one is made.
  comm_.reset();
  // An injected fault (BRAID_FAULT) is meant once per job; each World arms it again, and in the
  // next generation its rank number would name another process.
  ::unsetenv(std::string(env::kFault.name).c_str());
  const Seconds settle{env::get_double(env::kElasticSettle)};
  for (;;) {
    membership_ = agree_on_survivors(*store_, membership_, id(), last_step, settle, Deadline::from_env());
    if (membership_.size() < min_ranks_) {
      throw PeerLost({.rank = membership_.rank_of(id()), .op = "elastic shrink"},
                     fmt::format("only {} rank(s) survive ({}), fewer than --min-ranks {}", membership_.size(),
                                 membership_.describe(), min_ranks_));
    }
    try {
      connect();
      return membership_;
    } catch (const PeerLost& e) {
      log::warn("member {}: {} failed to connect ({}); agreeing again", id(), membership_.describe(), e.what());
    } catch (const Timeout& e) {
      log::warn("member {}: {} failed to connect ({}); agreeing again", id(), membership_.describe(), e.what());
    }
    comm_.reset();
  }
}

}  // namespace braid
