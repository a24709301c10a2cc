// Internal: what every codec implementation shares: the factory of each codec (one file per
// codec, codec_<name>.cc), and the checks every decoder makes before it reads a body byte.
// Only codec files, codec.cc and their tests include this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "braid/compress/codec.h"
#include "braid/compress/payload_header.h"

namespace braid::compress {

std::unique_ptr<Codec> make_none_codec(const CodecSpec& spec);
std::unique_ptr<Codec> make_half_codec(const CodecSpec& spec);  // fp16 and bf16
std::unique_ptr<Codec> make_int8_codec(const CodecSpec& spec);
std::unique_ptr<Codec> make_sign_codec(const CodecSpec& spec);
std::unique_ptr<Codec> make_topk_codec(const CodecSpec& spec);
std::unique_ptr<Codec> make_randomk_codec(const CodecSpec& spec);
std::unique_ptr<Codec> make_powersgd_codec(const CodecSpec& spec);

// Reads and checks the header (read_payload_header), then that it names `codec` and that its
// count equals out_count (InvalidArgument otherwise: the caller passed the wrong buffer).
PayloadHeader expect_header(std::span<const std::byte> payload, CodecId codec, std::size_t out_count);

// Throws braid::Corrupt "compressed payload (<codec>): <why>".
[[noreturn]] void corrupt_payload(CodecId codec, const std::string& why);

// Throws InvalidArgument unless count >= 0 and shape is empty or rows * cols == count.
void check_shape(std::int64_t count, Shape shape);

// Throws InvalidArgument if count does not fit the 32-bit indices of the sparse codecs.
void check_index_range(std::int64_t count, CodecId codec);

// Throws InvalidArgument unless `decoded` is empty or as long as x (encode's optional output).
void check_decoded_length(std::span<const float> x, std::span<float> decoded, CodecId codec);

// Under NonFinitePolicy::kRaise, throws InvalidArgument naming the first non-finite element of
// x; does nothing under kPropagate.
void enforce_finite(std::span<const float> x, NonFinitePolicy policy, CodecId codec);

// Fills the header (flags from options) and writes it in front of the body already in
// out[kPayloadHeaderBytes, +body_bytes). Returns kPayloadHeaderBytes + body_bytes.
std::size_t finish_payload(PayloadHeader header, const EncodeOptions& options, std::size_t body_bytes,
                           std::span<std::byte> out);

inline std::span<const std::byte> body_of(std::span<const std::byte> payload) {
  return payload.subspan(kPayloadHeaderBytes);
}
inline std::span<std::byte> body_of(std::span<std::byte> payload) { return payload.subspan(kPayloadHeaderBytes); }

}  // namespace braid::compress
