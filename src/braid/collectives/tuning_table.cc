#include "braid/collectives/tuning_table.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

namespace {

constexpr std::array kTunableOps{OpKind::kAllreduce, OpKind::kAllgather, OpKind::kReduceScatter, OpKind::kBroadcast,
                                 OpKind::kReduce,    OpKind::kGather,    OpKind::kScatter,       OpKind::kAlltoall,
                                 OpKind::kAlltoallv};

// The rule for an operation matched without bytes: the most frequent winner; on a tie the
// one that won the largest size (the MoE sizes braid-bench sweeps are all large).
std::vector<TuningRule> size_free_rule(OpKind op, std::span<const SizeWinner> winners, int world, int hosts) {
  std::vector<std::pair<std::string, int>> tally;  // in order of each algorithm's last win
  for (const SizeWinner& winner : winners) {
    if (winner.algorithm.empty()) continue;
    auto it = std::find_if(tally.begin(), tally.end(), [&](const auto& t) { return t.first == winner.algorithm; });
    int wins = it == tally.end() ? 0 : it->second;
    if (it != tally.end()) tally.erase(it);
    tally.emplace_back(winner.algorithm, wins + 1);
  }
  if (tally.empty()) return {};
  // max_element keeps the first of equals, so scan from the latest winner back.
  auto best = std::max_element(tally.rbegin(), tally.rend(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return {TuningRule{.op = op, .algorithm = best->first, .min_world = world, .max_world = world, .min_hosts = hosts,
                     .max_hosts = hosts}};
}

}  // namespace

bool tuned_by_bytes(OpKind op) { return op != OpKind::kAlltoallv; }

bool TuningRule::matches(const TuningKey& key) const {
  return key.op == op && key.bytes >= min_bytes && key.bytes <= max_bytes && key.world >= min_world &&
         key.world <= max_world && key.hosts >= min_hosts && key.hosts <= max_hosts;
}

std::vector<std::string_view> TuningTable::matching(const TuningKey& key) const {
  std::vector<std::string_view> names;
  for (const TuningRule& rule : rules) {
    if (rule.matches(key)) names.push_back(rule.algorithm);
  }
  return names;
}

std::span<const OpKind> tunable_ops() { return kTunableOps; }

bool parse_tunable_op(std::string_view name, OpKind& op) {
  std::optional<OpKind> found = find_op_kind(name);
  if (!found || std::find(kTunableOps.begin(), kTunableOps.end(), *found) == kTunableOps.end()) return false;
  op = *found;
  return true;
}

std::uint64_t geometric_boundary(std::uint64_t a, std::uint64_t b) {
  if (b <= a) throw InvalidArgument({.op = "tuning"}, fmt::format("sizes {} and {} are not ascending", a, b));
  // long double keeps 64 mantissa bits on x86-64, so a product of two 64-bit sizes loses
  // nothing that matters for a boundary between them.
  const long double mid = std::ceil(std::sqrt(static_cast<long double>(a) * static_cast<long double>(b)));
  const long double clamped = std::clamp(mid, static_cast<long double>(a) + 1, static_cast<long double>(b));
  return static_cast<std::uint64_t>(clamped);
}

std::vector<TuningRule> rules_from_winners(OpKind op, std::span<const SizeWinner> winners, int world, int hosts) {
  for (std::size_t i = 1; i < winners.size(); ++i) {
    if (winners[i].bytes <= winners[i - 1].bytes) {
      throw InvalidArgument({.op = "tuning"},
                            fmt::format("sizes {} and {} are not ascending", winners[i - 1].bytes, winners[i].bytes));
    }
  }
  if (!tuned_by_bytes(op)) return size_free_rule(op, winners, world, hosts);
  std::vector<TuningRule> rules;
  std::uint64_t previous = 0;  // the last size that had a winner
  for (const SizeWinner& winner : winners) {
    if (winner.algorithm.empty()) continue;
    if (!rules.empty() && winner.bytes <= previous) {
      throw InvalidArgument({.op = "tuning"}, fmt::format("sizes {} and {} are not ascending", previous, winner.bytes));
    }
    if (rules.empty() || rules.back().algorithm != winner.algorithm) {
      TuningRule rule{.op = op, .algorithm = winner.algorithm, .min_world = world, .max_world = world,
                      .min_hosts = hosts, .max_hosts = hosts};
      if (!rules.empty()) {
        rule.min_bytes = geometric_boundary(previous, winner.bytes);
        rules.back().max_bytes = rule.min_bytes - 1;
      }
      rules.push_back(std::move(rule));
    }
    previous = winner.bytes;
  }
  return rules;
}

}  // namespace braid
