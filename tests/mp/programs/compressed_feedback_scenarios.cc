// Scenario `compressed-feedback`: error feedback over many steps on real ranks.
//   Conservation: what compression drops is delayed, never lost. Over T steps the sum of the
//   results plus the residuals left at the end (averaged over ranks; the two-stage scheme's
//   shard residuals counted once) equals the sum of the exact averages.
//   Checkpointing: a CompressionState saved mid-run and restored into a fresh object continues
//   with bitwise the same results as the run that never stopped.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_allreduce.h"
#include "braid/compress/compressed_call.h"
#include "compressed_inputs.h"
#include "scenario.h"

namespace braid::testing {

namespace {

using compress::CodecId;
using compress::CodecSpec;
using compress::CompressionState;

constexpr std::int64_t kRows = 40, kCols = 64;
constexpr std::size_t kCount = kRows * kCols;
constexpr int kSteps = 12;

compress::CompressedAllreduceOptions options_for(const CodecSpec& spec, std::int64_t step) {
  return {.codec = spec, .name = "w", .shape = spec.id == CodecId::kPowerSgd ? compress::Shape{kRows, kCols} : compress::Shape{},
          .step = step, .error_feedback = true};
}

bool is_two_stage(const CodecSpec& spec) {
  return spec.id == CodecId::kFp16 || spec.id == CodecId::kBf16 || spec.id == CodecId::kInt8 || spec.id == CodecId::kSign;
}

// The residuals every rank holds, as one tensor: the worker residuals averaged over ranks plus
// the shard residuals of the two-stage scheme (each shard's lives on its owner only).
std::vector<float> flat_residual(Communicator& comm, const CompressionState& state, const CodecSpec& spec) {
  std::vector<float> worker(kCount, 0.0f), shards(kCount, 0.0f);
  auto r = state.find("w", compress::kResidualRole);
  std::copy(r.begin(), r.end(), worker.begin());
  allreduce(comm, worker.data(), worker.data(), kCount, DType::kF32, ReduceOp::kAvg);
  if (is_two_stage(spec)) {  // every rank joins the allreduce, those owning an empty shard too
    auto s = state.find("w", compress::kShardResidualRole);
    auto bounds = compress::shard_bounds(kCount, comm.size(), comm.rank(), compress::two_stage_shard_align(spec));
    std::copy(s.begin(), s.end(), shards.begin() + static_cast<std::ptrdiff_t>(bounds.begin));
    allreduce(comm, shards.data(), shards.data(), kCount, DType::kF32, ReduceOp::kSum);
  }
  for (std::size_t i = 0; i < kCount; ++i) worker[i] += shards[i];
  return worker;
}

// The same under the host-striped scheme: rank j of host h keeps the worker residual of shard j
// of its host's average (averaged over the hosts: each shard has one per host) and the shard
// residual of piece h of shard j (counted once).
std::vector<float> striped_residual(Communicator& comm, const CompressionState& state, const CodecSpec& spec) {
  const std::size_t align = compress::two_stage_shard_align(spec);
  const int hosts = comm.topology().num_hosts();
  const int host = comm.topology().host_of(comm.rank());
  auto shard = compress::shard_bounds(kCount, comm.local_size(), comm.local_rank(), align);
  auto piece = compress::shard_bounds(shard.size(), hosts, host, align);
  std::vector<float> worker(kCount, 0.0f), shards(kCount, 0.0f);
  auto r = state.find("w@stripe", compress::kResidualRole);
  std::copy(r.begin(), r.end(), worker.begin() + static_cast<std::ptrdiff_t>(shard.begin));
  auto s = state.find("w@stripe", compress::kShardResidualRole);
  std::copy(s.begin(), s.end(), shards.begin() + static_cast<std::ptrdiff_t>(shard.begin + piece.begin));
  allreduce(comm, worker.data(), worker.data(), kCount, DType::kF32, ReduceOp::kSum);
  allreduce(comm, shards.data(), shards.data(), kCount, DType::kF32, ReduceOp::kSum);
  for (std::size_t i = 0; i < kCount; ++i) worker[i] = worker[i] / static_cast<float>(hosts) + shards[i];
  return worker;
}

std::vector<float> total_residual(Communicator& comm, const CompressionState& state, const CodecSpec& spec) {
  bool striped = compress::takes_host_striped(comm, {.codec = spec});
  return striped ? striped_residual(comm, state, spec) : flat_residual(comm, state, spec);
}

bool check_conservation(Communicator& comm, const CodecSpec& spec) {
  CompressionState state;
  std::vector<double> sent(kCount, 0.0), exact(kCount, 0.0);
  for (int t = 0; t < kSteps; ++t) {
    std::vector<float> data = compressed_input(100 + t, comm.rank(), kCount);
    compress::compressed_allreduce(comm, data, state, options_for(spec, t));
    auto e = exact_allreduce(100 + t, comm.size(), kCount, true);
    for (std::size_t i = 0; i < kCount; ++i) {
      sent[i] += data[i];
      exact[i] += e[i];
    }
  }
  auto left = total_residual(comm, state, spec);
  // Each step adds a few fp32 roundings of values up to 2^3 in magnitude (inputs_max), so the
  // books balance to within kSteps * 8 roundings of 8 = 2^-21 relative: 2^-13 absolute is
  // generous for that, and far below what a lost or doubled value (order 2^-3 .. 2^3) would show.
  double tolerance = kSteps * 8 * 8.0 * 0x1p-21;
  for (std::size_t i = 0; i < kCount; ++i) {
    double balance = sent[i] + left[i] - exact[i];
    if (!(std::fabs(balance) <= tolerance)) {
      RANK_SAY("FAIL rank %d: %s: element %zu: sent %.9g + residual %.9g != inputs %.9g", comm.rank(),
               compress::to_string(spec).c_str(), i, sent[i], static_cast<double>(left[i]), exact[i]);
      return false;
    }
  }
  return true;
}

bool check_restore(Communicator& comm, const CodecSpec& spec) {
  CompressionState running;
  std::vector<std::byte> image;
  std::vector<float> last;
  for (int t = 0; t < kSteps; ++t) {
    if (t == kSteps / 2) image = running.serialize();
    last = compressed_input(200 + t, comm.rank(), kCount);
    compress::compressed_allreduce(comm, last, running, options_for(spec, t));
  }
  CompressionState restored;
  restored.deserialize(image);
  std::vector<float> again;
  for (int t = kSteps / 2; t < kSteps; ++t) {
    again = compressed_input(200 + t, comm.rank(), kCount);
    compress::compressed_allreduce(comm, again, restored, options_for(spec, t));
  }
  if (std::memcmp(again.data(), last.data(), kCount * sizeof(float)) != 0 || !(restored == running)) {
    RANK_SAY("FAIL rank %d: %s: the restored run diverged from the uninterrupted one", comm.rank(),
             compress::to_string(spec).c_str());
    return false;
  }
  return true;
}

}  // namespace

int scenario_compressed_feedback(Communicator& comm, const Args&) {
  bool ok = true;
  for (const char* text : {"int8", "int8:128", "sign", "sign:256", "fp16", "topk:0.05", "randomk:0.1", "powersgd:2"}) {
    CodecSpec spec = compress::parse_codec_spec(text);
    ok = check_conservation(comm, spec) && ok;
    ok = check_restore(comm, spec) && ok;
  }
  // DGC momentum correction changes what the residual holds (momentum, not gradients), so no
  // conservation law; it must still agree across ranks and survive a restore.
  CompressionState state;
  std::vector<float> data = compressed_input(7, comm.rank(), kCount);
  compress::compressed_allreduce(comm, data, state,
                                 {.codec = compress::parse_codec_spec("topk:0.05"), .momentum_correction = true});
  if (state.find("tensor", compress::kMomentumRole).size() != kCount) {
    RANK_SAY("FAIL rank %d: momentum correction kept no momentum", comm.rank());
    ok = false;
  }
  if (!ok) return 1;
  RANK_SAY("PASS compressed-feedback");
  return 0;
}

}  // namespace braid::testing
