#include "braid/bootstrap/membership.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/bootstrap/store.h"

namespace braid {

namespace {

std::string generation_key(std::int64_t generation, std::string_view what) {
  return fmt::format("elastic/gen/{}/{}", generation, what);
}
std::string arrived_key(std::int64_t generation, int id) { return generation_key(generation, fmt::format("arrived/{}", id)); }

std::int64_t parse_int(std::string_view text, std::string_view whole) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw Corrupt({.op = "elastic membership"}, fmt::format("membership record '{}': '{}' is not a count", whole, text));
  }
  return value;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// Whether every member of `current` other than `id` has arrived or been declared dead.
bool everyone_accounted_for(StoreClient& store, const Membership& current, int id, Deadline deadline) {
  for (int member : current.members) {
    if (member == id) continue;
    if (!store.check({arrived_key(current.generation, member)}, deadline) &&
        !store.check({dead_member_key(member)}, deadline)) {
      return false;
    }
  }
  return true;
}

// The decider's view: the members that arrived, resuming at the least step any of them completed.
Membership decide(StoreClient& store, const Membership& current, Deadline deadline) {
  Membership next{.generation = current.generation + 1, .resume_step = std::numeric_limits<std::int64_t>::max(),
                  .announced_admitted = current.announced_admitted};
  for (int member : current.members) {
    const std::string key = arrived_key(current.generation, member);
    if (!store.check({key}, deadline)) continue;
    next.members.push_back(member);
    next.resume_step = std::min(next.resume_step, parse_int(store.get(key, deadline), key));
  }
  return next;
}

}  // namespace

int Membership::rank_of(int id) const {
  auto it = std::find(members.begin(), members.end(), id);
  return it == members.end() ? -1 : static_cast<int>(it - members.begin());
}

std::string Membership::describe() const {
  return fmt::format("generation {}: ids {} ({} rank{}), resume at step {}", generation, fmt::join(members, ","),
                     members.size(), members.size() == 1 ? "" : "s", resume_step);
}

Membership initial_membership(int world_size) {
  Membership m;
  for (int id = 0; id < world_size; ++id) m.members.push_back(id);
  return m;
}

std::string encode_membership(const Membership& m) {
  return fmt::format("{};{};{};{}", m.generation, m.resume_step, fmt::join(m.members, ","), m.announced_admitted);
}

Membership decode_membership(std::string_view text) {
  std::vector<std::string_view> fields = split(text, ';');
  if (fields.size() < 3 || fields.size() > 4 || fields[2].empty()) {
    throw Corrupt({.op = "elastic membership"},
                  fmt::format("membership record '{}' is not 'generation;step;id,id,...;announced'", text));
  }
  Membership m{.generation = parse_int(fields[0], text), .resume_step = parse_int(fields[1], text),
               .announced_admitted = fields.size() == 4 ? parse_int(fields[3], text) : 0};
  for (std::string_view id : split(fields[2], ',')) m.members.push_back(static_cast<int>(parse_int(id, text)));
  if (!std::is_sorted(m.members.begin(), m.members.end()) ||
      std::adjacent_find(m.members.begin(), m.members.end()) != m.members.end()) {
    throw Corrupt({.op = "elastic membership"}, fmt::format("membership record '{}': ids not strictly ascending", text));
  }
  return m;
}

std::string dead_member_key(int id) { return fmt::format("elastic/dead/{}", id); }

namespace {

std::string announce_key(std::int64_t n) { return fmt::format("elastic/announce/{}", n); }
std::string admitted_key(int id) { return fmt::format("elastic/admitted/{}", id); }

// Generation g+1's record is written once, by the first member of g to take g's decider: a loss
// and a join decided at the same moment cannot write two.
bool take_decider(StoreClient& store, const Membership& current, Deadline deadline) {
  return store.add(generation_key(current.generation, "decider"), 1, deadline) == 1;
}

}  // namespace

int allocate_member_id(StoreClient& store, Deadline deadline) {
  const int id = static_cast<int>(store.add(kNextIdKey, 1, deadline) - 1);
  store.add(kIdsTakenKey, 1, deadline);
  return id;
}

