// ProcessGroupBraid::compressed_allreduce: the collective behind braid's DDP comm hooks.
#include "braid/python/compression_hook.h"

#include <algorithm>

#include <fmt/format.h>

#include "braid/compress/compressed_allreduce.h"
#include "braid/python/process_group_braid.h"
#include "braid/python/tensor_mapping.h"
#include "braid/python/work_adapter.h"

namespace braid::python {

std::vector<std::byte> CompressionHookResiduals::serialize() const {
  MutexLock lock(mu_);
  return state_.serialize();
}

void CompressionHookResiduals::deserialize(const std::vector<std::byte>& image) {
  MutexLock lock(mu_);
  state_.deserialize(image);
}

std::size_t CompressionHookResiduals::bytes() const {
  MutexLock lock(mu_);
  return state_.bytes();
}

namespace {

void check_pieces(const at::Tensor& buffer, const std::vector<HookPiece>& pieces, const ErrorContext& ctx) {
  for (const HookPiece& p : pieces) {
    if (p.offset < 0 || p.count < 0 || p.offset + p.count > buffer.numel()) {
      throw InvalidArgument(ctx, fmt::format("piece '{}' ({} elements at {}) lies outside the bucket's {} elements",
                                             p.name, p.count, p.offset, buffer.numel()));
    }
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::compressed_allreduce(
    const at::Tensor& buffer, std::vector<HookPiece> pieces, const std::string& codec,
    const compress::CompressionPolicyOptions& policy_options, std::int64_t step,
    std::shared_ptr<CompressionHookResiduals> residuals) {
  const ErrorContext ctx = context("compressed_allreduce");
  check_dense_cpu(buffer, ctx);
  if (buffer.scalar_type() != at::kFloat || !buffer.is_contiguous()) {
    throw InvalidArgument(ctx, "braid's comm hooks compress contiguous float32 gradient buckets");
  }
  check_pieces(buffer, pieces, ctx);
  compress::CompressionPolicyOptions options = policy_options;
  options.codec = compress::parse_codec_spec(codec);
  const compress::CompressionPolicy policy(options);
  std::vector<compress::CompressedAllreduceOptions> calls;
  for (const HookPiece& p : pieces) {
    const compress::CodecSpec chosen = policy.choose(p.name, p.count, p.shape, step);
    calls.push_back({.codec = chosen, .name = p.name, .shape = p.shape, .step = step, .average = true,
                     .error_feedback = policy.error_feedback(chosen),
                     .momentum_correction = options.momentum_correction, .momentum = options.momentum});
  }
  float* base = buffer.data_ptr<float>();
  return enqueue(c10d::OpType::ALLREDUCE, "compressed_allreduce", {buffer}, [this, buffer, pieces, calls, base, residuals] {
        residuals->with_state([&](compress::CompressionState& state) {
          std::vector<std::size_t> uncompressed;
          for (std::size_t i = 0; i < pieces.size(); ++i) {
            if (calls[i].codec.id == compress::CodecId::kNone) {
              uncompressed.push_back(i);
              continue;
            }
            std::span<float> data(base + pieces[i].offset, static_cast<std::size_t>(pieces[i].count));
            compress::compressed_allreduce(comm_, data, state, calls[i]);
          }
          allreduce_uncompressed(base, pieces, uncompressed, state);
        });
      });
}

// The pieces the policy leaves uncompressed (small ones, and all of them during the warm-up)
// in one allreduce rather than one each: over a network each collective costs a round trip
// or more, and a bucket of many biases and norms would pay it per parameter. Elementwise, the
// average is the same whichever pieces travel together.
void ProcessGroupBraid::allreduce_uncompressed(float* base, const std::vector<HookPiece>& pieces,
                                               const std::vector<std::size_t>& which,
                                               compress::CompressionState& state) {
  if (which.empty()) return;
  const compress::CompressedAllreduceOptions options{.codec = {}, .name = "uncompressed pieces", .average = true};
  // Side by side in the bucket (one piece; all of them during the warm-up): in place.
  bool adjacent = true;
  for (std::size_t k = 1; k < which.size(); ++k) {
    adjacent = adjacent && pieces[which[k]].offset == pieces[which[k - 1]].offset + pieces[which[k - 1]].count;
  }
  if (adjacent) {
    const HookPiece& first = pieces[which.front()];
    const HookPiece& last = pieces[which.back()];
    const auto count = static_cast<std::size_t>(last.offset + last.count - first.offset);
    compress::compressed_allreduce(comm_, std::span<float>(base + first.offset, count), state, options);
    return;
  }
  std::size_t total = 0;
  for (std::size_t i : which) total += static_cast<std::size_t>(pieces[i].count);
  std::vector<float> joined(total);
  std::size_t at = 0;
  for (std::size_t i : which) {
    std::copy_n(base + pieces[i].offset, pieces[i].count, joined.begin() + static_cast<std::ptrdiff_t>(at));
    at += static_cast<std::size_t>(pieces[i].count);
  }
  compress::compressed_allreduce(comm_, joined, state, options);
  at = 0;
  for (std::size_t i : which) {
    std::copy_n(joined.begin() + static_cast<std::ptrdiff_t>(at), pieces[i].count, base + pieces[i].offset);
    at += static_cast<std::size_t>(pieces[i].count);
  }
}

}  // namespace braid::python
