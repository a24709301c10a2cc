// CompressionPolicy: which codec compresses which tensor at which step. A pure function of
// (name, element count, shape, step), so every rank, given the same options, picks the same
// codec for the same tensor — compressed collectives rely on it (the payload header still
// names the codec, and a disagreement is caught as Mismatch / Corrupt, never trusted).
//
// Decision order (first rule that applies wins):
//   1. step < warmup_steps                       -> none   (early gradients are large and
//      change fast; compressing them hurts convergence most — ../shared/seeds/000, DGC's warm-up)
//   2. an override whose pattern matches the name -> its codec (exact name or a glob with * and ?)
//   3. count < min_elements                      -> none   (a small tensor's allreduce is
//      latency-bound: compressing saves no time and costs accuracy)
//   4. the schedule's last phase with from_step <= step -> its codec (relax late in training:
//      e.g. topk:0.01 from step 0, int8 from 20000, none from 40000 — seeds/000 recommends
//      compressing early and easing off as training converges)
//   5. the default codec
// powersgd on a tensor without a 2-D shape becomes none (PowerSGD factors matrices only).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "braid/compress/codec.h"
#include "braid/compress/codec_spec.h"

namespace braid::compress {

struct CompressionPhase {
  std::int64_t from_step = 0;
  CodecSpec codec;
  bool operator==(const CompressionPhase&) const = default;
};

struct CompressionPolicyOptions {
  CodecSpec codec;                   // default codec (none: compression off)
  std::int64_t min_elements = 65536; // smaller tensors go uncompressed (256 KiB of fp32)
  std::int64_t warmup_steps = 0;     // the first steps go uncompressed
  std::vector<std::pair<std::string, CodecSpec>> overrides;  // (name or glob, codec), first match wins
  std::vector<CompressionPhase> schedule;  // ascending from_step; empty: the default codec throughout
  // Error feedback: unset follows the codec (on for biased codecs: int8, sign, topk, powersgd).
  std::optional<bool> error_feedback;
  bool momentum_correction = false;  // DGC momentum correction for topk
  float momentum = 0.9f;             // its momentum factor, in [0, 1)
};

class CompressionPolicy {
 public:
  // Throws InvalidArgument for a negative threshold or warm-up, an unsorted schedule, or a
  // momentum outside [0, 1).
  explicit CompressionPolicy(CompressionPolicyOptions options);
  CompressionPolicy() : CompressionPolicy(CompressionPolicyOptions{}) {}  // no compression

  CodecSpec choose(std::string_view name, std::int64_t count, Shape shape, std::int64_t step) const;
  // Whether `codec`'s results feed an error-feedback residual under this policy.
  bool error_feedback(const CodecSpec& codec) const;
  const CompressionPolicyOptions& options() const { return options_; }

 private:
  CompressionPolicyOptions options_;
};

// Parses a schedule written "CODEC@STEP,CODEC@STEP,..." ("topk:0.01@0,int8@20000,none@40000");
// a phase without @STEP starts at step 0. Throws InvalidArgument naming the bad phase.
std::vector<CompressionPhase> parse_compression_schedule(std::string_view text);

// Whether `name` matches `pattern` (* any run of characters, ? one character, else literal).
bool glob_match(std::string_view pattern, std::string_view name);

}  // namespace braid::compress
