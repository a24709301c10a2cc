// Codec "powersgd": one power-iteration step of PowerSGD (powersgd_math.h) on a 2-D tensor M
// (rows x cols): Q0 (cols x r) standard normal from the seed, P = orthonormal(M Q0),
// Q = M^T P, and M is approximated by P Q^T, exact when M has rank <= r. The warm start that
// makes PowerSGD converge (reusing last step's Q) and the allreduce of the factors belong to
// the compressed allreduce; this stateless codec always starts from the seed's Q0.
//
// Body: P (rows x r) then Q (cols x r), row-major fp32; header block = r, aux = rows, seed =
// the Q0 seed. 1-D tensors (no 2-D shape: biases, norms) are sent with codec none (its header
// and all), and decode accepts either header. A NaN or Inf in M turns the factors, and so every
// decoded element, into NaN (the orthonormalisation divides by a NaN/Inf norm); see
// orthonormalize_columns.
#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/compress/codec_impl.h"
#include "braid/compress/powersgd_math.h"

namespace braid::compress {

namespace {

void check_rank(std::int64_t r, Shape shape) {
  if (r > std::min(shape.rows, shape.cols)) {
    throw InvalidArgument({.op = "encode"}, fmt::format("powersgd: rank {} larger than the matrix ({}x{})", r,
                                                        shape.rows, shape.cols));
  }
}

void copy_floats_out(std::byte* dst, const std::vector<float>& src) {
  if (!src.empty()) std::memcpy(dst, src.data(), src.size() * sizeof(float));
}

std::vector<float> copy_floats_in(const std::byte* src, std::size_t count) {
  std::vector<float> dst(count);
  if (count > 0) std::memcpy(dst.data(), src, count * sizeof(float));
  return dst;
}

class PowerSgdCodec final : public Codec {
 public:
  explicit PowerSgdCodec(const CodecSpec& spec) : Codec(spec), none_(make_codec({.id = CodecId::kNone})) {}

  std::size_t max_encoded_bytes(std::int64_t count, Shape shape) const override {
    check_shape(count, shape);
    if (!shape.is_matrix()) return none_->max_encoded_bytes(count, shape);
    check_rank(spec().rank, shape);
    return kPayloadHeaderBytes + factor_floats(spec().rank, shape) * sizeof(float);
  }

  std::size_t encode(std::span<const float> x, Shape shape, const EncodeOptions& options, std::span<std::byte> out,
                     std::span<float> decoded) const override {
    check_shape(static_cast<std::int64_t>(x.size()), shape);
    check_decoded_length(x, decoded, CodecId::kPowerSgd);
    if (!shape.is_matrix()) return none_->encode(x, shape, options, out, decoded);
    const std::int64_t r = spec().rank;
    check_rank(r, shape);
    enforce_finite(x, options.non_finite, CodecId::kPowerSgd);

    ConstMatrixView m(x.data(), shape.rows, shape.cols);
    std::vector<float> q0(static_cast<std::size_t>(shape.cols * r));
    fill_standard_normal(options.seed, q0);
    std::vector<float> p(static_cast<std::size_t>(shape.rows * r));
    multiply(m, {q0.data(), shape.cols, r}, {p.data(), shape.rows, r});
    orthonormalize_columns({p.data(), shape.rows, r});
    std::vector<float> q(static_cast<std::size_t>(shape.cols * r));
    multiply_transposed(m, {p.data(), shape.rows, r}, {q.data(), shape.cols, r});

    std::byte* body = body_of(out).data();
    copy_floats_out(body, p);
    copy_floats_out(body + p.size() * sizeof(float), q);
    if (!decoded.empty()) {
      apply_low_rank({p.data(), shape.rows, r}, {q.data(), shape.cols, r}, {decoded.data(), shape.rows, shape.cols},
                     Combine::kOverwrite);
    }
    return finish_payload({.codec = CodecId::kPowerSgd,
                           .count = x.size(),
                           .block = static_cast<std::uint32_t>(r),
                           .aux = static_cast<std::uint64_t>(shape.rows),
                           .seed = options.seed},
                          options, (p.size() + q.size()) * sizeof(float), out);
  }

  void decode(std::span<const std::byte> payload, std::span<float> out, DecodeMode mode) const override {
    // Dispatch on the codec byte alone; whichever decoder runs then checks the whole header
    // (once: with a checksum, reading it twice would also compute the CRC twice).
    constexpr std::size_t kCodecByte = 5;  // payload_header.h's layout
    if (payload.size() > kCodecByte && payload[kCodecByte] == static_cast<std::byte>(CodecId::kNone)) {
      return none_->decode(payload, out, mode);
    }
    PayloadHeader header = expect_header(payload, CodecId::kPowerSgd, out.size());
    const std::int64_t r = header.block;
    if (header.aux < 1 || header.aux > header.count || header.count % header.aux != 0) {
      corrupt_payload(CodecId::kPowerSgd, fmt::format("{} rows do not divide {} elements", header.aux, header.count));
    }
    Shape shape{.rows = static_cast<std::int64_t>(header.aux), .cols = static_cast<std::int64_t>(header.count / header.aux)};
    if (r < 1 || r > std::min(shape.rows, shape.cols)) {
      corrupt_payload(CodecId::kPowerSgd, fmt::format("rank {} for a {}x{} matrix", r, shape.rows, shape.cols));
    }
    std::size_t floats = factor_floats(r, shape);  // <= 2 * count: no overflow
    BRAID_CHECK_EQ(header.payload_bytes, floats * sizeof(float), Corrupt, {.op = "decode"},
                   "compressed payload (powersgd): body bytes for rank {} and {}x{}", r, shape.rows, shape.cols);
    const std::byte* body = body_of(payload).data();
    std::vector<float> p = copy_floats_in(body, static_cast<std::size_t>(shape.rows * r));
    std::vector<float> q = copy_floats_in(body + p.size() * sizeof(float), static_cast<std::size_t>(shape.cols * r));
    apply_low_rank({p.data(), shape.rows, r}, {q.data(), shape.cols, r}, {out.data(), shape.rows, shape.cols},
                   mode == DecodeMode::kOverwrite ? Combine::kOverwrite : Combine::kAdd);
  }

 private:
  // Floats in P and Q: r * (rows + cols).
  static std::size_t factor_floats(std::int64_t r, Shape shape) {
    return static_cast<std::size_t>(r) * static_cast<std::size_t>(shape.rows + shape.cols);
  }

  std::unique_ptr<Codec> none_;
};

}  // namespace

std::unique_ptr<Codec> make_powersgd_codec(const CodecSpec& spec) { return std::make_unique<PowerSgdCodec>(spec); }

}  // namespace braid::compress
