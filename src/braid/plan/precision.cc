#include "braid/plan/precision.h"

#include <array>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::plan {

namespace {

struct Format {
  std::string_view name;
  double bytes;
};

constexpr std::array<Format, 10> kFormats{{{"fp32", 4}, {"f32", 4}, {"tf32", 4}, {"fp16", 2}, {"f16", 2},
                                           {"bf16", 2}, {"fp8", 1}, {"int8", 1}, {"i8", 1}, {"int4", 0.5}}};

}  // namespace

double precision_bytes(std::string_view name, std::string_view field) {
  for (const Format& f : kFormats) {
    if (f.name == name) return f.bytes;
  }
  throw InvalidArgument({.op = "braid-plan"},
                        fmt::format("{}: unknown precision '{}' (fp32, tf32, fp16, bf16, fp8, int8, int4)", field, name));
}

Estimate quantisation_ratio(std::string_view from, std::string_view to, double group_size, double scale_bytes) {
  const double from_bytes = precision_bytes(from, "from");
  const double to_bytes = precision_bytes(to, "to");
  if (group_size < 0) throw InvalidArgument({.op = "braid-plan"}, "group size must be >= 0 (0: no scales)");
  const double scale_per_element = group_size > 0 ? scale_bytes / group_size : 0;
  const double ratio = (to_bytes + scale_per_element) / from_bytes;
  if (group_size > 0) {
    return {"quantisation_ratio", ratio, Unit::kRatio, "(bytes(to) + scale_bytes/group) / bytes(from)",
            fmt::format("({} + {}/{}) / {} [{} -> {}]", num(to_bytes), num(scale_bytes), num(group_size),
                        num(from_bytes), from, to)};
  }
  return {"quantisation_ratio", ratio, Unit::kRatio, "bytes(to) / bytes(from)",
          fmt::format("{} / {} [{} -> {}]", num(to_bytes), num(from_bytes), from, to)};
}

}  // namespace braid::plan
