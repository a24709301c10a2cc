#include "braid/compress/codec_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::compress {

namespace {

constexpr std::string_view kNames[kNumCodecs] = {"none", "fp16", "bf16", "int8", "sign", "topk", "randomk", "powersgd"};

[[noreturn]] void reject(std::string_view text, const std::string& why) {
  throw InvalidArgument({.op = "codec spec"},
                        fmt::format("'{}': {} (expected none, fp16, bf16, int8[:block], sign[:block], topk:RATIO, "
                                    "randomk:RATIO or powersgd:RANK)",
                                    text, why));
}

double parse_ratio(std::string_view text, std::string_view param) {
  double ratio = 0.0;
  auto [end, ec] = std::from_chars(param.data(), param.data() + param.size(), ratio);
  if (ec != std::errc() || end != param.data() + param.size()) reject(text, fmt::format("'{}' is not a number", param));
  if (!(ratio > 0.0 && ratio <= 1.0)) reject(text, fmt::format("ratio {} is outside (0, 1]", param));
  return ratio;
}

std::uint32_t parse_positive(std::string_view text, std::string_view param, std::string_view what,
                             std::uint64_t max) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(param.data(), param.data() + param.size(), value);
  if (ec != std::errc() || end != param.data() + param.size() || value < 1 || value > max) {
    reject(text, fmt::format("{} '{}' must be an integer in [1, {}]", what, param, max));
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace

std::string_view codec_name(CodecId id) {
  auto index = static_cast<std::size_t>(id);
  return index < kNumCodecs ? kNames[index] : std::string_view("?");
}

bool is_valid_codec_id(std::uint8_t raw) { return raw < kNumCodecs; }

std::uint32_t CodecSpec::effective_block() const {
  if (id != CodecId::kInt8 && id != CodecId::kSign) return 0;
  return block == 0 ? kDefaultBlock : block;
}

bool CodecSpec::biased() const {
  return id == CodecId::kInt8 || id == CodecId::kSign || id == CodecId::kTopK || id == CodecId::kPowerSgd;
}

CodecSpec parse_codec_spec(std::string_view text) {
  std::string_view name = text.substr(0, text.find(':'));
  bool has_param = name.size() < text.size();
  std::string_view param = has_param ? text.substr(name.size() + 1) : std::string_view();
  CodecSpec spec;
  std::size_t index = 0;
  while (index < kNumCodecs && kNames[index] != name) ++index;
  if (index == kNumCodecs) reject(text, fmt::format("unknown codec '{}'", name));
  spec.id = static_cast<CodecId>(index);
  switch (spec.id) {
    case CodecId::kNone:
    case CodecId::kFp16:
    case CodecId::kBf16:
      if (has_param) reject(text, fmt::format("{} takes no parameter", name));
      break;
    case CodecId::kInt8:
    case CodecId::kSign:
      if (has_param) spec.block = parse_positive(text, param, "block size", kMaxBlock);
      break;
    case CodecId::kTopK:
    case CodecId::kRandomK:
      if (!has_param) reject(text, fmt::format("{} needs a ratio, e.g. {}:0.01", name, name));
      spec.ratio = parse_ratio(text, param);
      break;
    case CodecId::kPowerSgd:
      if (!has_param) reject(text, "powersgd needs a rank, e.g. powersgd:4");
      spec.rank = parse_positive(text, param, "rank", kMaxPowerSgdRank);
      break;
  }
  return spec;
}

std::string to_string(const CodecSpec& spec) {
  std::string name(codec_name(spec.id));
  switch (spec.id) {
    case CodecId::kInt8:
    case CodecId::kSign:
      return spec.block == 0 ? name : fmt::format("{}:{}", name, spec.block);
    case CodecId::kTopK:
    case CodecId::kRandomK:
      return fmt::format("{}:{}", name, spec.ratio);
    case CodecId::kPowerSgd:
      return fmt::format("{}:{}", name, spec.rank);
    default:
      return name;
  }
}

std::int64_t selected_count(double ratio, std::int64_t n) {
  if (n <= 0) return 0;
  auto k = static_cast<std::int64_t>(std::llround(ratio * static_cast<double>(n)));
  return std::clamp<std::int64_t>(k, 1, n);
}

}  // namespace braid::compress
