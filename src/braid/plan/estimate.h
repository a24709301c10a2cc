// One computed quantity of the planner together with how it was computed. Every calculator in
// braid::plan returns Estimates rather than bare doubles, so that the same call feeds the table
// (name, value, unit), the JSON (all fields) and `braid-plan --explain` (the formula with the
// numbers substituted), and the three can never disagree.
#pragma once

#include <string>
#include <vector>

namespace braid::plan {

enum class Unit { kBytes, kSeconds, kCount, kRatio, kFlops, kBytesPerSecond };

const char* unit_name(Unit unit);  // "bytes", "seconds", ...

struct Estimate {
  std::string name;         // stable key, e.g. "dp_allreduce_bytes_per_rank"
  double value = 0;
  Unit unit = Unit::kCount;
  std::string formula;      // symbolic, e.g. "2 (n-1)/n x S"
  std::string substituted;  // the formula with the inputs written in, e.g. "2 x (8-1)/8 x 1.4e+10 B"
};

using Estimates = std::vector<Estimate>;

// A number written compactly for a substituted formula: integers as integers, the rest with
// six significant digits ("14", "0.875", "1.4e+10").
std::string num(double value);

// The estimate called `name` in `list`; throws InvalidArgument if there is none (a planner bug
// or a caller asking for a quantity that does not apply).
const Estimate& find_estimate(const Estimates& list, const std::string& name);

}  // namespace braid::plan
