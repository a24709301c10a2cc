// Codecs "fp16" and "bf16": every value rounded to a 16-bit float, halving the wire volume
// with a relative error of at most 2^-11 (fp16, normal range) or 2^-8 (bf16). One class
// serves both, parameterised by the codec id: they differ only in the conversion kernels.
//
// Wire format (body after the 56-byte header, whose block, aux and seed are 0):
//   count x u16, little-endian: IEEE binary16 (fp16) or the upper half of the fp32 bits
//   (bf16), rounded to nearest even. Inf stays Inf; NaN stays NaN (quiet, keeping what of its
//   payload fits, Note [quantize identity] in quantize_kernels.h). fp16 overflows to Inf
//   above 65504 and goes subnormal below 2^-14, as IEEE binary16 does: that range is why
//   bf16 (fp32's exponent range) exists.
// Body size = 2 * count bytes exactly; anything else is refused as Corrupt.
#include <algorithm>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/compress/codec_impl.h"
#include "braid/compress/quantize_kernels.h"

namespace braid::compress {

namespace {

// encode() with a `decoded` output converts back in chunks that are still in L1, instead of
// a second pass over the whole payload.
constexpr std::size_t kChunk = 4096;

class HalfCodec final : public Codec {
 public:
  HalfCodec(const CodecSpec& spec, const QuantizeKernels& kernels)
      : Codec(spec),
        narrow_(spec.id == CodecId::kFp16 ? kernels.to_fp16 : kernels.to_bf16),
        widen_(spec.id == CodecId::kFp16 ? kernels.from_fp16 : kernels.from_bf16),
        stream_fence_(kernels.stream_fence) {}

  std::size_t max_encoded_bytes(std::int64_t count, Shape shape) const override {
    check_quantized_count(count, shape, spec().id);
    return kPayloadHeaderBytes + body_bytes(static_cast<std::size_t>(count));
  }

  std::size_t encode(std::span<const float> x, Shape shape, const EncodeOptions& options, std::span<std::byte> out,
                     std::span<float> decoded) const override {
    std::size_t count = x.size();
    check_encode_buffers(spec().id, count, out, max_encoded_bytes(static_cast<std::int64_t>(count), shape), decoded);
    enforce_finite(x, options.non_finite, spec().id);
    std::byte* body = body_of(out).data();
    Store store = store_for(decoded.empty() ? body_bytes(count) : decoded.size_bytes());
    if (decoded.empty()) {
      narrow_(x.data(), count, body, store);
    } else {
      // The body is read back at once, so only the decoded values may bypass the caches.
      for (std::size_t i = 0; i < count; i += kChunk) {
        std::size_t n = std::min(kChunk, count - i);
        narrow_(x.data() + i, n, body + 2 * i, Store::kOverwrite);
        widen_(body + 2 * i, n, decoded.data() + i, store);
      }
    }
    if (store == Store::kStream) stream_fence_();
    return finish_payload({.codec = spec().id, .count = count}, options, body_bytes(count), out);
  }

  void decode(std::span<const std::byte> payload, std::span<float> out, DecodeMode mode) const override {
    PayloadHeader header = expect_header(payload, spec().id, out.size());
    expect_unused_zero(header, /*block_used=*/false);
    if (header.payload_bytes != body_bytes(out.size())) {
      corrupt_payload(spec().id, "body length does not match the element count");
    }
    Store store = mode == DecodeMode::kAccumulate ? Store::kAccumulate : store_for(out.size_bytes());
    widen_(body_of(payload).data(), out.size(), out.data(), store);
    if (store == Store::kStream) stream_fence_();
  }

 private:
  static std::size_t body_bytes(std::size_t count) { return 2 * count; }

  decltype(QuantizeKernels::to_fp16) narrow_;
  decltype(QuantizeKernels::from_fp16) widen_;
  decltype(QuantizeKernels::stream_fence) stream_fence_;
};

}  // namespace

std::unique_ptr<Codec> make_half_codec(const CodecSpec& spec, const QuantizeKernels& kernels) {
  if (spec.id != CodecId::kFp16 && spec.id != CodecId::kBf16) {
    throw InvalidArgument({.op = "make_codec"}, fmt::format("not an fp16 or bf16 spec: {}", to_string(spec)));
  }
  return std::make_unique<HalfCodec>(spec, kernels);
}

std::unique_ptr<Codec> make_half_codec(const CodecSpec& spec) {
  return make_half_codec(spec, active_quantize_kernels());
}

}  // namespace braid::compress
