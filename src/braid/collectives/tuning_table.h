// The data the tuner chooses algorithms from ("selection is data", STYLE.md principle 4): an
// ordered list of rules, each mapping (operation, message bytes, world size, host count)
// ranges to an algorithm name, like UCC's score table keyed by message range. Rules are
// consulted in order; the tuner takes the first matching rule whose algorithm exists and
// supports the call (tuner.h), so a table may name algorithms a build does not have.
//
// Also here: turning per-size measurements into rules (what `braid-bench --tune` writes), a
// pure function so that it can be tested without running anything.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "braid/transport/envelope.h"

namespace braid {

inline constexpr std::uint64_t kNoByteLimit = std::numeric_limits<std::uint64_t>::max();
inline constexpr int kNoRankLimit = std::numeric_limits<int>::max();

// What a rule is matched against. `bytes` is selection_bytes() of the call (tuner.h): the
// size braid-bench prints for that operation.
struct TuningKey {
  OpKind op;
  std::uint64_t bytes = 0;
  int world = 1;
  int hosts = 1;
};

// One rule; every range is inclusive at both ends.
struct TuningRule {
  OpKind op;
  std::string algorithm;
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = kNoByteLimit;
  int min_world = 1;
  int max_world = kNoRankLimit;
  int min_hosts = 1;
  int max_hosts = kNoRankLimit;

  bool matches(const TuningKey& key) const;
  friend bool operator==(const TuningRule&, const TuningRule&) = default;
};

struct TuningTable {
  std::vector<TuningRule> rules;  // first match wins (after skipping unusable algorithms)

  // The algorithms of every rule matching `key`, in table order.
  std::vector<std::string_view> matching(const TuningKey& key) const;
};

// The collective operations a table may name, with their names as op_kind_name() spells them.
std::span<const OpKind> tunable_ops();
// Whether rules for `op` may bound bytes. alltoallv's may not: its per-rank totals differ
// (uneven counts), and every rank must pick the same algorithm without a message, so its
// calls are matched with 0 bytes (selection_bytes, tuner.h) and its rules only by world size
// and host count.
bool tuned_by_bytes(OpKind op);
// The OpKind of a tunable operation's name ("allreduce"), or false.
bool parse_tunable_op(std::string_view name, OpKind& op);

// The fastest algorithm measured at one message size.
struct SizeWinner {
  std::uint64_t bytes;
  std::string algorithm;
};

// Rules for `op` on exactly this world size and host count from winners sorted by ascending
// bytes: consecutive sizes with the same winner merge into one range; a boundary between two
// measured sizes a < b lies at their geometric midpoint ceil(sqrt(a*b)) (kept in (a, b]), the
// natural middle on the log-scale sweep; the first range starts at 0 and the last is
// open-ended. Winners with an empty algorithm (nothing measured) are ignored.
// For an operation not tuned_by_bytes: one rule for every size, the algorithm that won the most
// sizes (a tie goes to the one winning the largest of them).
// REQUIRES: bytes strictly ascending (InvalidArgument otherwise).
std::vector<TuningRule> rules_from_winners(OpKind op, std::span<const SizeWinner> winners, int world, int hosts);

// The boundary rules_from_winners puts between measured sizes a < b: the smallest size of
// the upper range (InvalidArgument unless a < b).
std::uint64_t geometric_boundary(std::uint64_t a, std::uint64_t b);

}  // namespace braid
