// A codec turns an fp32 tensor into a self-describing payload (payload_header.h + body) and
// back. Codecs are stateless and thread-safe: what persists between steps (error-feedback
// residuals, PowerSGD's Q) lives in ErrorFeedback and the compressed collectives, not here.
//
// Contract shared by every codec (tests check each clause):
//   - max_encoded_bytes(shape) is an exact upper bound of encode()'s result for that shape
//     (exact size for every codec but none of them varies today; callers size buffers by it).
//   - encode never reads past x and never writes past out; decode checks every field and
//     length against its codec before reading the body and throws braid::Corrupt for a
//     truncated, tampered or foreign payload, braid::InvalidArgument when `out` has the wrong
//     length for the payload's element count.
//   - Non-finite input (NaN, +-Inf) is never turned into finite garbage: with
//     NonFinitePolicy::kPropagate the affected element (fp16/bf16/none/topk/randomk) or block
//     (int8, sign: its scale is written as NaN) decodes to NaN/Inf; powersgd's factors carry
//     the NaN into every element; with kRaise encode throws InvalidArgument naming the index.
//   - Decoding is deterministic: the same payload gives the same bytes on every rank and ISA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "braid/compress/codec_spec.h"

namespace braid::compress {

// A tensor's 2-D view for PowerSGD: rows * cols == element count. rows == 0 means "no 2-D
// shape" (a bias or norm vector), for which powersgd falls back to codec none.
struct Shape {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  bool is_matrix() const { return rows > 0 && cols > 0; }
};

enum class NonFinitePolicy : std::uint8_t {
  kPropagate = 0,  // NaN/Inf reach the result as NaN (default: training code checks for it)
  kRaise = 1,      // encode throws braid::InvalidArgument naming the first bad index
};

struct EncodeOptions {
  std::uint64_t seed = 0;  // randomk: index seed, equal on every rank for this step; powersgd: Q seed
  bool checksum = false;   // append a CRC32C over header and payload (BRAID_CHECKSUM=1)
  NonFinitePolicy non_finite = NonFinitePolicy::kPropagate;
};

enum class DecodeMode : std::uint8_t {
  kOverwrite = 0,   // out = decoded
  kAccumulate = 1,  // out += decoded (fp32 adds, element order); sparse codecs touch only their k elements
};

class Codec {
 public:
  virtual ~Codec() = default;

  const CodecSpec& spec() const { return spec_; }

  // Exact upper bound, header included, of encode()'s output for a tensor of `count` elements
  // with `shape` (shape only matters to powersgd). Throws InvalidArgument if count < 0 or the
  // shape does not match count.
  virtual std::size_t max_encoded_bytes(std::int64_t count, Shape shape) const = 0;

  // Encodes x (x.size() elements) into out; returns the bytes written (header included).
  // REQUIRES: out.size() >= max_encoded_bytes(x.size(), shape).
  // `decoded`, when non-empty (same length as x), receives exactly what decode() of the result
  // will produce, without a second pass over the payload where the codec can avoid it
  // (error feedback needs it: residual = x - decoded).
  virtual std::size_t encode(std::span<const float> x, Shape shape, const EncodeOptions& options,
                             std::span<std::byte> out, std::span<float> decoded = {}) const = 0;

  // Decodes a payload this codec wrote (its header must name this codec, or none for
  // powersgd's 1-D fallback) into out. REQUIRES-checked: out.size() == header count.
  virtual void decode(std::span<const std::byte> payload, std::span<float> out,
                      DecodeMode mode = DecodeMode::kOverwrite) const = 0;

 protected:
  explicit Codec(CodecSpec spec) : spec_(spec) {}

 private:
  CodecSpec spec_;
};

// The codec for `spec`. Throws InvalidArgument for an invalid spec (codec_spec.h's rules).
std::unique_ptr<Codec> make_codec(const CodecSpec& spec);

// Decodes any payload by the codec id in its header (the receiver of a compressed collective
// trusts nothing but the header it has checked). Same errors as Codec::decode.
void decode_payload(std::span<const std::byte> payload, std::span<float> out,
                    DecodeMode mode = DecodeMode::kOverwrite);

}  // namespace braid::compress
