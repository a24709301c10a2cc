#include "braid/compress/codec.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/compress/codec_impl.h"

namespace braid::compress {

std::unique_ptr<Codec> make_codec(const CodecSpec& spec) {
  // Re-validate: a spec built by hand may hold values parse_codec_spec would have refused.
  CodecSpec checked = parse_codec_spec(to_string(spec));
  if (spec.id == CodecId::kTopK || spec.id == CodecId::kRandomK) checked.ratio = spec.ratio;
  switch (spec.id) {
    case CodecId::kNone: return make_none_codec(checked);
    case CodecId::kFp16:
    case CodecId::kBf16: return make_half_codec(checked);
    case CodecId::kInt8: return make_int8_codec(checked);
    case CodecId::kSign: return make_sign_codec(checked);
    case CodecId::kTopK: return make_topk_codec(checked);
    case CodecId::kRandomK: return make_randomk_codec(checked);
    case CodecId::kPowerSgd: return make_powersgd_codec(checked);
  }
  throw InvalidArgument({.op = "make_codec"}, fmt::format("unknown codec id {}", static_cast<int>(spec.id)));
}

void decode_payload(std::span<const std::byte> payload, std::span<float> out, DecodeMode mode) {
  PayloadHeader header = read_payload_header(payload);
  CodecSpec spec{.id = header.codec};
  switch (header.codec) {
    case CodecId::kInt8:
    case CodecId::kSign:
      spec.block = header.block;
      if (spec.block < 1 || spec.block > kMaxBlock) corrupt_payload(header.codec, fmt::format("block size {}", header.block));
      break;
    case CodecId::kTopK:
    case CodecId::kRandomK:
      spec.ratio = 1.0;  // the payload's own k (header aux) is what the decoder uses
      break;
    case CodecId::kPowerSgd:
      spec.rank = header.block;
      if (spec.rank < 1 || spec.rank > kMaxPowerSgdRank) corrupt_payload(header.codec, fmt::format("rank {}", header.block));
      break;
    default:
      break;
  }
  make_codec(spec)->decode(payload, out, mode);
}

PayloadHeader expect_header(std::span<const std::byte> payload, CodecId codec, std::size_t out_count) {
  PayloadHeader header = read_payload_header(payload);
  if (header.codec != codec) {
    corrupt_payload(codec, fmt::format("the header names codec {}", codec_name(header.codec)));
  }
  BRAID_CHECK_EQ(header.count, out_count, InvalidArgument, {.op = "decode"},
                 "{} payload: element count vs output length", codec_name(codec));
  return header;
}

void corrupt_payload(CodecId codec, const std::string& why) {
  throw Corrupt({.op = "decode"}, fmt::format("compressed payload ({}): {}", codec_name(codec), why));
}

void check_shape(std::int64_t count, Shape shape) {
  if (count < 0) throw InvalidArgument({.op = "encode"}, fmt::format("negative element count {}", count));
  bool empty = shape.rows == 0 && shape.cols == 0;
  if (!empty && (shape.rows <= 0 || shape.cols <= 0 || shape.rows * shape.cols != count)) {
    throw InvalidArgument({.op = "encode"}, fmt::format("shape {}x{} does not hold {} elements", shape.rows,
                                                        shape.cols, count));
  }
}

void check_index_range(std::int64_t count, CodecId codec) {
  if (count > static_cast<std::int64_t>(std::numeric_limits<std::uint32_t>::max())) {
    throw InvalidArgument({.op = "encode"}, fmt::format("{}: {} elements do not fit its 32-bit indices (at most 2^32 - 1)",
                                                        codec_name(codec), count));
  }
}

void check_decoded_length(std::span<const float> x, std::span<float> decoded, CodecId codec) {
  if (!decoded.empty() && decoded.size() != x.size()) {
    throw InvalidArgument({.op = "encode"}, fmt::format("{}: decoded output holds {} elements, the input {}",
                                                        codec_name(codec), decoded.size(), x.size()));
  }
}

void enforce_finite(std::span<const float> x, NonFinitePolicy policy, CodecId codec) {
  if (policy != NonFinitePolicy::kRaise) return;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) {
      throw InvalidArgument({.op = "encode"}, fmt::format("{}: element {} is {} (non-finite values are refused under "
                                                          "NonFinitePolicy::kRaise)",
                                                          codec_name(codec), i, x[i]));
    }
  }
}

std::size_t finish_payload(PayloadHeader header, const EncodeOptions& options, std::size_t body_bytes,
                           std::span<std::byte> out) {
  header.payload_bytes = body_bytes;
  header.flags = options.checksum ? kHasChecksum : 0;
  write_payload_header(header, out);
  return kPayloadHeaderBytes + body_bytes;
}

}  // namespace braid::compress
