#include "braid/compress/compression_policy.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::compress {

namespace {

[[noreturn]] void reject(const std::string& why) { throw InvalidArgument({.op = "compression policy"}, why); }

}  // namespace

CompressionPolicy::CompressionPolicy(CompressionPolicyOptions options) : options_(std::move(options)) {
  if (options_.min_elements < 0) reject(fmt::format("min_elements {} is negative", options_.min_elements));
  if (options_.warmup_steps < 0) reject(fmt::format("warmup_steps {} is negative", options_.warmup_steps));
  if (!(options_.momentum >= 0.0f && options_.momentum < 1.0f)) {
    reject(fmt::format("momentum {} is outside [0, 1)", options_.momentum));
  }
  for (std::size_t i = 1; i < options_.schedule.size(); ++i) {
    if (options_.schedule[i].from_step <= options_.schedule[i - 1].from_step) {
      reject(fmt::format("schedule phases must start at increasing steps ({} after {})",
                         options_.schedule[i].from_step, options_.schedule[i - 1].from_step));
    }
  }
}

CodecSpec CompressionPolicy::choose(std::string_view name, std::int64_t count, Shape shape, std::int64_t step) const {
  auto matrix_only = [&](CodecSpec spec) {
    return spec.id == CodecId::kPowerSgd && !shape.is_matrix() ? CodecSpec{} : spec;
  };
  if (step < options_.warmup_steps) return {};
  for (const auto& [pattern, spec] : options_.overrides) {
    if (glob_match(pattern, name)) return matrix_only(spec);
  }
  if (count < options_.min_elements) return {};
  CodecSpec spec = options_.codec;
  for (const auto& phase : options_.schedule) {
    if (phase.from_step <= step) spec = phase.codec;
  }
  return matrix_only(spec);
}

bool CompressionPolicy::error_feedback(const CodecSpec& codec) const {
  if (codec.id == CodecId::kNone) return false;
  return options_.error_feedback.value_or(codec.biased());
}

std::vector<CompressionPhase> parse_compression_schedule(std::string_view text) {
  std::vector<CompressionPhase> phases;
  while (!text.empty()) {
    std::string_view phase = text.substr(0, text.find(','));
    text.remove_prefix(std::min(text.size(), phase.size() + 1));
    auto at = phase.find('@');
    CompressionPhase parsed{.codec = parse_codec_spec(phase.substr(0, at))};
    if (at != std::string_view::npos) {
      std::string_view step = phase.substr(at + 1);
      auto [end, ec] = std::from_chars(step.data(), step.data() + step.size(), parsed.from_step);
      if (ec != std::errc() || end != step.data() + step.size() || parsed.from_step < 0) {
        reject(fmt::format("schedule phase '{}': '{}' is not a step number", phase, step));
      }
    }
    phases.push_back(parsed);
  }
  CompressionPolicy({.schedule = phases});  // validates the order
  return phases;
}

bool glob_match(std::string_view pattern, std::string_view name) {
  // Iterative wildcard matching with one backtrack point (the last '*'): linear in practice.
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace braid::compress
