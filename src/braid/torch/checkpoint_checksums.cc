#include "braid/torch/checkpoint_checksums.h"

#include <charconv>

#include <fmt/format.h>

#include "braid/base/crc32c.h"

namespace braid::torch {

void ChecksumTable::add(const std::string& key, const void* data, std::size_t bytes) {
  crcs_[key] = crc32c(data, bytes);
}

std::string ChecksumTable::encode() const {
  std::string text;
  for (const auto& [key, crc] : crcs_) text += fmt::format("{:08x} {}\n", crc, key);
  return text;
}

ChecksumTable ChecksumTable::decode(std::string_view text, std::uint32_t text_crc, const ErrorContext& context,
                                    const std::string& path) {
  if (crc32c(text.data(), text.size()) != text_crc) {
    throw Corrupt(context, fmt::format("{}: its table of tensor checksums is damaged (CRC32C mismatch): the checkpoint "
                                       "cannot be trusted",
                                       path));
  }
  ChecksumTable table;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    std::uint32_t crc = 0;
    auto [after, ec] = std::from_chars(line.data(), line.data() + line.size(), crc, 16);
    if (ec != std::errc() || after != line.data() + 8 || line.size() < 10 || line[8] != ' ' || end == text.npos) {
      throw Corrupt(context, fmt::format("{}: malformed checksum line '{}'", path, line));
    }
    table.crcs_[std::string(line.substr(9))] = crc;
    text.remove_prefix(end + 1);
  }
  return table;
}

void ChecksumTable::verify(const std::string& key, const void* data, std::size_t bytes, const ErrorContext& context,
                           const std::string& path) const {
  auto it = crcs_.find(key);
  if (it == crcs_.end()) throw Corrupt(context, fmt::format("{}: tensor '{}' has no checksum", path, key));
  std::uint32_t got = crc32c(data, bytes);
  if (got != it->second) {
    throw Corrupt(context, fmt::format("{}: tensor '{}' is damaged: its {} bytes have CRC32C {:08x}, the checkpoint "
                                       "recorded {:08x}; resume from an intact copy, or start over",
                                       path, key, bytes, got, it->second));
  }
}

}  // namespace braid::torch
