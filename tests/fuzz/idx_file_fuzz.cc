// libFuzzer target over braid-train's IDX reader (tools/braid_train/idx_file.h): the input is
// an IDX file (Fashion-MNIST's format), plain or gzip-compressed, as `braid-train --data` reads
// it from a directory anyone may have filled. It drives parse_idx on the bytes, read_idx on
// them written to a file (zlib inflates a gzip input), and read_image_set on a directory
// holding the input as the images file and its tail as the labels file.
//
// Findings (fuzz_support.h):
//   - an exception other than braid::Corrupt (parse_idx, read_idx) or Corrupt /
//     InvalidArgument (read_image_set: the two files disagree);
//   - an accepted array whose data is not the product of its dimensions, or outside 1..4
//     dimensions, or that does not re-encode to the input (IDX has one encoding);
//   - read_idx and parse_idx disagreeing on a plain (not gzip) input;
//   - an accepted image set whose pixels or labels are not count x rows x cols and count, a
//     label outside 0..9, a pixel that is not finite;
//   - a crash or sanitizer report: a dimension product that overflows, or an allocation sized
//     by it (libFuzzer's -rss_limit_mb / -malloc_limit_mb report an allocation over 2 GiB).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "braid/tools/braid_train/idx_file.h"
#include "fuzz_support.h"
#include "scratch_dir.h"

namespace braid::train {
namespace {

using fuzz::require;

std::string encode(const IdxArray& a) {
  std::string out = {0, 0, 0x08, static_cast<char>(a.dims.size())};
  for (std::int64_t d : a.dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  out.append(a.data.begin(), a.data.end());
  return out;
}

bool is_gzip(std::string_view bytes) { return bytes.size() >= 2 && bytes[0] == '\x1f' && bytes[1] == '\x8b'; }

void check_array(const IdxArray& a, std::string_view input) {
  require(!a.dims.empty() && a.dims.size() <= 4, "an IDX array with a dimension count outside 1..4");
  std::uint64_t product = 1;
  for (std::int64_t d : a.dims) {
    require(d >= 0, "a negative IDX dimension");
    product *= static_cast<std::uint64_t>(d);  // a.data exists, so no overflow if the reader checked
  }
  require(product == a.data.size(), "IDX data that is not the product of the dimensions");
  if (!is_gzip(input)) require(encode(a) == input, "an IDX array that does not re-encode to its file");
}

void check_image_set(fuzz::ScratchDir& dir, std::string_view images, std::string_view labels, std::int64_t limit) {
  dir.clear();
  dir.write("train-images-idx3-ubyte", images);
  dir.write("train-labels-idx1-ubyte", labels);
  ImageSet set;
  if (!fuzz::succeeds("read_image_set", {ErrorKind::kCorrupt, ErrorKind::kInvalidArgument},
                      [&] { set = read_image_set(dir.path(), "train", limit); })) {
    return;
  }
  require(set.count >= 0 && (limit <= 0 || set.count <= limit), "an image set larger than its limit");
  require(set.pixels.size() == static_cast<std::size_t>(set.count * set.rows * set.cols),
          "an image set whose pixels are not count x rows x cols");
  require(set.labels.size() == static_cast<std::size_t>(set.count), "an image set with another number of labels");
  for (std::int64_t label : set.labels) require(label >= 0 && label <= 9, "a label outside 0..9 was accepted");
  for (float p : set.pixels) require(std::isfinite(p), "a pixel that is not finite");
}

}  // namespace
}  // namespace braid::train

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  braid::fuzz::target_name = "idx_file_fuzz";
  return 0;
}

// Input: the images file, whole; its last `split` bytes (split = the last input byte) are also
// the labels file, and the byte before caps the sample count.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace braid;
  using namespace braid::train;
  const std::string_view input = fuzz::as_text(data, size);
  const std::vector<std::uint8_t> bytes(data, data + size);
  IdxArray parsed;
  const bool parses = fuzz::succeeds("parse_idx", {ErrorKind::kCorrupt}, [&] { parsed = parse_idx(bytes, "fuzz.idx"); });
  if (parses) check_array(parsed, input);

  fuzz::scratch_dir().clear();
  const std::string file = fuzz::scratch_dir().write(is_gzip(input) ? "input.gz" : "input", input);
  IdxArray read;
  const bool reads = fuzz::succeeds("read_idx", {ErrorKind::kCorrupt}, [&] { read = read_idx(file); });
  if (reads) check_array(read, input);
  if (!is_gzip(input)) {
    fuzz::require(reads == parses && (!reads || (read.dims == parsed.dims && read.data == parsed.data)),
                  "read_idx and parse_idx disagree on a plain file");
  }

  const std::size_t split = size > 0 ? std::min<std::size_t>(data[size - 1], size) : 0;
  const std::int64_t limit = size > 1 ? data[size - 2] % 8 : 0;
  check_image_set(fuzz::scratch_dir(), input, input.substr(size - split), limit);
  return 0;
}
