// libFuzzer target over every codec's decoder: the input is one whole compressed payload, as a
// receiver of a compressed collective gets it off the wire (codec.h, payload_header.h).
//
// What counts as a finding (the process aborts, libFuzzer saves the input):
//   - a crash, a hang (scripts/fuzz.sh: over 10 s on one input), a sanitizer report (ASan,
//     UBSan, LeakSanitizer);
//   - an exception that is not braid::Corrupt or braid::InvalidArgument;
//   - a broken clause of codec.h's contract:
//       * decode succeeds with an output of the wrong length;
//       * decode with the right length is not deterministic, or leaves part of the output
//         unwritten in kOverwrite mode (two prefills must give the same bytes);
//       * kAccumulate is not out[i] + decoded[i] (one fp32 add per element);
//       * the codec's own decoder and decode_payload disagree where both succeed;
//       * a decoder accepts a payload naming another codec (powersgd may read none: its 1-D
//         fallback);
//       * re-encoding what a payload decoded to gives a payload larger than
//         max_encoded_bytes, or whose decode differs from the `decoded` that encode reported.
//
// A payload with the checksum flag is fuzzed twice: as it is (the CRC must reject most
// mutations) and with its CRC recomputed, so that mutations of checksummed seeds still reach
// the body decoders.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "braid/base/crc32c.h"
#include "braid/base/error.h"
#include "braid/compress/codec.h"
#include "braid/compress/payload_header.h"
#include "fuzz_support.h"

namespace braid::compress {
namespace {

// Outputs are allocated at their exact length so that ASan sees a write one past the end. The
// cap keeps one execution cheap: a sparse payload of a few bytes may announce a huge count, and
// every check below fills the output at least once (1 MiB at the cap). A larger count is only
// checked to be refused with a small output.
constexpr std::uint64_t kMaxDecodedCount = 1u << 18;
// The re-encoding checks cost far more than a decode (topk's selection, powersgd's
// orthonormalisation): they run on shorter outputs, every codec on a `none` payload's values
// (arbitrary floats) on the shortest. Block sizes there stay under 62, so 512 spans blocks.
constexpr std::uint64_t kMaxRoundTripCount = 1u << 15;
constexpr std::uint64_t kMaxCrossEncodeCount = 512;

using Bytes = std::span<const std::byte>;

using fuzz::finding;

// Runs fn; true if it returned, false if it threw one of the errors a decoder may throw. Any
// other exception is a finding.
template <typename Fn>
bool succeeds(std::string_view what, Fn&& fn) {
  return fuzz::succeeds(what, {ErrorKind::kCorrupt, ErrorKind::kInvalidArgument}, std::forward<Fn>(fn));
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0 || (std::isnan(a) && std::isnan(b)); }

// Bitwise equality, NaN payloads aside (a NaN's payload bits may pass through an fp32 add).
void expect_same(std::string_view what, std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) finding(what, "lengths differ");
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same_bits(a[i], b[i])) finding(what, "element " + std::to_string(i) + " differs");
  }
}

// What kAccumulate adds to: non-zero, and not exactly representable sums, so that an
// accumulate that rounds differently from `out[i] + decoded[i]` (a fused multiply-add in a
// dequantising kernel, a rank-by-rank sum into out) shows.
std::vector<float> accumulate_base(std::uint64_t count) {
  std::vector<float> base(count);
  for (std::uint64_t i = 0; i < count; ++i) base[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.37f;
  return base;
}

// codec.h: kAccumulate is out += decoded, one fp32 add per element.
void expect_accumulated(std::span<const float> decoded, std::span<const float> accumulated) {
  std::vector<float> base = accumulate_base(decoded.size());
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    if (!same_bits(base[i] + decoded[i], accumulated[i])) {
      finding("kAccumulate differs from out[i] + decoded[i]", "element " + std::to_string(i));
    }
  }
}

std::vector<float> filled(std::uint64_t count, std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(float));
  return std::vector<float>(count, value);
}

// The spec a sender of this header would have used (what decode_payload builds, and what the
// re-encode needs). nullopt when the header's parameters are not a valid spec.
std::optional<CodecSpec> sender_spec(const PayloadHeader& header) {
  CodecSpec spec{.id = header.codec};
  switch (header.codec) {
    case CodecId::kInt8:
    case CodecId::kSign:
      if (header.block < 1 || header.block > kMaxBlock) return std::nullopt;
      spec.block = header.block;
      break;
    case CodecId::kTopK:
    case CodecId::kRandomK:
      if (header.count == 0 || header.aux < 1 || header.aux > header.count) return std::nullopt;
      spec.ratio = static_cast<double>(header.aux) / static_cast<double>(header.count);
      break;
    case CodecId::kPowerSgd:
      if (header.block < 1 || header.block > (1u << 16)) return std::nullopt;
      spec.rank = header.block;
      break;
    default: break;
  }
  return spec;
}

