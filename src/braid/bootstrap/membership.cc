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
  Membership next{.generation = current.generation + 1, .resume_step = std::numeric_limits<std::int64_t>::max()};
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
  return fmt::format("{};{};{}", m.generation, m.resume_step, fmt::join(m.members, ","));
}

Membership decode_membership(std::string_view text) {
  std::vector<std::string_view> fields = split(text, ';');
  if (fields.size() != 3 || fields[2].empty()) {
    throw Corrupt({.op = "elastic membership"},
                  fmt::format("membership record '{}' is not 'generation;step;id,id,...'", text));
  }
  Membership m{.generation = parse_int(fields[0], text), .resume_step = parse_int(fields[1], text)};
  for (std::string_view id : split(fields[2], ',')) m.members.push_back(static_cast<int>(parse_int(id, text)));
  if (!std::is_sorted(m.members.begin(), m.members.end()) ||
      std::adjacent_find(m.members.begin(), m.members.end()) != m.members.end()) {
    throw Corrupt({.op = "elastic membership"}, fmt::format("membership record '{}': ids not strictly ascending", text));
  }
  return m;
}

std::string dead_member_key(int id) { return fmt::format("elastic/dead/{}", id); }

Membership agree_on_survivors(StoreClient& store, const Membership& current, int id, std::int64_t last_step,
                              Seconds settle, Deadline deadline) {
  store.set(arrived_key(current.generation, id), std::to_string(last_step), deadline);
  const Deadline settled = Deadline::after(settle);
  while (!settled.expired() && !everyone_accounted_for(store, current, id, deadline)) {
    std::this_thread::sleep_for(kPollInterval);
  }
  const std::string members_key = generation_key(current.generation + 1, "members");
  if (store.add(generation_key(current.generation, "decider"), 1, deadline) == 1) {
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
