#include "braid/collectives/tuning_table.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

namespace {

constexpr std::array kTunableOps{OpKind::kAllreduce, OpKind::kAllgather, OpKind::kReduceScatter, OpKind::kBroadcast,
                                 OpKind::kReduce,    OpKind::kGather,    OpKind::kScatter,       OpKind::kAlltoall};

}  // namespace

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
