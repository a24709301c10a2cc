// Internal: the per-ISA tables of quantising kernels behind the fp16, bf16, int8 and sign
// codecs, and the run-time choice of one of them (the pattern of base/reduce_kernels.h). Only
// the codec files, quantize_kernels_*.cc, quantize_dispatch.cc and their tests include it.
//
// Dispatch. Each ISA fills one constant QuantizeKernels in its own translation unit, compiled
// with that ISA's flags (compress/CMakeLists.txt); quantize_dispatch.cc picks one per process
// from braid::kernels::active_isa(), so BRAID_KERNELS forces the codec path as it forces the
// reduction path. AVX-512 CPUs run the AVX2 table: these kernels are memory-bound at 256 bits.
//
// Note [quantize identity]. Ranks on different CPUs may run different tables, and every rank
// must decode the same bytes, so every table produces exactly the bytes of the scalar table,
// for every input. The definitions all tables follow (default MXCSR: round-to-nearest-even,
// no flush-to-zero):
//   - fp16: narrow is base/half.h's float_to_half (RNE, Inf kept, a NaN keeps its sign and the
//     top 10 mantissa bits with the quiet bit set: F16C's vcvtps2ph). widen is half_to_float with
//     a NaN quieted (bit 22 set), the behaviour of vcvtph2ps; our encoder only writes quiet
//     NaNs, so this matters only for foreign bytes, which must still decode identically.
//   - bf16: narrow is float_to_bf16 (RNE, NaN -> top half | 0x40); widen is a 16-bit shift.
//   - accumulate: out = out + d as one IEEE add, except that a NaN in out wins, quieted, and
//     otherwise a NaN d is returned quieted (x86's rule with out as the first operand, spelled
//     out because a compiler may swap the operands of a commutative add).
//   - no multiply is ever fused with an add: GCC contracts a*b+c into an FMA by default
//     (-ffp-contract=fast) in a file compiled with -mfma, so the kernels put an optimisation
//     barrier between the product and the sum where both occur.
//   - int8: max_abs_bits is the maximum of (bits(x) & 0x7fffffff) as unsigned integers: exact,
//     independent of order, and >= 0x7f800000 exactly when some element is NaN or Inf.
//     quantize: q = (int8) rne(clamp(x * inv, -127, 127)) with one fp32 multiply.
//     dequantize: d = (float) q * scale, one fp32 multiply.
//   - sign: bit i%8 of byte i/8 is signbit(x[i]) (so -0.0 and NaNs with the sign bit set are
//     negative). sum_abs_lanes adds (double) |x[i]| into lanes[i % 8], in increasing i, in
//     double precision (which cannot overflow for 2^24 finite floats, so a non-finite sum means
//     a non-finite input; a NaN lane's payload is unspecified, the codec only asks isfinite);
//     codec_sign.cc combines the lanes in a fixed tree.
//     unpack: d = bits(scale) ^ (bit << 31), i.e. -scale for a set bit, even when scale is NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "braid/base/reduce_kernels.h"
#include "braid/compress/codec.h"
#include "braid/compress/payload_header.h"

namespace braid::compress {

// How a kernel writes its results.
enum class Store : std::uint8_t {
  kOverwrite = 0,   // out[i] = d
  kStream = 1,      // out[i] = d, with non-temporal stores where the table has them
  kAccumulate = 2,  // out[i] = accumulate(out[i], d) (fp32 outputs only)
};

// Outputs of at least this many bytes are written with Store::kStream: they will not stay in
// the caches anyway, and streaming stores skip reading each line before writing it (a third
// of a plain copy's traffic; it halves fp32 decode time on the 8 MiB-L3 machines braid was
// measured on). The same 4 MiB as base's copy_for_output (base/streaming_copy.h), but counted
// per call here rather than per host. The values written are those of kOverwrite; after the
// last streaming call the caller runs stream_fence(), so the stores are ordered before its
// later ones (a flag another process reads).
inline constexpr std::size_t kStreamBytes = std::size_t{4} << 20;

inline Store store_for(std::size_t output_bytes) {
  return output_bytes >= kStreamBytes ? Store::kStream : Store::kOverwrite;
}

// Pointers named `packed` (16-bit values, bit arrays) need no alignment: they point into a
// payload right after its 56-byte header. float arrays are 4-byte aligned. count may be 0.
struct QuantizeKernels {
  // packed[i] = narrow(x[i]) for i < count (little-endian u16). store: kOverwrite or kStream.
  void (*to_fp16)(const float* x, std::size_t count, void* packed, Store store);
  void (*to_bf16)(const float* x, std::size_t count, void* packed, Store store);
  // out[i] = widen(packed[i]), written as `store` says.
  void (*from_fp16)(const void* packed, std::size_t count, float* out, Store store);
  void (*from_bf16)(const void* packed, std::size_t count, float* out, Store store);

