#include "braid/plan/estimate.h"

#include <cmath>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::plan {

const char* unit_name(Unit unit) {
  switch (unit) {
    case Unit::kBytes: return "bytes";
    case Unit::kSeconds: return "seconds";
    case Unit::kCount: return "count";
    case Unit::kRatio: return "ratio";
    case Unit::kFlops: return "flop";
    case Unit::kBytesPerSecond: return "bytes/s";
  }
  return "?";
}

std::string num(double value) {
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
    return fmt::format("{}", static_cast<long long>(value));
  }
  return fmt::format("{:.6g}", value);
}

const Estimate& find_estimate(const Estimates& list, const std::string& name) {
  for (const Estimate& e : list) {
    if (e.name == name) return e;
  }
  throw InvalidArgument({.op = "plan"}, fmt::format("no estimate named '{}'", name));
}

}  // namespace braid::plan
