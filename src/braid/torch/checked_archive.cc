#include "braid/torch/checked_archive.h"

#include <fmt/format.h>

#include <cstring>

#include "braid/base/crc32c.h"

namespace braid::torch {

::torch::Tensor bytes_tensor(const void* data, std::size_t size) {
  ::torch::Tensor t = ::torch::empty({static_cast<std::int64_t>(size)}, ::torch::kUInt8);
  if (size > 0) std::memcpy(t.data_ptr(), data, size);
  return t;
}

std::string string_of(const ::torch::Tensor& t) {
  return std::string(static_cast<const char*>(t.data_ptr()), static_cast<std::size_t>(t.numel()));
}

void write_checked(::torch::serialize::OutputArchive& archive, ChecksumTable& table, const std::string& prefix,
                   const std::string& key, const ::torch::Tensor& t, bool is_buffer) {
  ::torch::Tensor c = t.detach().contiguous();
  table.add(prefix + key, c.data_ptr(), static_cast<std::size_t>(c.nbytes()));
  archive.write(key, c, is_buffer);
}

void write_checksums(::torch::serialize::OutputArchive& archive, const ChecksumTable& table) {
  std::string checksums = table.encode();
  archive.write("checksums", bytes_tensor(checksums.data(), checksums.size()));
  archive.write("checksums_crc32c", ::torch::tensor({static_cast<std::int64_t>(crc32c(checksums.data(), checksums.size()))},
                                                    ::torch::kInt64));
}

ChecksumTable read_checksums_table(::torch::serialize::InputArchive& archive, const ErrorContext& context,
                                   const std::string& path) {
  ::torch::Tensor checksums, checksums_crc;
  archive.read("checksums", checksums);
  archive.read("checksums_crc32c", checksums_crc);
  if (checksums_crc.numel() != 1) throw Corrupt(context, fmt::format("{}: no checksum of its checksum table", path));
  return ChecksumTable::decode(string_of(checksums), static_cast<std::uint32_t>(checksums_crc.item<std::int64_t>()),
                               context, path);
}

::torch::Tensor CheckedReader::read(::torch::serialize::InputArchive& archive, const std::string& key,
                                    const std::string& prefix, bool is_buffer) const {
  ::torch::Tensor t;
  archive.read(key, t, is_buffer);
  t = t.contiguous();
  table.verify(prefix + key, t.data_ptr(), static_cast<std::size_t>(t.nbytes()), context, path);
  return t;
}

}  // namespace braid::torch