  // max over i of bits(x[i]) & 0x7fffffff (0 when count == 0).
  std::uint32_t (*max_abs_bits)(const float* x, std::size_t count);
  // q[i] = quantize(x[i], inv). REQUIRES: x finite and inv finite, so x * inv is finite.
  void (*quantize_int8)(const float* x, std::size_t count, float inv, std::int8_t* q);
  // out[i] = q[i] * scale, written as `store` says.
  void (*dequantize_int8)(const std::int8_t* q, std::size_t count, float scale, float* out, Store store);

  // lanes[i % 8] += |x[i]| (as double) for i < count, in increasing i. Bit-identical across
  // tables except for the payload of a NaN lane.
  void (*sum_abs_lanes)(const float* x, std::size_t count, double lanes[8]);
  // Writes bits [first_bit, first_bit + count) of `packed` from the signs of x; the other bits
  // of a byte it only partly covers are left as they are.
  void (*pack_signs)(const float* x, std::size_t count, void* packed, std::size_t first_bit);
  // out[i] = (bit first_bit + i) ? -scale : +scale (by sign bit), written as `store` says.
  void (*unpack_signs)(const void* packed, std::size_t first_bit, std::size_t count, float scale, float* out,
                       Store store);

  // Orders the streaming stores made so far before any later store (sfence; no-op in tables
  // without streaming stores).
  void (*stream_fence)();
};

extern const QuantizeKernels kScalarQuantizeKernels;
#if defined(__x86_64__) || defined(__i386__)
extern const QuantizeKernels kAvx2QuantizeKernels;
#endif

// The table for `isa` (avx512 runs the avx2 table). Throws InvalidArgument if the CPU cannot
// run it (braid::kernels::cpu_supports).
const QuantizeKernels& quantize_kernels_for(kernels::Isa isa);
// The table of braid::kernels::active_isa(), chosen once per process.
const QuantizeKernels& active_quantize_kernels();

// Checks shared by the quantising codecs' encode(): count >= 0, the shape, and a count whose
// payload size cannot overflow (kMaxQuantizedCount). Throws InvalidArgument.
inline constexpr std::int64_t kMaxQuantizedCount = std::int64_t{1} << 48;
void check_quantized_count(std::int64_t count, Shape shape, CodecId codec);
// encode()'s buffers: out must hold `needed` bytes, decoded must be empty or hold `count`
// floats (InvalidArgument otherwise: writing past either would be silent corruption).
void check_encode_buffers(CodecId codec, std::size_t count, std::span<std::byte> out, std::size_t needed,
                          std::span<float> decoded);
// Decoders: header fields this codec does not use must be 0 (Corrupt otherwise), so that a
// tampered header is never silently ignored.
void expect_unused_zero(const PayloadHeader& header, bool block_used);

// int8 and sign: the array of per-block fp32 scales at the start of the body. Encoders write
// +0 or more, finite, or the quiet NaN of kNanScaleBits; a negative or infinite scale can
// only come from a tampered payload, and check_block_scales refuses it as Corrupt before a
// decoder writes any output.
inline constexpr std::uint32_t kNanScaleBits = 0x7fc00000u;
void check_block_scales(const std::byte* scales, std::size_t blocks, CodecId codec);
float read_block_scale(const std::byte* scales, std::size_t index);
void write_block_scale(std::byte* scales, std::size_t index, float scale);
// The number of blocks of `block` elements (the last one may be short) that hold count.
inline std::size_t block_count(std::size_t count, std::size_t block) { return count / block + (count % block != 0); }

// The codecs over an explicit table, so tests can encode and decode whole payloads with every
// table and compare the bytes. make_half_codec() etc. (codec_impl.h) use the active table.
std::unique_ptr<Codec> make_half_codec(const CodecSpec& spec, const QuantizeKernels& kernels);
std::unique_ptr<Codec> make_int8_codec(const CodecSpec& spec, const QuantizeKernels& kernels);
std::unique_ptr<Codec> make_sign_codec(const CodecSpec& spec, const QuantizeKernels& kernels);

}  // namespace braid::compress
