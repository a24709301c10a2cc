#include "compressed_inputs.h"

#include <algorithm>
#include <cmath>

#include "braid/base/reduce_op.h"
#include "braid/compress/codec.h"
#include "braid/compress/compressed_call.h"

namespace braid::testing {

namespace {

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// decode(encode(x)) with the codec into out, added (kAccumulate) or written (kOverwrite).
void add_decoded(const compress::Codec& codec, std::span<const float> x, std::span<float> out,
                 compress::DecodeMode mode = compress::DecodeMode::kAccumulate) {
  std::vector<std::byte> payload(codec.max_encoded_bytes(static_cast<std::int64_t>(x.size()), {}));
  std::size_t bytes = codec.encode(x, {}, {}, payload);
  codec.decode(std::span(payload).first(bytes), out, mode);
}

void finish_average(std::span<float> x, int ranks, bool average) {
  if (average) divide_by(x.data(), x.size(), DType::kF32, ranks);
}

}  // namespace

std::vector<float> compressed_input(std::uint64_t seed, int rank, std::size_t count) {
  std::vector<float> x(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t h = mix(seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(rank) * 0x1000003ull + i);
    double unit = static_cast<double>(h >> 11) * 0x1p-53 * 2.0 - 1.0;  // (-1, 1)
    double magnitude = std::ldexp(1.0, static_cast<int>((i / 300 + static_cast<std::size_t>(rank)) % 7) - 3);
    double value = unit * magnitude;
    if (std::fabs(value) < 0x1p-13) value = std::copysign(0x1p-13, unit);
    x[i] = static_cast<float>(value);
  }
  return x;
}

std::vector<float> exact_allreduce(std::uint64_t seed, int ranks, std::size_t count, bool average) {
  std::vector<double> sum(count, 0.0);
  for (int r = 0; r < ranks; ++r) {
    auto x = compressed_input(seed, r, count);
    for (std::size_t i = 0; i < count; ++i) sum[i] += x[i];
  }
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(average ? sum[i] / ranks : sum[i]);
  return out;
}

namespace {

// The two stages over `inputs` (one per participant, in rank order).
std::vector<float> two_stage_of(const compress::Codec& codec, const std::vector<std::vector<float>>& inputs,
                                std::size_t count, bool average) {
  const int ranks = static_cast<int>(inputs.size());
  std::vector<float> result(count, 0.0f);
  std::size_t align = compress::two_stage_shard_align(codec.spec());
  for (int p = 0; p < ranks; ++p) {
    auto shard = compress::shard_bounds(count, ranks, p, align);
    std::vector<float> sum(shard.size(), 0.0f);
    for (const auto& input : inputs) add_decoded(codec, std::span(input).subspan(shard.begin, shard.size()), sum);
    finish_average(sum, ranks, average);
    std::span<float> out = std::span(result).subspan(shard.begin, shard.size());
    add_decoded(codec, sum, out, compress::DecodeMode::kOverwrite);
  }
  return result;
}

}  // namespace

std::vector<float> simulate_two_stage(const compress::CodecSpec& spec, std::uint64_t seed, int ranks,
                                      std::size_t count, bool average) {
  auto codec = compress::make_codec(spec);
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < ranks; ++r) inputs.push_back(compressed_input(seed, r, count));
  return two_stage_of(*codec, inputs, count, average);
}

std::vector<float> simulate_host_striped(const compress::CodecSpec& spec, std::uint64_t seed, const Topology& topology,
                                         std::size_t count, bool average) {
  auto codec = compress::make_codec(spec);
  const auto local = static_cast<int>(topology.ranks_on_host(0).size());
  std::vector<float> result(count, 0.0f);
  for (int q = 0; q < local; ++q) {
    auto shard = compress::shard_bounds(count, local, q, compress::two_stage_shard_align(spec));
    std::vector<std::vector<float>> host_shards;  // stripe q's inputs: each host's sum of shard q
    for (int h = 0; h < topology.num_hosts(); ++h) {
      std::vector<float> sum(shard.size(), 0.0f);
      for (int r : topology.ranks_on_host(h)) {
        auto x = compressed_input(seed, r, count);
        for (std::size_t i = 0; i < shard.size(); ++i) sum[i] += x[shard.begin + i];
      }
      finish_average(sum, local, average);
      host_shards.push_back(std::move(sum));
    }
    auto reduced = two_stage_of(*codec, host_shards, shard.size(), average);
    std::copy(reduced.begin(), reduced.end(), result.begin() + static_cast<std::ptrdiff_t>(shard.begin));
  }
  return result;
}

std::vector<float> simulate_topk(const compress::CodecSpec& spec, std::uint64_t seed, int ranks, std::size_t count,
                                 bool average) {
  auto codec = compress::make_codec(spec);
  std::vector<float> result(count, 0.0f);
  for (int r = 0; r < ranks; ++r) add_decoded(*codec, compressed_input(seed, r, count), result);
  finish_average(result, ranks, average);
  return result;
}

}  // namespace braid::testing
