#include "braid/compress/compression_state.h"

#include <cstring>

#include <fmt/format.h>

#include "braid/base/crc32c.h"
#include "braid/base/error.h"

namespace braid::compress {

namespace {

constexpr std::uint32_t kStateMagic = 0x53435242;  // "BRCS"
constexpr std::uint32_t kStateVersion = 1;

std::string key_of(const std::string& name, std::string_view role) { return fmt::format("{}/{}", name, role); }

class ImageWriter {
 public:
  template <typename T>
  void put(T value) {
    append(&value, sizeof(T));
  }
  void append(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const std::byte*>(data);
    out_.insert(out_.end(), p, p + bytes);
  }
  std::vector<std::byte> finish() {
    put<std::uint32_t>(crc32c(out_.data(), out_.size()));
    return std::move(out_);
  }

 private:
  std::vector<std::byte> out_;
};

// Reads an image front to back; every read is bounds-checked against the bytes left.
class ImageReader {
 public:
  explicit ImageReader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    T value;
    copy(&value, sizeof(T));
    return value;
  }
  void copy(void* out, std::size_t bytes) {
    if (bytes > bytes_.size() - pos_) fail(fmt::format("truncated at byte {} (needs {} more)", pos_, bytes));
    if (bytes > 0) std::memcpy(out, bytes_.data() + pos_, bytes);
    pos_ += bytes;
  }
  std::size_t left() const { return bytes_.size() - pos_; }
  [[noreturn]] static void fail(const std::string& why) {
    throw Corrupt({.op = "compression state"}, fmt::format("checkpoint image: {}", why));
  }

 private:
  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
};

}  // namespace

std::span<float> CompressionState::buffer(const std::string& name, std::string_view role, std::size_t count,
                                          const std::function<void(std::span<float>)>& init) {
  auto [it, created] = buffers_.try_emplace(key_of(name, role));
  if (created) {
    it->second.assign(count, 0.0f);
    if (init) init(it->second);
  } else if (it->second.size() != count) {
    throw InvalidArgument({.op = "compression state"},
                          fmt::format("tensor '{}' has {} state of {} elements, now asked for {} (two tensors with one "
                                      "name, or a changed model?)",
                                      name, role, it->second.size(), count));
  }
  return it->second;
}

std::span<const float> CompressionState::find(const std::string& name, std::string_view role) const {
  auto it = buffers_.find(key_of(name, role));
  return it == buffers_.end() ? std::span<const float>() : std::span<const float>(it->second);
}

std::size_t CompressionState::bytes() const {
  std::size_t total = 0;
  for (const auto& [key, values] : buffers_) total += values.size() * sizeof(float);
  return total;
}

std::vector<std::byte> CompressionState::serialize() const {
  ImageWriter w;
  w.put(kStateMagic);
  w.put(kStateVersion);
  w.put<std::uint64_t>(buffers_.size());
  for (const auto& [key, values] : buffers_) {
    w.put<std::uint32_t>(static_cast<std::uint32_t>(key.size()));
    w.append(key.data(), key.size());
    w.put<std::uint64_t>(values.size());
    w.append(values.data(), values.size() * sizeof(float));
  }
  return w.finish();
}

void CompressionState::deserialize(std::span<const std::byte> image) {
  if (image.size() < 4) ImageReader::fail("shorter than its checksum");
  std::uint32_t stored;
  std::memcpy(&stored, image.data() + image.size() - 4, 4);
  if (crc32c(image.data(), image.size() - 4) != stored) ImageReader::fail("CRC32C mismatch");
  ImageReader r(image.first(image.size() - 4));
  if (r.get<std::uint32_t>() != kStateMagic) ImageReader::fail("bad magic");
  if (auto version = r.get<std::uint32_t>(); version != kStateVersion) {
    ImageReader::fail(fmt::format("version {} (this build reads {})", version, kStateVersion));
  }
  auto entries = r.get<std::uint64_t>();
  std::map<std::string, std::vector<float>> loaded;
  for (std::uint64_t e = 0; e < entries; ++e) {
    // Checked before allocating: a CRC32C is no proof against a crafted 4 GiB length.
    auto key_bytes = r.get<std::uint32_t>();
    if (key_bytes > r.left()) ImageReader::fail("key runs past the end");
    std::string key(key_bytes, '\0');
    r.copy(key.data(), key.size());
    auto count = r.get<std::uint64_t>();
    if (count > r.left() / sizeof(float)) ImageReader::fail(fmt::format("entry '{}' runs past the end", key));
    std::vector<float> values(count);
    r.copy(values.data(), count * sizeof(float));
    loaded.emplace(std::move(key), std::move(values));
  }
  if (r.left() != 0) ImageReader::fail(fmt::format("{} stray bytes after the last entry", r.left()));
  buffers_ = std::move(loaded);
}

}  // namespace braid::compress