void announce_newcomer(StoreClient& store, int id, Deadline deadline) {
  const std::int64_t n = store.add(kAnnouncedKey, 1, deadline);
  store.set(announce_key(n), std::to_string(id), deadline);
}

std::optional<Membership> await_admission(StoreClient& store, int id, Deadline deadline) {
  // Each poll gets its own short deadline: the wait's own deadline is checked between polls, so
  // its expiry reads as what it is, not as a slow store.
  const auto poll_deadline = [] { return Deadline::after(Seconds(10)); };
  while (!store.check({admitted_key(id)}, poll_deadline())) {
    if (store.check({kClosedKey}, poll_deadline())) return std::nullopt;
    if (deadline.expired()) {
      throw Timeout({.op = "elastic join"},
                    fmt::format("member {}: no step boundary of the running job admitted it before the deadline "
                                "(BRAID_TIMEOUT); is the job still training?",
                                id));
    }
    std::this_thread::sleep_for(kPollInterval * 5);
  }
  const std::string generation = store.get(admitted_key(id), deadline);
  Membership m = decode_membership(store.get(generation_key(parse_int(generation, generation), "members"), deadline));
  if (m.rank_of(id) < 0) {
    throw Corrupt({.op = "elastic join"}, fmt::format("member {} was admitted to {}, which does not list it", id,
                                                      m.describe()));
  }
  return m;
}

std::int64_t announced_count(StoreClient& store, Deadline deadline) { return store.add(kAnnouncedKey, 0, deadline); }

std::int64_t ids_taken(StoreClient& store, Deadline deadline) { return store.add(kIdsTakenKey, 0, deadline); }

Membership admit_newcomers(StoreClient& store, const Membership& current, int id, std::int64_t step,
                           std::int64_t announced, Deadline deadline) {
  // Arrived, as after a loss: a member deciding a loss at this moment counts this one in.
  store.set(arrived_key(current.generation, id), std::to_string(step), deadline);
  Membership next{.generation = current.generation + 1, .members = current.members, .resume_step = step,
                  .announced_admitted = announced};
  std::vector<int> newcomers;
  for (std::int64_t n = current.announced_admitted + 1; n <= announced; ++n) {
    const std::string key = announce_key(n);
    newcomers.push_back(static_cast<int>(parse_int(store.get(key, deadline), key)));
  }
  next.members.insert(next.members.end(), newcomers.begin(), newcomers.end());
  std::sort(next.members.begin(), next.members.end());
  next.members.erase(std::unique(next.members.begin(), next.members.end()), next.members.end());
  if (take_decider(store, current, deadline)) {
    store.set(generation_key(next.generation, "members"), encode_membership(next), deadline);
    for (int newcomer : newcomers) store.set(admitted_key(newcomer), std::to_string(next.generation), deadline);
  }
  return decode_membership(store.get(generation_key(next.generation, "members"), deadline));
}

Membership agree_on_survivors(StoreClient& store, const Membership& current, int id, std::int64_t last_step,
                              Seconds settle, Deadline deadline) {
  store.set(arrived_key(current.generation, id), std::to_string(last_step), deadline);
  const Deadline settled = Deadline::after(settle);
  while (!settled.expired() && !everyone_accounted_for(store, current, id, deadline)) {
    std::this_thread::sleep_for(kPollInterval);
  }
  const std::string members_key = generation_key(current.generation + 1, "members");
  if (take_decider(store, current, deadline)) {
    store.set(members_key, encode_membership(decide(store, current, deadline)), deadline);
  }
  Membership next = decode_membership(store.get(members_key, deadline));
  if (next.rank_of(id) < 0) {
    throw PeerLost({.rank = current.rank_of(id), .op = "elastic membership"},
                   fmt::format("member {} was left out of {}: it reported the loss after the survivors had agreed "
                               "(a slow rank); it leaves the job and may rejoin",
                               id, next.describe()));
  }
  return next;
}

}  // namespace braid
