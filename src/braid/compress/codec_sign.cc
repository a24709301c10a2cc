// Codec "sign": 1 bit per value plus one fp32 scale per block, the compressor of 1-bit SGD
// (Seide et al. 2014) and 1-bit Adam (Tang et al. 2021): every value decodes to +-scale with
// scale = mean |x| of its block, which keeps the block's L1 norm. About 1/30 of fp32 on the
// wire at the default block of 1024. Strongly biased: error feedback is on by default.
//
// Wire format (body after the 56-byte header; header.block = B in [1, kMaxBlock], aux and
// seed 0):
//   ceil(count / B) x fp32 scale (little-endian), then ceil(count / 8) bytes of sign bits:
//   bit i % 8 of byte i / 8 is signbit(x[i]). -0.0 (and a NaN with its sign bit set) counts
//   as negative: the bit is the IEEE sign bit, which is also what SIMD's movemask reads. The
//   unused high bits of the last byte are 0 (a decoder refuses others as Corrupt).
// Block k holds x[k*B, min((k+1)*B, count)); the last block may be short (n < B elements).
// Its scale is defined so that every ISA computes the same bits (Note [quantize identity]):
//   lanes[j] = sum, in increasing i, of (double) |x[i]| over the block's i with i % 8 == j
//   S = ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))   (all in double)
//   scale = (float) (S / n),  or NaN (0x7fc00000) when S is not finite.
// Double precision cannot overflow for n <= 2^24 finite floats, so S is non-finite exactly
// when some element is NaN or Inf: that block decodes to NaN, never to finite garbage.
// Decoding: x'[i] = bit ? -scale : +scale (the sign bit of scale flipped).
#include <algorithm>
#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/compress/codec_impl.h"
#include "braid/compress/quantize_kernels.h"

namespace braid::compress {

namespace {

float block_scale(const double lanes[8], std::size_t n) {
  double sum = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
  if (!std::isfinite(sum)) return std::bit_cast<float>(kNanScaleBits);
  return static_cast<float>(sum / static_cast<double>(n));
}

std::size_t sign_bytes(std::size_t count) { return count / 8 + (count % 8 != 0); }

class SignCodec final : public Codec {
 public:
  SignCodec(const CodecSpec& spec, const QuantizeKernels& kernels)
      : Codec(spec), block_(spec.effective_block()), kernels_(kernels) {}

  std::size_t max_encoded_bytes(std::int64_t count, Shape shape) const override {
    check_quantized_count(count, shape, CodecId::kSign);
    return kPayloadHeaderBytes + body_bytes(static_cast<std::size_t>(count), block_);
  }

  std::size_t encode(std::span<const float> x, Shape shape, const EncodeOptions& options, std::span<std::byte> out,
                     std::span<float> decoded) const override {
    std::size_t count = x.size();
    check_encode_buffers(CodecId::kSign, count, out, max_encoded_bytes(static_cast<std::int64_t>(count), shape),
                         decoded);
    enforce_finite(x, options.non_finite, CodecId::kSign);
    std::byte* scales = body_of(out).data();
    std::byte* bits = scales + block_count(count, block_) * sizeof(float);
    if (count % 8 != 0) bits[count / 8] = std::byte{0};  // pack_signs keeps the padding bits as they are
    Store store = store_for(decoded.size_bytes());
    for (std::size_t k = 0, first = 0; first < count; ++k, first += block_) {
      std::size_t n = std::min<std::size_t>(block_, count - first);
      double lanes[8] = {};
      kernels_.sum_abs_lanes(x.data() + first, n, lanes);  // the pass from memory; the next ones hit L1
      float scale = block_scale(lanes, n);
      write_block_scale(scales, k, scale);
      kernels_.pack_signs(x.data() + first, n, bits, first);
      if (!decoded.empty()) kernels_.unpack_signs(bits, first, n, scale, decoded.data() + first, store);
    }
    if (store == Store::kStream) kernels_.stream_fence();
    PayloadHeader header{.codec = CodecId::kSign, .count = count, .block = block_};
    return finish_payload(header, options, body_bytes(count, block_), out);
  }

  void decode(std::span<const std::byte> payload, std::span<float> out, DecodeMode mode) const override {
    PayloadHeader header = expect_header(payload, CodecId::kSign, out.size());
    expect_unused_zero(header, /*block_used=*/true);
    // The payload describes itself: a block size other than this codec's is decoded as sent.
    std::size_t block = header.block;
    if (block < 1 || block > kMaxBlock) corrupt_payload(CodecId::kSign, fmt::format("block size {}", header.block));
    std::size_t count = out.size();
    BRAID_CHECK_EQ(header.payload_bytes, body_bytes(count, block), Corrupt, {.op = "decode"},
                   "compressed payload (sign): body bytes for {} elements in blocks of {}", count, block);
    const std::byte* scales = body_of(payload).data();
    const std::byte* bits = scales + block_count(count, block) * sizeof(float);
    if (count % 8 != 0 && (std::to_integer<unsigned>(bits[count / 8]) >> (count % 8)) != 0) {
      corrupt_payload(CodecId::kSign, "padding bits after the last element are set");
    }
    check_block_scales(scales, block_count(count, block), CodecId::kSign);
    Store store = mode == DecodeMode::kAccumulate ? Store::kAccumulate : store_for(out.size_bytes());
    for (std::size_t k = 0, first = 0; first < count; ++k, first += block) {
      std::size_t n = std::min(block, count - first);
      kernels_.unpack_signs(bits, first, n, read_block_scale(scales, k), out.data() + first, store);
    }
    if (store == Store::kStream) kernels_.stream_fence();
  }

 private:
  static std::size_t body_bytes(std::size_t count, std::size_t block) {
    return block_count(count, block) * sizeof(float) + sign_bytes(count);
  }

  std::uint32_t block_;
  const QuantizeKernels& kernels_;
};

}  // namespace

std::unique_ptr<Codec> make_sign_codec(const CodecSpec& spec, const QuantizeKernels& kernels) {
  if (spec.id != CodecId::kSign || spec.effective_block() > kMaxBlock) {
    throw InvalidArgument({.op = "make_codec"}, fmt::format("not a sign spec: {}", to_string(spec)));
  }
  return std::make_unique<SignCodec>(spec, kernels);
}

std::unique_ptr<Codec> make_sign_codec(const CodecSpec& spec) {
  return make_sign_codec(spec, active_quantize_kernels());
}

}  // namespace braid::compress
