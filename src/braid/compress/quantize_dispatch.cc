// Chooses the quantising-kernel table once per process (quantize_kernels.h), and holds the
// few checks the quantising codecs share. The ISA is the
// one the reduction kernels run (braid::kernels::active_isa(), i.e. BRAID_KERNELS or the
// widest the CPU supports), so one setting forces one code path for the whole library.
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/compress/codec_impl.h"
#include "braid/compress/quantize_kernels.h"

namespace braid::compress {

const QuantizeKernels& quantize_kernels_for(kernels::Isa isa) {
  if (!kernels::cpu_supports(isa)) {
    throw InvalidArgument({.op = "quantize kernels"},
                          fmt::format("this CPU cannot run the {} kernels", kernels::isa_name(isa)));
  }
  switch (isa) {
    case kernels::Isa::kScalar: break;
#if defined(__x86_64__) || defined(__i386__)
    // 512-bit registers would not help: every kernel here streams memory at a few operations
    // per byte, which the AVX2 table already sustains.
    case kernels::Isa::kAvx2: return kAvx2QuantizeKernels;
    case kernels::Isa::kAvx512:
      if (kernels::cpu_supports(kernels::Isa::kAvx2)) return kAvx2QuantizeKernels;  // F16C is not implied
      break;
#else
    default: break;
#endif
  }
  return kScalarQuantizeKernels;
}

const QuantizeKernels& active_quantize_kernels() {
  // Immutable once chosen; read without locks by every thread. If BRAID_KERNELS is invalid,
  // active_isa() throws and nothing is cached, so every codec construction reports it.
  static const QuantizeKernels& table = quantize_kernels_for(kernels::active_isa());
  return table;
}

// ---- checks shared by the quantising codecs (codec_half.cc, codec_int8.cc, codec_sign.cc) ----

void check_quantized_count(std::int64_t count, Shape shape, CodecId codec) {
  check_shape(count, shape);
  if (count > kMaxQuantizedCount) {
    throw InvalidArgument({.op = "encode"}, fmt::format("{}: {} elements is more than the {} a payload can describe",
                                                        codec_name(codec), count, kMaxQuantizedCount));
  }
}

void check_encode_buffers(CodecId codec, std::size_t count, std::span<std::byte> out, std::size_t needed,
                          std::span<float> decoded) {
  BRAID_CHECK_GE(out.size(), needed, InvalidArgument, {.op = "encode"}, "{}: output bytes for {} elements",
                 codec_name(codec), count);
  if (!decoded.empty()) {
    BRAID_CHECK_EQ(decoded.size(), count, InvalidArgument, {.op = "encode"}, "{}: decoded output elements",
                   codec_name(codec));
  }
}

void expect_unused_zero(const PayloadHeader& header, bool block_used) {
  if ((!block_used && header.block != 0) || header.aux != 0 || header.seed != 0) {
    corrupt_payload(header.codec, fmt::format("unused header fields are set (block {}, aux {}, seed {})", header.block,
                                              header.aux, header.seed));
  }
}

void check_block_scales(const std::byte* scales, std::size_t blocks, CodecId codec) {
  for (std::size_t index = 0; index < blocks; ++index) {
    std::uint32_t bits = std::bit_cast<std::uint32_t>(read_block_scale(scales, index));
    if (bits >= 0x80000000u || bits == 0x7f800000u) {
      corrupt_payload(codec, fmt::format("block {} has scale {:#010x} (negative or infinite)", index, bits));
    }
  }
}

float read_block_scale(const std::byte* scales, std::size_t index) {
  float scale;
  std::memcpy(&scale, scales + index * sizeof(float), sizeof(float));
  return scale;
}

void write_block_scale(std::byte* scales, std::size_t index, float scale) {
  std::memcpy(scales + index * sizeof(float), &scale, sizeof(float));
}

}  // namespace braid::compress
