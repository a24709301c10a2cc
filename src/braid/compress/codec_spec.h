// Which codec compresses a tensor, and its parameters, as a value: parsed from the strings
// users type ("int8", "int8:1024", "topk:0.01", "randomk:0.05", "powersgd:4") and printed
// back the same way, so a spec can travel through flags, policies and checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace braid::compress {

// The codec's id on the wire (payload_header.h). Values are part of the stable wire format:
// never renumber, only append.
enum class CodecId : std::uint8_t {
  kNone = 0,      // fp32 as is
  kFp16 = 1,      // IEEE binary16, round-to-nearest-even
  kBf16 = 2,      // bfloat16, round-to-nearest-even
  kInt8 = 3,      // blockwise symmetric int8, one fp32 scale per block
  kSign = 4,      // 1-bit sign, one fp32 scale (mean |x|) per block
  kTopK = 5,      // the k = ratio * n largest |x|, as (index, value) pairs
  kRandomK = 6,   // k coordinates drawn from a shared seed, values scaled to stay unbiased
  kPowerSgd = 7,  // rank-r factors P (rows x r) and Q (cols x r) of a 2-D tensor
};
inline constexpr int kNumCodecs = 8;

std::string_view codec_name(CodecId id);  // "none", "fp16", ...
bool is_valid_codec_id(std::uint8_t raw);

// Default block size of int8 and sign. 1024 elements: the scale costs 4 bytes per block, i.e.
// 0.4% on top of int8's 1 byte per element and 3% on top of sign's 1/8 byte; smaller blocks
// track the local magnitude better (gradients vary by orders of magnitude across a tensor)
// but cost more scale bytes; 1024 keeps sign's wire volume under 1/30 of fp32 while a block
// still fits the L1 cache in both the max|x| pass and the quantising pass.
inline constexpr std::uint32_t kDefaultBlock = 1024;
inline constexpr std::uint32_t kMaxBlock = 1u << 24;
inline constexpr std::uint32_t kMaxPowerSgdRank = 1u << 16;

struct CodecSpec {
  CodecId id = CodecId::kNone;
  std::uint32_t block = 0;  // int8, sign: elements per scale (0: kDefaultBlock)
  double ratio = 0.0;       // topk, randomk: k = max(1, round(ratio * n)), 0 < ratio <= 1
  std::uint32_t rank = 0;   // powersgd: rank r >= 1

  // The block size in effect (kDefaultBlock when block == 0); 0 for codecs without blocks.
  std::uint32_t effective_block() const;
  // True for codecs whose expected decoded value differs from the input (error feedback is
  // on by default for them): int8, sign, topk, powersgd. fp16/bf16 round to nearest and
  // randomk is unbiased by construction.
  bool biased() const;

  bool operator==(const CodecSpec&) const = default;
};

// Parses "name[:param]". Throws braid::InvalidArgument (naming the text and what is wrong)
// for an unknown name, a parameter where none is taken, a missing one where it is required
// (topk, randomk, powersgd), ratio <= 0 or > 1, rank < 1, block < 1 or > kMaxBlock.
CodecSpec parse_codec_spec(std::string_view text);
// The inverse of parse_codec_spec: "int8", "int8:512", "topk:0.01", "powersgd:4".
std::string to_string(const CodecSpec& spec);

// k for topk / randomk on n elements: round(ratio * n) clamped to [1, n] (0 when n == 0).
std::int64_t selected_count(double ratio, std::int64_t n);

}  // namespace braid::compress