// A spec of the same codec with other parameters: its decoder must use the header's (or
// refuse), never its own block / ratio / rank, to read the body.
CodecSpec other_parameters(CodecSpec spec) {
  spec.block = spec.block == kDefaultBlock ? 7 : kDefaultBlock;
  spec.ratio = spec.ratio == 0.5 ? 0.25 : 0.5;
  spec.rank = spec.rank == 1 ? 2 : 1;
  if (spec.id != CodecId::kInt8 && spec.id != CodecId::kSign) spec.block = 0;
  if (spec.id != CodecId::kTopK && spec.id != CodecId::kRandomK) spec.ratio = 0.0;
  if (spec.id != CodecId::kPowerSgd) spec.rank = 0;
  return spec;
}

CodecSpec another_codec(CodecId id) {
  auto next = static_cast<CodecId>((static_cast<int>(id) + 1) % kNumCodecs);
  return other_parameters(CodecSpec{.id = next});
}

// Encodes x with spec, then checks the size bound and that decode(payload) is exactly the
// `decoded` encode reported. Encode may refuse (InvalidArgument: e.g. rank larger than the
// matrix); it must not crash.
void check_round_trip(const CodecSpec& spec, std::span<const float> x, Shape shape, const EncodeOptions& options) {
  std::unique_ptr<Codec> codec;
  if (!succeeds("make_codec (round trip)", [&] { codec = make_codec(spec); })) return;
  std::size_t bound = 0;
  if (!succeeds("max_encoded_bytes",
                [&] { bound = codec->max_encoded_bytes(static_cast<std::int64_t>(x.size()), shape); })) {
    return;
  }
  std::vector<std::byte> payload(bound);
  std::vector<float> reported(x.size());
  std::size_t written = 0;
  if (!succeeds("encode", [&] { written = codec->encode(x, shape, options, payload, reported); })) return;
  if (written > bound) finding("encode wrote more than max_encoded_bytes");
  std::vector<float> decoded(x.size());
  Bytes wire(payload.data(), written);
  if (!succeeds("decode (round trip)", [&] { codec->decode(wire, decoded); })) {
    finding("decode refused a payload encode had just written");
  }
  expect_same("encode's `decoded` differs from decode()", reported, decoded);
}

Shape sender_shape(const PayloadHeader& header) {
  if (header.codec != CodecId::kPowerSgd || header.aux == 0 || header.count % header.aux != 0) return {};
  return {.rows = static_cast<std::int64_t>(header.aux), .cols = static_cast<std::int64_t>(header.count / header.aux)};
}

// A `none` payload carries arbitrary floats (NaN, Inf, subnormals, extremes): encode them with
// every codec, parameters derived from the count so the fuzzer can vary them.
void cross_encode(std::span<const float> x) {
  std::uint64_t n = x.size();
  std::int64_t rows = 1;
  for (std::int64_t d = 2; d * d <= static_cast<std::int64_t>(n); ++d) {
    if (n % d == 0) rows = d;
  }
  Shape matrix = n == 0 ? Shape{} : Shape{.rows = rows, .cols = static_cast<std::int64_t>(n) / rows};
  auto block = static_cast<std::uint32_t>(1 + n % 61);
  double ratio = static_cast<double>(1 + n % 7) / 8.0;
  auto rank = static_cast<std::uint32_t>(1 + n % 3);
  const CodecSpec specs[] = {
      {.id = CodecId::kFp16},
      {.id = CodecId::kBf16},
      {.id = CodecId::kInt8, .block = block},
      {.id = CodecId::kSign, .block = block},
      {.id = CodecId::kTopK, .ratio = ratio},
      {.id = CodecId::kRandomK, .ratio = ratio},
      {.id = CodecId::kPowerSgd, .rank = rank},
  };
  for (const CodecSpec& spec : specs) {
    EncodeOptions options{.seed = n * 0x9e3779b97f4a7c15ull, .checksum = n % 2 == 1};
    check_round_trip(spec, x, spec.id == CodecId::kPowerSgd ? matrix : Shape{}, options);
  }
}

// Decodes with a codec built from `spec` (both modes); where it and decode_payload both
// succeed, their results must agree.
void check_codec_decoder(const CodecSpec& spec, Bytes payload, const std::optional<std::vector<float>>& reference,
                         std::uint64_t count) {
  std::unique_ptr<Codec> codec;
  if (!succeeds("make_codec", [&] { codec = make_codec(spec); })) return;
  std::vector<float> out = filled(count, 0x7fc00001u);
  if (succeeds("Codec::decode", [&] { codec->decode(payload, out, DecodeMode::kOverwrite); }) && reference) {
    expect_same("Codec::decode and decode_payload disagree", *reference, out);
  }
  std::vector<float> accumulated = accumulate_base(count);
  if (succeeds("Codec::decode (accumulate)", [&] { codec->decode(payload, accumulated, DecodeMode::kAccumulate); }) &&
      reference) {
    expect_accumulated(*reference, accumulated);
  }
}

