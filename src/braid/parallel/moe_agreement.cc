#include "braid/parallel/moe_agreement.h"

#include <fmt/format.h>

#include <bit>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"

namespace braid::parallel {
namespace {

std::string show(const AgreedField& field, std::int64_t value) {
  return field.as_double ? fmt::format("{}", std::bit_cast<double>(value)) : fmt::format("{}", value);
}

}  // namespace

AgreedField agreed_double(const char* name, double value) {
  return {.name = name, .value = std::bit_cast<std::int64_t>(value), .as_double = true};
}

void agree_on_fields(Communicator& group, std::span<const AgreedField> fields, const std::string& op) {
  const auto n = static_cast<std::int64_t>(fields.size());
  std::vector<std::int64_t> mine;
  for (const AgreedField& f : fields) mine.push_back(f.value);
  std::vector<std::int64_t> all(static_cast<std::size_t>(n * group.size()));
  allgather(group, mine.data(), all.data(), n, DType::kI64);
  std::string differences;
  for (std::int64_t i = 0; i < n; ++i) {
    const AgreedField& field = fields[static_cast<std::size_t>(i)];
    bool differs = false;
    for (int r = 1; r < group.size(); ++r) differs = differs || all[static_cast<std::size_t>(r * n + i)] != all[static_cast<std::size_t>(i)];
    if (!differs) continue;
    differences += differences.empty() ? "" : "; ";
    differences += fmt::format("{}:", field.name);
    for (int r = 0; r < group.size(); ++r) {
      differences += fmt::format("{} rank {} has {}", r == 0 ? "" : ",", r, show(field, all[static_cast<std::size_t>(r * n + i)]));
    }
  }
  if (!differences.empty()) {
    throw Mismatch({.rank = group.rank(), .op = op}, fmt::format("ranks disagree on {}", differences));
  }
}

}  // namespace braid::parallel
