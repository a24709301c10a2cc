// Codec "topk": the k = selected_count(ratio, n) elements of largest |x| as (index, value)
// pairs (Aji & Heafield 2017; Lin et al., "Deep Gradient Compression", 2018). Biased: what it
// drops is carried to the next step by error feedback, not by this stateless codec.
//
// Body: k u32 indices, strictly increasing, then the k f32 values in the same order; header
// aux = k. Values travel bit for bit, so NaN/Inf reach the receiver as they were (and the
// selection ranks NaN above everything: topk_select.h). Ascending indices make the decoder's
// validation one comparison per index and its writes a forward sweep.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/compress/codec_impl.h"
#include "braid/compress/topk_select.h"

namespace braid::compress {

namespace {

constexpr std::size_t kPairBytes = sizeof(std::uint32_t) + sizeof(float);

class TopKCodec final : public Codec {
 public:
  explicit TopKCodec(const CodecSpec& spec) : Codec(spec) {}

  std::size_t max_encoded_bytes(std::int64_t count, Shape shape) const override {
    check_shape(count, shape);
    check_index_range(count, CodecId::kTopK);
    return kPayloadHeaderBytes + static_cast<std::size_t>(selected_count(spec().ratio, count)) * kPairBytes;
  }

  std::size_t encode(std::span<const float> x, Shape shape, const EncodeOptions& options, std::span<std::byte> out,
                     std::span<float> decoded) const override {
    auto n = static_cast<std::int64_t>(x.size());
    check_shape(n, shape);
    check_index_range(n, CodecId::kTopK);
    check_decoded_length(x, decoded, CodecId::kTopK);
    enforce_finite(x, options.non_finite, CodecId::kTopK);
    std::int64_t k = selected_count(spec().ratio, n);
    std::vector<std::uint32_t> indices(static_cast<std::size_t>(k));
    select_topk(x, k, indices);

    std::byte* body = body_of(out).data();
    std::size_t index_bytes = indices.size() * sizeof(std::uint32_t);
    if (k > 0) std::memcpy(body, indices.data(), index_bytes);
    // The body has no alignment guarantee: values go in through memcpy.
    for (std::size_t j = 0; j < indices.size(); ++j) {
      std::memcpy(body + index_bytes + j * sizeof(float), &x[indices[j]], sizeof(float));
    }
    if (!decoded.empty()) {
      std::fill(decoded.begin(), decoded.end(), 0.0f);
      for (std::uint32_t index : indices) decoded[index] = x[index];
    }
    return finish_payload({.codec = CodecId::kTopK, .count = x.size(), .aux = static_cast<std::uint64_t>(k)}, options,
                          index_bytes + indices.size() * sizeof(float), out);
  }

  void decode(std::span<const std::byte> payload, std::span<float> out, DecodeMode mode) const override {
    PayloadHeader header = expect_header(payload, CodecId::kTopK, out.size());
    if (header.block != 0 || header.seed != 0) corrupt_payload(CodecId::kTopK, "unused header fields are not zero");
    if (header.aux > header.count) {
      corrupt_payload(CodecId::kTopK, fmt::format("k = {} exceeds the element count {}", header.aux, header.count));
    }
    auto k = static_cast<std::size_t>(header.aux);
    BRAID_CHECK_EQ(header.payload_bytes, k * kPairBytes, Corrupt, {.op = "decode"},
                   "compressed payload (topk): body bytes for k = {}", k);
    const std::byte* indices = body_of(payload).data();
    const std::byte* values = indices + k * sizeof(std::uint32_t);
    check_indices(indices, k, out.size());  // all of them before out is touched
    if (mode == DecodeMode::kOverwrite) std::fill(out.begin(), out.end(), 0.0f);
    for (std::size_t j = 0; j < k; ++j) {
      std::uint32_t index;
      float value;
      std::memcpy(&index, indices + j * sizeof(index), sizeof(index));
      std::memcpy(&value, values + j * sizeof(value), sizeof(value));
      if (mode == DecodeMode::kOverwrite) {
        out[index] = value;
      } else {
        out[index] += value;
      }
    }
  }

 private:
  // Throws Corrupt unless the k indices are strictly increasing and below count.
  static void check_indices(const std::byte* indices, std::size_t k, std::size_t count) {
    std::uint64_t next_allowed = 0;  // the smallest value the next index may take
    for (std::size_t j = 0; j < k; ++j) {
      std::uint32_t index;
      std::memcpy(&index, indices + j * sizeof(index), sizeof(index));
      if (index < next_allowed) {
        corrupt_payload(CodecId::kTopK, fmt::format("index {} at position {} does not increase", index, j));
      }
      if (index >= count) {
        corrupt_payload(CodecId::kTopK, fmt::format("index {} at position {} is out of range (count {})", index, j, count));
      }
      next_allowed = static_cast<std::uint64_t>(index) + 1;
    }
  }
};

}  // namespace

std::unique_ptr<Codec> make_topk_codec(const CodecSpec& spec) { return std::make_unique<TopKCodec>(spec); }

}  // namespace braid::compress
