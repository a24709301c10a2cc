#include "braid/torch/zero_shard_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <sstream>

#include "braid/torch/checked_archive.h"

namespace braid::torch {
namespace {

constexpr std::int64_t kShardFormat = 1;

std::string key(int bucket, const std::string& what) { return fmt::format("bucket{}.{}", bucket, what); }

std::string bytes_of(::torch::serialize::OutputArchive& archive) {
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

// Opens the file after checking its size against the manifest's (a missing or truncated file
// is named as such, not as whatever LibTorch's zip reader makes of it), reads its checksum
// table, and returns read(reader, archive); LibTorch's own errors become Corrupt naming the file.
template <typename Read>
auto read_archive(const std::string& path, std::int64_t bytes, const ErrorContext& context, Read&& read) {
  std::error_code error;
  auto size = std::filesystem::file_size(path, error);
  if (error) {
    throw Corrupt(context, fmt::format("{} is missing ({}): the manifest names it as part of the checkpoint", path,
                                       error.message()));
  }
  if (static_cast<std::int64_t>(size) != bytes) {
    throw Corrupt(context, fmt::format("{} has {} bytes, the manifest recorded {}: truncated or replaced", path, size,
                                       bytes));
  }
  try {
    ::torch::serialize::InputArchive archive;
    archive.load_from(path);
    ChecksumTable table = read_checksums_table(archive, context, path);
    return read(CheckedReader{table, context, path}, archive);
  } catch (const c10::Error& e) {  // not an archive, or a tensor LibTorch cannot find or decode
    throw Corrupt(context, fmt::format("cannot read {}: {}", path, e.what_without_backtrace()));
  }
}

// Reads `key` and checks it holds `numel` elements of `dtype`.
::torch::Tensor read_sized(const CheckedReader& reader, ::torch::serialize::InputArchive& archive,
                           const std::string& key, std::int64_t numel, ::torch::ScalarType dtype) {
  ::torch::Tensor t = reader.read(archive, key);
  if (t.numel() != numel || t.scalar_type() != dtype) {
    throw Corrupt(reader.context, fmt::format("{}: tensor '{}' holds {} elements of {}, the layout needs {} of {}",
                                              reader.path, key, t.numel(), c10::toString(t.scalar_type()), numel,
                                              c10::toString(dtype)));
  }
  return t;
}

SavedShard read_bucket(const CheckedReader& reader, ::torch::serialize::InputArchive& archive, int bucket,
                       std::int64_t real, const std::string& kind) {
  SavedShard saved{.param = read_sized(reader, archive, key(bucket, "param"), real, ::torch::kFloat32)};
  ::torch::Tensor state = read_sized(reader, archive, key(bucket, "state"), 2, ::torch::kInt64);
  saved.state.present = state[0].item<std::int64_t>() != 0;
  saved.state.step = state[1].item<std::int64_t>();
  if (!saved.state.present) return saved;
  for (const std::string& name : state_tensor_names(kind)) {
    saved.state.tensors.push_back(read_sized(reader, archive, key(bucket, name), real, ::torch::kFloat32));
  }
  return saved;
}

}  // namespace

std::string encode_shard_file(const ZeroCheckpointView& view, const std::string& kind, std::int64_t generation) {
  Communicator& comm = *view.comm;
  engine::ShardLayout layout = view.layout();
  auto buffers = static_cast<std::int64_t>(layout.buffers.size());
  ::torch::serialize::OutputArchive archive;
  ChecksumTable table;
  write_checked(archive, table, "", "header",
                ::torch::tensor({kShardFormat, generation, std::int64_t{comm.rank()}, std::int64_t{comm.size()}, buffers},
                                ::torch::kInt64));
  std::vector<std::string> names = state_tensor_names(kind);
  for (int b = 0; b < static_cast<int>(buffers); ++b) {
    BucketShard s = engine::bucket_shard(layout.buffers[static_cast<std::size_t>(b)], comm.rank());
    if (s.end == s.begin) continue;  // all padding: nothing to keep
    const ::torch::Tensor& shard = view.shards[static_cast<std::size_t>(b)];
    ShardState state = shard_state(*view.optimizer, kind, shard);
    auto real = [&](const ::torch::Tensor& t) { return t.narrow(0, 0, s.end - s.begin); };  // stage 3: not the tail
    write_checked(archive, table, "", key(b, "param"), real(shard));
    write_checked(archive, table, "", key(b, "state"),
                  ::torch::tensor({std::int64_t{state.present}, state.step}, ::torch::kInt64));
    for (std::size_t i = 0; state.present && i < names.size(); ++i) {
      write_checked(archive, table, "", key(b, names[i]), real(state.tensors[i]));
    }
  }
  write_checksums(archive, table);
  return bytes_of(archive);
}

std::map<int, SavedShard> read_shard_file(const std::string& path, std::int64_t bytes, const engine::ShardLayout& from,
                                          int rank, std::int64_t generation, const std::string& kind,
                                          const ErrorContext& context) {
  return read_archive(path, bytes, context, [&](const CheckedReader& reader, ::torch::serialize::InputArchive& archive) {
    auto buckets = static_cast<std::int64_t>(from.buffers.size());
    ::torch::Tensor header = read_sized(reader, archive, "header", 5, ::torch::kInt64);
    std::vector<std::int64_t> want = {kShardFormat, generation, rank, from.world_size(), buckets};
    std::vector<std::int64_t> got(header.data_ptr<std::int64_t>(), header.data_ptr<std::int64_t>() + 5);
    if (got != want) {
      throw Corrupt(context, fmt::format("{}: its header (format, generation, rank, world, buckets) is [{}], the "
                                         "manifest expects [{}]",
                                         path, fmt::join(got, ", "), fmt::join(want, ", ")));
    }
    std::map<int, SavedShard> shards;
    for (int b = 0; b < static_cast<int>(buckets); ++b) {
      BucketShard s = engine::bucket_shard(from.buffers[static_cast<std::size_t>(b)], rank);
      if (s.end > s.begin) shards[b] = read_bucket(reader, archive, b, s.end - s.begin, kind);
    }
    return shards;
  });
}

std::string encode_buffers_file(::torch::nn::Module& module, const std::string& prefix) {
  ::torch::serialize::OutputArchive archive;
  ChecksumTable table;
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    write_checked(archive, table, "", "buffer." + prefix + item.key(), item.value(), /*is_buffer=*/true);
  }
  write_checksums(archive, table);
  return bytes_of(archive);
}

std::vector<std::pair<::torch::Tensor, ::torch::Tensor>> read_buffers_file(const std::string& path, std::int64_t bytes,
                                                                           ::torch::nn::Module& module,
                                                                           const std::string& prefix,
                                                                           const ErrorContext& context) {
  return read_archive(path, bytes, context, [&](const CheckedReader& reader, ::torch::serialize::InputArchive& archive) {
    std::vector<std::pair<::torch::Tensor, ::torch::Tensor>> buffers;
    for (auto& item : module.named_buffers(/*recurse=*/true)) {
      ::torch::Tensor stored = reader.read(archive, "buffer." + prefix + item.key(), "", /*is_buffer=*/true);
      if (!stored.sizes().equals(item.value().sizes()) || stored.scalar_type() != item.value().scalar_type()) {
        throw InvalidArgument(context, fmt::format("{} is a checkpoint of another model: buffer '{}' has another shape "
                                                   "or dtype than this model's",
                                                   path, prefix + item.key()));
      }
      buffers.emplace_back(item.value(), stored);
    }
    return buffers;
  });
}

}  // namespace braid::torch
