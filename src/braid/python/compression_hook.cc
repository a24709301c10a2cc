// ProcessGroupBraid::compressed_allreduce: the collective behind braid's DDP comm hooks.
#include "braid/python/compression_hook.h"

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
          for (std::size_t i = 0; i < pieces.size(); ++i) {
            std::span<float> data(base + pieces[i].offset, static_cast<std::size_t>(pieces[i].count));
            compress::compressed_allreduce(comm_, data, state, calls[i]);
          }
        });
      });
}

}  // namespace braid::python
