#include "braid/tools/braid_train/idx_file.h"

#include <fmt/format.h>
#include <zlib.h>

#include <filesystem>
#include <functional>
#include <numeric>

#include "braid/base/error.h"

namespace braid::train {
namespace {

// The whole file, decompressed when it is gzip (zlib's gz* functions read plain files as is).
std::vector<std::uint8_t> read_maybe_gzipped(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw InvalidArgument({.op = "read_idx"}, fmt::format("{}: no such file", path));
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw InvalidArgument({.op = "read_idx"}, fmt::format("{}: cannot open", path));
  std::vector<std::uint8_t> bytes;
  std::uint8_t chunk[1 << 16];
  int got;
  while ((got = gzread(file, chunk, sizeof chunk)) > 0) bytes.insert(bytes.end(), chunk, chunk + got);
  int error = 0;
  std::string message = got < 0 ? gzerror(file, &error) : "";
  gzclose(file);
  if (got < 0) throw Corrupt({.op = "read_idx"}, fmt::format("{}: {}", path, message));
  return bytes;
}

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// "<dir>/<name>.gz" when present, else "<dir>/<name>".
std::string locate(const std::string& dir, const std::string& name) {
  std::filesystem::path plain = std::filesystem::path(dir) / name;
  std::filesystem::path gz = plain.string() + ".gz";
  return std::filesystem::exists(gz) ? gz.string() : plain.string();
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  std::vector<std::uint8_t> bytes = read_maybe_gzipped(path);
  ErrorContext context{.op = "read_idx"};
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08) {
    throw Corrupt(context, fmt::format("{}: not an IDX file of unsigned bytes (bad magic)", path));
  }
  std::size_t rank = bytes[3];
  if (rank < 1 || rank > 4 || bytes.size() < 4 + 4 * rank) {
    throw Corrupt(context, fmt::format("{}: {} dimensions in a {}-byte file", path, rank, bytes.size()));
  }
  IdxArray array;
  for (std::size_t d = 0; d < rank; ++d) array.dims.push_back(big_endian_u32(bytes.data() + 4 + 4 * d));
  std::size_t body = static_cast<std::size_t>(
      std::accumulate(array.dims.begin(), array.dims.end(), std::int64_t{1}, std::multiplies<>()));
  std::size_t header = 4 + 4 * rank;
  if (bytes.size() - header != body) {
    throw Corrupt(context, fmt::format("{}: the header promises {} bytes of data, the file has {}", path, body,
                                       bytes.size() - header));
  }
  array.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return array;
}

ImageSet read_image_set(const std::string& dir, const std::string& prefix, std::int64_t limit) {
  ErrorContext context{.op = "read_image_set"};
  IdxArray images = read_idx(locate(dir, prefix + "-images-idx3-ubyte"));
  IdxArray labels = read_idx(locate(dir, prefix + "-labels-idx1-ubyte"));
  if (images.dims.size() != 3 || labels.dims.size() != 1 || images.dims[0] != labels.dims[0]) {
    throw InvalidArgument(context, fmt::format("{}/{}: images and labels do not match ({} images, {} labels)", dir,
                                               prefix, images.dims[0], labels.dims[0]));
  }
  ImageSet set{.count = images.dims[0], .rows = images.dims[1], .cols = images.dims[2]};
  if (limit > 0 && limit < set.count) set.count = limit;
  std::size_t pixels = static_cast<std::size_t>(set.count * set.rows * set.cols);
  // Fashion-MNIST's training-set mean and standard deviation of x/255.
  constexpr float kMean = 0.2860f, kStd = 0.3530f;
  set.pixels.resize(pixels);
  for (std::size_t i = 0; i < pixels; ++i) set.pixels[i] = (static_cast<float>(images.data[i]) / 255.0f - kMean) / kStd;
  set.labels.resize(static_cast<std::size_t>(set.count));
  for (std::size_t i = 0; i < set.labels.size(); ++i) {
    if (labels.data[i] > 9) throw Corrupt(context, fmt::format("{}/{}: label {} of sample {}", dir, prefix, labels.data[i], i));
    set.labels[i] = labels.data[i];
  }
  return set;
}

}  // namespace braid::train
