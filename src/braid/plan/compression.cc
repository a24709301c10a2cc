#include "braid/plan/compression.h"

#include <charconv>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/plan/units.h"

namespace braid::plan {

namespace {

[[noreturn]] void bad(std::string_view field, std::string_view text, std::string_view why) {
  throw InvalidArgument({.op = "braid-plan"},
                        fmt::format("{}: '{}' {} (none, fp16, bf16, int8[:B], sign[:B], topk:R, randomk:R, "
                                    "powersgd:r)",
                                    field, text, why));
}

}  // namespace

CompressionSpec parse_compression(std::string_view text, std::string_view field) {
  CompressionSpec spec;
  const std::size_t colon = text.find(':');
  spec.codec = std::string(text.substr(0, colon));
  const bool has_parameter = colon != std::string_view::npos;
  if (has_parameter) {
    std::string_view p = text.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), spec.parameter);
    if (ec != std::errc() || ptr != p.data() + p.size()) bad(field, text, "has an unreadable parameter");
  }
  if (spec.codec == "none" || spec.codec == "fp16" || spec.codec == "bf16") {
    if (has_parameter) bad(field, text, "takes no parameter");
  } else if (spec.codec == "int8" || spec.codec == "sign") {
    if (!has_parameter) spec.parameter = 1024;
    if (spec.parameter < 1 || spec.parameter > (1 << 24)) bad(field, text, "needs a block size in [1, 2^24]");
  } else if (spec.codec == "topk" || spec.codec == "randomk") {
    if (!has_parameter) spec.parameter = 0.01;
    if (!(spec.parameter > 0 && spec.parameter <= 1)) bad(field, text, "needs a ratio R in (0, 1]");
  } else if (spec.codec == "powersgd") {
    if (!has_parameter) spec.parameter = 4;
    if (spec.parameter < 1 || spec.parameter > 4096) bad(field, text, "needs a rank in [1, 4096]");
  } else {
    bad(field, text, "is not a codec");
  }
  return spec;
}

std::string compression_name(const CompressionSpec& spec) {
  if (spec.codec == "none" || spec.codec == "fp16" || spec.codec == "bf16") return spec.codec;
  return fmt::format("{}:{}", spec.codec, num(spec.parameter));
}

Estimate compressed_dp_bytes(const CompressionSpec& spec, double params, double grad_bytes, int dp, double hidden) {
  require_range("dp", dp, 1, 1 << 24);
  require_range("params", params, 0, 1e16);
  const double share = (dp - 1.0) / dp;
  const std::string name = compression_name(spec);
  if (spec.codec == "topk") {
    const double per_rank = (dp - 1.0) * 8 * spec.parameter * params;
    return {"dp_bytes_per_rank", per_rank, Unit::kBytes, "(dp-1) x 8 R x Phi  (sparse allgather of index + value)",
            fmt::format("({}-1) x 8 x {} x {} B [{}]", dp, num(spec.parameter), num(params), name)};
  }
  double element = grad_bytes;
  std::string element_text = num(grad_bytes);
  if (spec.codec == "fp16" || spec.codec == "bf16") {
    element = 2, element_text = num(2);
  } else if (spec.codec == "int8") {
    element = 1 + 4 / spec.parameter, element_text = fmt::format("(1 + 4/{})", num(spec.parameter));
  } else if (spec.codec == "sign") {
    element = 0.125 + 4 / spec.parameter, element_text = fmt::format("(1/8 + 4/{})", num(spec.parameter));
  } else if (spec.codec == "randomk") {
    element = 4 * spec.parameter, element_text = fmt::format("4 x {}", num(spec.parameter));
  } else if (spec.codec == "powersgd") {
    require_range("hidden", hidden, 1, 1e8);
    element = 8 * spec.parameter / hidden, element_text = fmt::format("8 x {} / {}", num(spec.parameter), num(hidden));
  }
  return {"dp_bytes_per_rank", 2 * share * params * element, Unit::kBytes,
          "2 (dp-1)/dp x Phi x wire bytes per element",
          fmt::format("2 x ({}-1)/{} x {} x {} B [{}]", dp, dp, num(params), element_text, name)};
}

}  // namespace braid::plan
