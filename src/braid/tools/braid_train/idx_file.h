// Reading IDX files (LeCun's MNIST format, also Fashion-MNIST's), plain or gzip-compressed:
// a big-endian header (magic 0x0000 08 NN: unsigned bytes, NN dimensions, then NN u32 sizes)
// followed by the bytes. Torch-free: the trainer turns the result into tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace braid::train {

struct IdxArray {
  std::vector<std::int64_t> dims;   // e.g. {60000, 28, 28} or {60000}; dims[0]: the items kept
  std::int64_t items_in_file = 0;   // the header's first dimension (dims[0] when all are read)
  std::vector<std::uint8_t> data;   // row-major, product(dims) bytes
};

// The most data an IDX file may promise (Fashion-MNIST's largest file holds 47 MB): a header
// promising more is Corrupt before anything is allocated for it.
inline constexpr std::size_t kMaxIdxBodyBytes = std::size_t{1} << 32;

// Throws InvalidArgument naming the path for a missing or unreadable file, and Corrupt for a
// bad magic, a dimension count outside 1..4, dimensions promising more than kMaxIdxBodyBytes,
// or a body shorter or longer than the header says. With limit > 0 only the header and the
// first `limit` items are read (decompressed) and checked: a file too short to hold them is
// Corrupt, the rest of it is not looked at.
IdxArray read_idx(const std::string& path, std::int64_t limit = 0);
// The same from the file's bytes, already decompressed (`path` names it in errors: Corrupt only).
IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& path, std::int64_t limit = 0);

// Fashion-MNIST (or MNIST) as the trainer uses it.
struct ImageSet {
  std::int64_t count = 0, rows = 0, cols = 0;
  std::vector<float> pixels;         // count x rows x cols, scaled to [0, 1] then normalised
  std::vector<std::int64_t> labels;  // count, in 0..9
};

// Reads <dir>/<prefix>-images-idx3-ubyte[.gz] and <prefix>-labels-idx1-ubyte[.gz] (prefix
// "train" or "t10k"), keeping (and reading) the first `limit` samples when limit > 0. Throws InvalidArgument
// when the files are missing or disagree on the count, Corrupt for a label outside 0..9.
ImageSet read_image_set(const std::string& dir, const std::string& prefix, std::int64_t limit);

}  // namespace braid::train
