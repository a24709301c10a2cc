// Codec "none": the fp32 values as they are, behind the common header. It is what small
// tensors, warm-up steps and powersgd's 1-D fallback send, and the baseline every other
// codec's wire volume is compared against.
#include <cstring>

#include "braid/compress/codec_impl.h"

namespace braid::compress {

namespace {

class NoneCodec final : public Codec {
 public:
  explicit NoneCodec(const CodecSpec& spec) : Codec(spec) {}

  std::size_t max_encoded_bytes(std::int64_t count, Shape shape) const override {
    check_shape(count, shape);
    return kPayloadHeaderBytes + static_cast<std::size_t>(count) * sizeof(float);
  }

  std::size_t encode(std::span<const float> x, Shape shape, const EncodeOptions& options, std::span<std::byte> out,
                     std::span<float> decoded) const override {
    check_shape(static_cast<std::int64_t>(x.size()), shape);
    enforce_finite(x, options.non_finite, CodecId::kNone);
    std::size_t bytes = x.size_bytes();
    if (bytes > 0) std::memcpy(body_of(out).data(), x.data(), bytes);
    if (!decoded.empty() && bytes > 0) std::memcpy(decoded.data(), x.data(), bytes);
    return finish_payload({.codec = CodecId::kNone, .count = x.size()}, options, bytes, out);
  }

  void decode(std::span<const std::byte> payload, std::span<float> out, DecodeMode mode) const override {
    PayloadHeader header = expect_header(payload, CodecId::kNone, out.size());
    if (header.payload_bytes != out.size_bytes()) {
      corrupt_payload(CodecId::kNone, "body length does not match the element count");
    }
    const std::byte* body = body_of(payload).data();
    if (mode == DecodeMode::kOverwrite) {
      if (!out.empty()) std::memcpy(out.data(), body, out.size_bytes());
      return;
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      float value;
      std::memcpy(&value, body + i * sizeof(float), sizeof(float));
      out[i] += value;
    }
  }
};

}  // namespace

std::unique_ptr<Codec> make_none_codec(const CodecSpec& spec) { return std::make_unique<NoneCodec>(spec); }

}  // namespace braid::compress
