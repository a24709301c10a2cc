// Writes the decode fuzzer's seed corpus: valid payloads of every codec, so that mutation starts
// past the magic, version and length checks and inside each codec's body decoder.
//
//   codec_fuzz_seeds OUT_DIR [CODEC...]     (default: every codec)
//
// One folder per codec (OUT_DIR/<codec>/), named after the spec's codec (powersgd's 1-D
// fallback, whose header says none, sits under powersgd/). Each spec is encoded at a few
// element counts (empty, one element, less than a block, several blocks, a 2-D shape for
// powersgd), with plain values and with non-finite / subnormal / extreme ones, with and without
// the CRC32C. An encode the codec refuses (InvalidArgument, e.g. rank larger than the matrix)
// is skipped: the seeds are what senders can really produce.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/compress/codec.h"

namespace braid::compress {
namespace {

namespace fs = std::filesystem;

struct SeedShape {
  std::int64_t count;
  Shape shape;  // only powersgd looks at it
};

constexpr SeedShape kShapes[] = {
    {0, {}}, {1, {}}, {5, {}}, {33, {.rows = 3, .cols = 11}}, {300, {.rows = 15, .cols = 20}}, {1100, {}},
};

const char* const kSpecs[] = {
    "none",    "fp16",     "bf16",   "int8",        "int8:7",    "int8:64",    "sign",       "sign:5",
    "sign:64", "topk:0.1", "topk:1", "randomk:0.3", "randomk:1", "powersgd:1", "powersgd:2",
};

std::vector<float> plain_values(std::int64_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(count));
  for (float& v : x) v = normal(rng);
  return x;
}

// The inputs codecs must survive: NaN, infinities, signed zero, subnormals, the extremes.
std::vector<float> special_values(std::int64_t count, std::uint32_t seed) {
  std::vector<float> x = plain_values(count, seed);
  using limits = std::numeric_limits<float>;
  const float specials[] = {limits::quiet_NaN(),  limits::infinity(), -limits::infinity(), -0.0f,
                            limits::denorm_min(), limits::max(),      -limits::max(),      limits::min()};
  for (std::size_t i = 0; i < x.size(); i += 3) x[i] = specials[(i / 3) % std::size(specials)];
  return x;
}

bool write_seed(const CodecSpec& spec, const SeedShape& seed_shape, const std::vector<float>& x, bool checksum,
                const fs::path& file) {
  std::unique_ptr<Codec> codec = make_codec(spec);
  Shape shape = spec.id == CodecId::kPowerSgd ? seed_shape.shape : Shape{};
  try {
    std::vector<std::byte> payload(codec->max_encoded_bytes(seed_shape.count, shape));
    EncodeOptions options{.seed = 12345, .checksum = checksum};
    std::size_t bytes = codec->encode(x, shape, options, payload);
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(payload.data()), static_cast<std::streamsize>(bytes));
    return true;
  } catch (const InvalidArgument&) {
    return false;  // e.g. rank larger than the matrix: not a payload any sender writes
  }
}

int write_all(const fs::path& out_dir, const std::vector<std::string>& codecs) {
  int written = 0;
  for (const char* text : kSpecs) {
    CodecSpec spec = parse_codec_spec(text);
    std::string name(codec_name(spec.id));
    if (!codecs.empty() && std::find(codecs.begin(), codecs.end(), name) == codecs.end()) continue;
    fs::path dir = out_dir / name;
    fs::create_directories(dir);
    std::string stem = text;
    for (char& c : stem) c = c == ':' ? '_' : c;
    for (const SeedShape& seed_shape : kShapes) {
      auto count = seed_shape.count;
      for (bool special : {false, true}) {
        std::vector<float> x = special ? special_values(count, 7) : plain_values(count, 7);
        for (bool checksum : {false, true}) {
          auto file = fmt::format("{}-n{}{}{}.bin", stem, count, special ? "-special" : "", checksum ? "-crc" : "");
          written += write_seed(spec, seed_shape, x, checksum, dir / file) ? 1 : 0;
        }
      }
    }
  }
  return written;
}

}  // namespace
}  // namespace braid::compress

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [CODEC...]\n", argv[0]);
    return 2;
  }
  try {
    int written = braid::compress::write_all(argv[1], std::vector<std::string>(argv + 2, argv + argc));
    std::printf("codec_fuzz_seeds: wrote %d payloads under %s\n", written, argv[1]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "codec_fuzz_seeds: %s\n", e.what());
    return 1;
  }
}
