// Codec "randomk": k = selected_count(ratio, n) coordinates drawn from a seed that every rank
// shares for this step (Stich, Cordonnier, Jaggi, "Sparsified SGD with memory", 2018; Wangni
// et al. 2018), values scaled by n/k so that decode(encode(x)) is an unbiased estimate of x.
//
// Body: the k f32 values x[idx] * randomk_scale(n, k), idx ascending; header aux = k, seed =
// the index seed. No indices travel: the decoder regenerates them with draw_random_indices
// (random_indices.h), a pure function of (seed, n, k), which is also why the compressed
// allreduce can sum the k values densely. NaN/Inf stay NaN/Inf through the scaling; a finite
// value within a factor n/k of FLT_MAX overflows to Inf (gradients are nowhere near).
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/compress/codec_impl.h"
#include "braid/compress/random_indices.h"

namespace braid::compress {

namespace {

class RandomKCodec final : public Codec {
 public:
  explicit RandomKCodec(const CodecSpec& spec) : Codec(spec) {}

  std::size_t max_encoded_bytes(std::int64_t count, Shape shape) const override {
    check_shape(count, shape);
    check_index_range(count, CodecId::kRandomK);
    return kPayloadHeaderBytes + static_cast<std::size_t>(selected_count(spec().ratio, count)) * sizeof(float);
  }

  std::size_t encode(std::span<const float> x, Shape shape, const EncodeOptions& options, std::span<std::byte> out,
                     std::span<float> decoded) const override {
    auto n = static_cast<std::int64_t>(x.size());
    check_shape(n, shape);
    check_index_range(n, CodecId::kRandomK);
    check_decoded_length(x, decoded, CodecId::kRandomK);
    enforce_finite(x, options.non_finite, CodecId::kRandomK);
    std::int64_t k = selected_count(spec().ratio, n);
    std::vector<std::uint32_t> indices(static_cast<std::size_t>(k));
    draw_random_indices(options.seed, n, k, indices);
    float scale = k > 0 ? randomk_scale(n, k) : 0.0f;

    std::byte* body = body_of(out).data();  // no alignment guarantee: values go in through memcpy
    if (!decoded.empty()) std::fill(decoded.begin(), decoded.end(), 0.0f);
    for (std::size_t j = 0; j < indices.size(); ++j) {
      float value = x[indices[j]] * scale;
      std::memcpy(body + j * sizeof(float), &value, sizeof(float));
      if (!decoded.empty()) decoded[indices[j]] = value;
    }
    return finish_payload({.codec = CodecId::kRandomK,
                           .count = x.size(),
                           .aux = static_cast<std::uint64_t>(k),
                           .seed = options.seed},
                          options, indices.size() * sizeof(float), out);
  }

  void decode(std::span<const std::byte> payload, std::span<float> out, DecodeMode mode) const override {
    PayloadHeader header = expect_header(payload, CodecId::kRandomK, out.size());
    if (header.block != 0) corrupt_payload(CodecId::kRandomK, "unused header field block is not zero");
    if (header.aux > header.count) {
      corrupt_payload(CodecId::kRandomK, fmt::format("k = {} exceeds the element count {}", header.aux, header.count));
    }
    if (header.count > std::numeric_limits<std::uint32_t>::max()) {
      corrupt_payload(CodecId::kRandomK, fmt::format("element count {} does not fit 32-bit indices", header.count));
    }
    auto k = static_cast<std::size_t>(header.aux);
    BRAID_CHECK_EQ(header.payload_bytes, k * sizeof(float), Corrupt, {.op = "decode"},
                   "compressed payload (randomk): body bytes for k = {}", k);
    std::vector<std::uint32_t> indices(k);
    draw_random_indices(header.seed, static_cast<std::int64_t>(header.count), static_cast<std::int64_t>(k), indices);
    const std::byte* values = body_of(payload).data();
    if (mode == DecodeMode::kOverwrite) std::fill(out.begin(), out.end(), 0.0f);
    for (std::size_t j = 0; j < k; ++j) {
      float value;
      std::memcpy(&value, values + j * sizeof(float), sizeof(float));
      if (mode == DecodeMode::kOverwrite) {
        out[indices[j]] = value;
      } else {
        out[indices[j]] += value;
      }
    }
  }
};

}  // namespace

std::unique_ptr<Codec> make_randomk_codec(const CodecSpec& spec) { return std::make_unique<RandomKCodec>(spec); }

}  // namespace braid::compress
