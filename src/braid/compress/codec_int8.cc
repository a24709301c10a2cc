// Codec "int8": blockwise symmetric 8-bit quantisation, one fp32 scale per block of B values
// (B = header.block, default kDefaultBlock = 1024, codec_spec.h says why). About 3.9x less
// than fp32 on the wire; absolute error at most scale/2 per element (+ a few fp32 ulps of
// max|x|, see below). Biased per step, so error feedback is on by default (CodecSpec::biased).
//
// Wire format (body after the 56-byte header; header.block = B in [1, kMaxBlock], aux and
// seed 0):
//   ceil(count / B) x fp32 scale (little-endian), then count x int8 q.
// Block k holds x[k*B, min((k+1)*B, count)); the last block may be short. Per block, with
// m = max |x| (exact) and every operation one fp32 operation in round-to-nearest-even:
//   - m is NaN or Inf (some element is): scale = NaN (0x7fc00000), q = 0: the whole block
//     decodes to NaN, never to finite garbage.
//   - m < 2^-119 (all-zero blocks included): scale = 0, q = 0: the block decodes to +0. Below
//     that, 127 / m may overflow and m / 127 is subnormal (imprecise); the values flushed are
//     below 1.6e-36, and error feedback keeps them in the residual.
//   - otherwise inv = 127.0f / m, scale = m / 127.0f, q = rne(clamp(x * inv, -127, 127)).
// Decoding is x' = q * scale. Bound: inv, x * inv, scale and q * scale each round once
// (relative 2^-24), so |x - x'| <= scale / 2 + 4 * 2^-24 * m (the tests allow 2^-21 * m).
// The encoder never writes q = -128; a decoder does not scan for it (it decodes as -128 *
// scale, deterministically).
#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/compress/codec_impl.h"
#include "braid/compress/quantize_kernels.h"

namespace braid::compress {

namespace {

constexpr std::uint32_t kNonFiniteBits = 0x7f800000u;  // |x| bits at or above: Inf or NaN
constexpr std::uint32_t kMinMaxBits = 0x04000000u;     // 2^-119: smallest max|x| quantised

class Int8Codec final : public Codec {
 public:
  Int8Codec(const CodecSpec& spec, const QuantizeKernels& kernels)
      : Codec(spec), block_(spec.effective_block()), kernels_(kernels) {}

  std::size_t max_encoded_bytes(std::int64_t count, Shape shape) const override {
    check_quantized_count(count, shape, CodecId::kInt8);
    return kPayloadHeaderBytes + body_bytes(static_cast<std::size_t>(count), block_);
  }

  std::size_t encode(std::span<const float> x, Shape shape, const EncodeOptions& options, std::span<std::byte> out,
                     std::span<float> decoded) const override {
    std::size_t count = x.size();
    check_encode_buffers(CodecId::kInt8, count, out, max_encoded_bytes(static_cast<std::int64_t>(count), shape),
                         decoded);
    enforce_finite(x, options.non_finite, CodecId::kInt8);
    std::byte* scales = body_of(out).data();
    auto* q = reinterpret_cast<std::int8_t*>(scales + block_count(count, block_) * sizeof(float));
    Store store = store_for(decoded.size_bytes());
    for (std::size_t k = 0, first = 0; first < count; ++k, first += block_) {
      std::size_t n = std::min<std::size_t>(block_, count - first);
      float scale = encode_block(x.data() + first, n, q + first);
      write_block_scale(scales, k, scale);
      // Straight from the block's bytes while they are in L1: exactly what decode() computes.
      if (!decoded.empty()) kernels_.dequantize_int8(q + first, n, scale, decoded.data() + first, store);
    }
    if (store == Store::kStream) kernels_.stream_fence();
    PayloadHeader header{.codec = CodecId::kInt8, .count = count, .block = block_};
    return finish_payload(header, options, body_bytes(count, block_), out);
  }

  void decode(std::span<const std::byte> payload, std::span<float> out, DecodeMode mode) const override {
    PayloadHeader header = expect_header(payload, CodecId::kInt8, out.size());
    expect_unused_zero(header, /*block_used=*/true);
    // The payload describes itself: a block size other than this codec's is decoded as sent.
    std::size_t block = header.block;
    if (block < 1 || block > kMaxBlock) corrupt_payload(CodecId::kInt8, fmt::format("block size {}", header.block));
    std::size_t count = out.size();
    BRAID_CHECK_EQ(header.payload_bytes, body_bytes(count, block), Corrupt, {.op = "decode"},
                   "compressed payload (int8): body bytes for {} elements in blocks of {}", count, block);
    const std::byte* scales = body_of(payload).data();
    const auto* q = reinterpret_cast<const std::int8_t*>(scales + block_count(count, block) * sizeof(float));
    check_block_scales(scales, block_count(count, block), CodecId::kInt8);
    Store store = mode == DecodeMode::kAccumulate ? Store::kAccumulate : store_for(out.size_bytes());
    for (std::size_t k = 0, first = 0; first < count; ++k, first += block) {
      std::size_t n = std::min(block, count - first);
      kernels_.dequantize_int8(q + first, n, read_block_scale(scales, k), out.data() + first, store);
    }
    if (store == Store::kStream) kernels_.stream_fence();
  }

 private:
  static std::size_t body_bytes(std::size_t count, std::size_t block) {
    return block_count(count, block) * sizeof(float) + count;
  }

  // Quantises one block into q; returns its scale (the cases of the file comment).
  float encode_block(const float* x, std::size_t n, std::int8_t* q) const {
    std::uint32_t max_bits = kernels_.max_abs_bits(x, n);
    if (max_bits >= kNonFiniteBits || max_bits < kMinMaxBits) {
      std::memset(q, 0, n);
      return max_bits >= kNonFiniteBits ? std::bit_cast<float>(kNanScaleBits) : 0.0f;
    }
    float max_abs = std::bit_cast<float>(max_bits);
    kernels_.quantize_int8(x, n, 127.0f / max_abs, q);
    return max_abs / 127.0f;
  }

  std::uint32_t block_;
  const QuantizeKernels& kernels_;
};

}  // namespace

std::unique_ptr<Codec> make_int8_codec(const CodecSpec& spec, const QuantizeKernels& kernels) {
  if (spec.id != CodecId::kInt8 || spec.effective_block() > kMaxBlock) {
    throw InvalidArgument({.op = "make_codec"}, fmt::format("not an int8 spec: {}", to_string(spec)));
  }
  return std::make_unique<Int8Codec>(spec, kernels);
}

std::unique_ptr<Codec> make_int8_codec(const CodecSpec& spec) {
  return make_int8_codec(spec, active_quantize_kernels());
}

}  // namespace braid::compress