void check_wrong_lengths(Bytes payload, std::uint64_t count) {
  for (std::uint64_t wrong : {count + 1, count - 1}) {
    if (count == 0 && wrong != 1) continue;
    std::vector<float> out(wrong);
    for (DecodeMode mode : {DecodeMode::kOverwrite, DecodeMode::kAccumulate}) {
      if (succeeds("decode_payload (wrong length)", [&] { decode_payload(payload, out, mode); })) {
        finding("decode accepted an output of the wrong length");
      }
    }
  }
}

void check_foreign_codec(const PayloadHeader& header, Bytes payload) {
  CodecSpec foreign = another_codec(header.codec);
  bool fallback = foreign.id == CodecId::kPowerSgd && header.codec == CodecId::kNone;
  if (fallback || header.count > kMaxDecodedCount) return;
  std::unique_ptr<Codec> codec;
  if (!succeeds("make_codec", [&] { codec = make_codec(foreign); })) return;
  std::vector<float> out(header.count);
  if (succeeds("Codec::decode (foreign codec)", [&] { codec->decode(payload, out); })) {
    finding("a decoder accepted a payload of another codec");
  }
}

// decode_payload into an output of the header's count: its result, or nullopt if it refused.
// Where it succeeds, also checks determinism, kAccumulate and the wrong lengths.
std::optional<std::vector<float>> check_decode_payload(Bytes payload, std::uint64_t count) {
  // Two different prefills: a decoder that leaves an element unwritten cannot match both.
  std::vector<float> reference = filled(count, 0u);
  if (!succeeds("decode_payload", [&] { decode_payload(payload, reference); })) return std::nullopt;
  std::vector<float> again = filled(count, 0xffc0dead);
  if (!succeeds("decode_payload (again)", [&] { decode_payload(payload, again); })) {
    finding("decode_payload is not deterministic: it refused a payload it accepted before");
  }
  expect_same("kOverwrite is not deterministic or leaves elements unwritten", reference, again);
  std::vector<float> accumulated = accumulate_base(count);
  if (!succeeds("decode_payload (accumulate)",
                [&] { decode_payload(payload, accumulated, DecodeMode::kAccumulate); })) {
    finding("kAccumulate refused a payload kOverwrite accepted");
  }
  expect_accumulated(reference, accumulated);
  check_wrong_lengths(payload, count);
  return reference;
}

void fuzz_payload(Bytes payload) {
  std::optional<PayloadHeader> header;
  if (!succeeds("read_payload_header", [&] { header = read_payload_header(payload); })) {
    std::vector<float> out(4);
    if (succeeds("decode_payload", [&] { decode_payload(payload, out); })) {
      finding("decode_payload accepted a payload whose header read_payload_header refuses");
    }
    return;
  }
  std::uint64_t count = header->count;
  if (count > kMaxDecodedCount) {
    std::vector<float> out(16);
    if (succeeds("decode_payload", [&] { decode_payload(payload, out); })) finding("decode accepted a wrong length");
    return;
  }
  std::optional<std::vector<float>> reference = check_decode_payload(payload, count);
  if (std::optional<CodecSpec> spec = sender_spec(*header)) {
    // decode_payload already ran the decoder of exactly this spec; try other parameters.
    check_codec_decoder(other_parameters(*spec), payload, reference, count);
    if (header->codec == CodecId::kNone) {  // powersgd reads `none` payloads itself: its 1-D fallback
      check_codec_decoder({.id = CodecId::kPowerSgd, .rank = 1}, payload, reference, count);
    }
    if (reference && count <= kMaxRoundTripCount) {
      EncodeOptions options{.seed = header->seed, .checksum = (header->flags & kHasChecksum) != 0};
      check_round_trip(*spec, *reference, sender_shape(*header), options);
      if (header->codec == CodecId::kNone && count <= kMaxCrossEncodeCount) cross_encode(*reference);
    }
  }
  check_foreign_codec(*header, payload);
}

// The input with its CRC32C recomputed (payload_header.h: over header bytes [0, 48), then the
// payload), or nullopt when it has no checksum flag or no room for a header.
std::optional<std::vector<std::byte>> with_valid_checksum(Bytes input) {
  constexpr std::size_t kCrcOffset = 48;
  if (input.size() < kPayloadHeaderBytes || (static_cast<std::uint8_t>(input[6]) & kHasChecksum) == 0) {
    return std::nullopt;
  }
  std::vector<std::byte> fixed(input.begin(), input.end());
  std::uint32_t crc = crc32c(fixed.data(), kCrcOffset);
  crc = crc32c(fixed.data() + kPayloadHeaderBytes, fixed.size() - kPayloadHeaderBytes, crc);
  std::memcpy(fixed.data() + kCrcOffset, &crc, sizeof(crc));
  return fixed;
}

}  // namespace
}  // namespace braid::compress

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  braid::fuzz::target_name = "codec_decode_fuzz";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace braid::compress;
  Bytes input(reinterpret_cast<const std::byte*>(data), size);
  fuzz_payload(input);
  if (auto fixed = with_valid_checksum(input)) fuzz_payload(*fixed);
  return 0;
}
