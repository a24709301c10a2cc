#include "braid/tools/braid_train/idx_file.h"

#include <fmt/format.h>
#include <zlib.h>

#include <filesystem>
#include <optional>
#include <span>

#include "braid/base/error.h"

namespace braid::train {
namespace {

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

struct IdxHeader {
  std::vector<std::int64_t> dims;
  std::size_t header_bytes = 0;
  std::size_t body_bytes = 0;  // the product of dims, at most kMaxIdxBodyBytes
};

// The header at the front of `bytes`, or nullopt while fewer bytes than it takes are there.
// Throws Corrupt for a bad magic, a dimension count outside 1..4, or dimensions whose product
// passes kMaxIdxBodyBytes (checked as it is multiplied, so it never overflows).
std::optional<IdxHeader> read_header(std::span<const std::uint8_t> bytes, const std::string& path) {
  const ErrorContext context{.op = "read_idx"};
  if (bytes.size() < 4) return std::nullopt;
  if (bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08) {
    throw Corrupt(context, fmt::format("{}: not an IDX file of unsigned bytes (bad magic)", path));
  }
  const std::size_t rank = bytes[3];
  if (rank < 1 || rank > 4) throw Corrupt(context, fmt::format("{}: {} dimensions (IDX files have 1 to 4)", path, rank));
  IdxHeader header{.header_bytes = 4 + 4 * rank, .body_bytes = 1};
  if (bytes.size() < header.header_bytes) return std::nullopt;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::uint32_t size = big_endian_u32(bytes.data() + 4 + 4 * d);
    if (size != 0 && header.body_bytes > kMaxIdxBodyBytes / size) {
      throw Corrupt(context, fmt::format("{}: its dimensions promise more than {} bytes of data", path, kMaxIdxBodyBytes));
    }
    header.body_bytes *= size;
    header.dims.push_back(size);
  }
  return header;
}

// The bytes of one item (one entry of the first dimension).
std::size_t item_bytes(const IdxHeader& header) {
  return header.dims[0] == 0 ? 0 : header.body_bytes / static_cast<std::size_t>(header.dims[0]);
}

// How many of the file's items a reader that wants `limit` of them keeps (0: every one).
std::int64_t kept_items(const IdxHeader& header, std::int64_t limit) {
  return limit > 0 && limit < header.dims[0] ? limit : header.dims[0];
}

// The bytes of the IDX file that hold its header and first `limit` items (every item when
// limit is 0 or past the count), decompressed when it is gzip (zlib's gz* functions read plain
// files as is). Reading the whole file stops one byte past what the header promises: a small
// .gz that inflates to far more (a corrupt or hostile file) is refused, never held in memory
// whole. Reading a limited part stops at its last byte (the trainer's --train-samples: the
// full training set is 47 MB to inflate).
std::vector<std::uint8_t> read_maybe_gzipped(const std::string& path, std::int64_t limit) {
  if (!std::filesystem::is_regular_file(path)) {
    throw InvalidArgument({.op = "read_idx"}, fmt::format("{}: no such file", path));
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw InvalidArgument({.op = "read_idx"}, fmt::format("{}: cannot open", path));
  std::vector<std::uint8_t> bytes;
  std::optional<std::size_t> promised;  // header and the items wanted
  bool whole = true;
  std::uint8_t chunk[1 << 16];
  int got;
  while ((got = gzread(file, chunk, sizeof chunk)) > 0) {
    bytes.insert(bytes.end(), chunk, chunk + got);
    try {
      if (!promised) {
        if (auto header = read_header(bytes, path)) {
          const std::int64_t kept = kept_items(*header, limit);
          whole = kept == header->dims[0];
          promised = header->header_bytes + static_cast<std::size_t>(kept) * item_bytes(*header);
        }
      }
    } catch (...) {
      gzclose(file);
      throw;
    }
    if (promised && !whole && bytes.size() >= *promised) {
      bytes.resize(*promised);
      break;
    }
    if (promised && bytes.size() > *promised) break;  // parse_idx says "longer than the header says"
  }
  int error = 0;
  std::string message = got < 0 ? gzerror(file, &error) : "";
  gzclose(file);
  if (got < 0) throw Corrupt({.op = "read_idx"}, fmt::format("{}: {}", path, message));
  return bytes;
}

// "<dir>/<name>.gz" when present, else "<dir>/<name>".
std::string locate(const std::string& dir, const std::string& name) {
  std::filesystem::path plain = std::filesystem::path(dir) / name;
  std::filesystem::path gz = plain.string() + ".gz";
  return std::filesystem::exists(gz) ? gz.string() : plain.string();
}

}  // namespace

IdxArray read_idx(const std::string& path, std::int64_t limit) {
  return parse_idx(read_maybe_gzipped(path, limit), path, limit);
}

IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& path, std::int64_t limit) {
  std::optional<IdxHeader> header = read_header(bytes, path);
  if (!header) {
    throw Corrupt({.op = "read_idx"}, fmt::format("{}: {} bytes, shorter than an IDX header", path, bytes.size()));
  }
  const std::int64_t kept = kept_items(*header, limit);
  const std::size_t body = bytes.size() - header->header_bytes;
  if (kept < header->dims[0]) {
    // Only the first items were read: the file must hold them, what follows is not looked at.
    const std::size_t wanted = static_cast<std::size_t>(kept) * item_bytes(*header);
    if (body < wanted) {
      throw Corrupt({.op = "read_idx"}, fmt::format("{}: its first {} items take {} bytes of data, the file has {}", path,
                                                    kept, wanted, body));
    }
  } else if (body != header->body_bytes) {
    throw Corrupt({.op = "read_idx"}, fmt::format("{}: the header promises {} bytes of data, the file has {}{}", path,
                                                  header->body_bytes, body,
                                                  body > header->body_bytes ? " or more" : ""));
  }
  const auto data = bytes.begin() + static_cast<std::ptrdiff_t>(header->header_bytes);
  const auto kept_bytes = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(kept) * item_bytes(*header));
  const std::int64_t in_file = header->dims[0];
  IdxArray array{.dims = std::move(header->dims), .items_in_file = in_file, .data = {data, data + kept_bytes}};
  array.dims[0] = kept;
  return array;
}

ImageSet read_image_set(const std::string& dir, const std::string& prefix, std::int64_t limit) {
  ErrorContext context{.op = "read_image_set"};
  IdxArray images = read_idx(locate(dir, prefix + "-images-idx3-ubyte"), limit);
  IdxArray labels = read_idx(locate(dir, prefix + "-labels-idx1-ubyte"), limit);
  if (images.dims.size() != 3 || labels.dims.size() != 1 || images.items_in_file != labels.items_in_file) {
    throw InvalidArgument(context, fmt::format("{}/{}: images and labels do not match ({} images, {} labels)", dir,
                                               prefix, images.items_in_file, labels.items_in_file));
  }
  ImageSet set{.count = images.dims[0], .rows = images.dims[1], .cols = images.dims[2]};
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
