#include "braid/torch/zero_checkpoint_manifest.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "braid/base/crc32c.h"

namespace braid::torch {
namespace {

constexpr int kFormat = 1;

using nlohmann::json;

// A well-formed JSON document that is not a manifest (decode_manifest names the file).
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An integer field, never converted from a float or wrapped from a larger unsigned value:
// nlohmann's get<std::int64_t>() casts a double such as 9e28 (undefined behaviour) and
// truncates 1.5 silently (found by tests/fuzz/checkpoint_manifest_fuzz).
template <typename Int>
Int integer_of(const json& j) {
  const bool fits = j.is_number_integer() &&
                    (j.is_number_unsigned() ? j.get<std::uint64_t>() <= std::uint64_t{std::numeric_limits<Int>::max()}
                                            : j.get<std::int64_t>() >= std::numeric_limits<Int>::min() &&
                                                  j.get<std::int64_t>() <= std::numeric_limits<Int>::max());
  if (!fits) throw Malformed(fmt::format("{} is not an integer in range", j.dump()));
  return static_cast<Int>(j.get<std::int64_t>());
}

json file_json(const ManifestFile& f) { return {{"file", f.file}, {"bytes", f.bytes}}; }

ManifestFile file_of(const json& j) {
  ManifestFile f{.file = j.at("file").get<std::string>(), .bytes = integer_of<std::int64_t>(j.at("bytes"))};
  // A name, never a path: the loader opens it inside the checkpoint directory only.
  if (f.file.empty() || f.file.find('/') != std::string::npos || f.file.starts_with(".") || f.bytes < 0) {
    throw Malformed(fmt::format("bad file entry {}", j.dump()));
  }
  return f;
}

json body_of(const ZeroManifest& m) {
  json buckets = json::array();
  for (const ManifestBucket& b : m.buckets) {
    json params = json::array();
    for (const ManifestParam& p : b.params) params.push_back({{"name", p.name}, {"count", p.count}});
    buckets.push_back({{"elements", b.elements()}, {"params", params}});
  }
  json shards = json::array();
  for (const ManifestFile& f : m.shards) shards.push_back(file_json(f));
  return {{"format", kFormat},
          {"generation", m.generation},
          {"world_size", m.world_size},
          {"optimizer", m.optimizer},
          {"fingerprint", m.fingerprint},
          {"position", {{"step", m.step}, {"epoch", m.epoch}, {"batch_in_epoch", m.batch_in_epoch}}},
          {"buckets", buckets},
          {"shards", shards},
          {"buffers", file_json(m.buffers)}};
}

ZeroManifest manifest_of(const json& body) {
  ZeroManifest m{.generation = integer_of<std::int64_t>(body.at("generation")),
                 .world_size = integer_of<int>(body.at("world_size")),
                 .optimizer = body.at("optimizer").get<std::string>(),
                 .fingerprint = body.at("fingerprint").get<std::string>(),
                 .step = integer_of<std::int64_t>(body.at("position").at("step")),
                 .epoch = integer_of<std::int64_t>(body.at("position").at("epoch")),
                 .batch_in_epoch = integer_of<std::int64_t>(body.at("position").at("batch_in_epoch")),
                 .buffers = file_of(body.at("buffers"))};
  for (const json& b : body.at("buckets")) {
    ManifestBucket bucket;
    if (b.at("params").empty()) throw Malformed("a bucket without parameters");
    std::int64_t elements = 0;  // summed here, checked: elements() would overflow on counts near 2^63
    for (const json& p : b.at("params")) {
      bucket.params.push_back(
          {.name = p.at("name").get<std::string>(), .count = integer_of<std::int64_t>(p.at("count"))});
      if (bucket.params.back().count < 0) throw Malformed("a negative parameter count");
      if (__builtin_add_overflow(elements, bucket.params.back().count, &elements)) {
        throw Malformed("a bucket's parameter counts overflow 64 bits");
      }
    }
    if (elements != integer_of<std::int64_t>(b.at("elements"))) {
      throw Malformed("a bucket's elements are not its parameters' sum");
    }
    m.buckets.push_back(std::move(bucket));
  }
  for (const json& f : body.at("shards")) m.shards.push_back(file_of(f));
  if (m.world_size < 1 || m.shards.size() != static_cast<std::size_t>(m.world_size)) {
    throw Malformed(fmt::format("{} shard files for a world of {}", m.shards.size(), m.world_size));
  }
  return m;
}

std::vector<ManifestParam> flat_params(const std::vector<ManifestBucket>& buckets) {
  std::vector<ManifestParam> all;
  for (const ManifestBucket& b : buckets) all.insert(all.end(), b.params.begin(), b.params.end());
  return all;
}

}  // namespace

std::int64_t ManifestBucket::elements() const {
  std::int64_t sum = 0;
  for (const ManifestParam& p : params) sum += p.count;
  return sum;
}

std::string encode_manifest(const ZeroManifest& manifest) {
  json body = body_of(manifest);
  std::string text = body.dump();
  return json{{"body", body}, {"crc32c", fmt::format("{:08x}", crc32c(text.data(), text.size()))}}.dump(1) + "\n";
}

ZeroManifest decode_manifest(const std::string& text, const ErrorContext& context, const std::string& path) {
  json whole;
  try {
    whole = json::parse(text);
  } catch (const json::exception& e) {
    throw Corrupt(context, fmt::format("{}: not a readable manifest (truncated or damaged?): {}", path, e.what()));
  }
  try {
    std::string body = whole.at("body").dump();
    std::string recorded = whole.at("crc32c").get<std::string>();
    std::string actual = fmt::format("{:08x}", crc32c(body.data(), body.size()));
    if (recorded != actual) {
      throw Corrupt(context, fmt::format("{}: the manifest is damaged: its body has CRC32C {}, it recorded {}", path,
                                         actual, recorded));
    }
    int format = integer_of<int>(whole.at("body").at("format"));
    if (format != kFormat) {
      throw Corrupt(context, fmt::format("{}: manifest format {}, this braid reads {}", path, format, kFormat));
    }
    return manifest_of(whole.at("body"));
  } catch (const json::exception& e) {
    throw Corrupt(context, fmt::format("{}: a malformed manifest: {}", path, e.what()));
  } catch (const Malformed& e) {
    throw Corrupt(context, fmt::format("{}: a malformed manifest: {}", path, e.what()));
  }
}

engine::ShardLayout manifest_layout(const std::vector<ManifestBucket>& buckets, int world) {
  std::vector<engine::ShardParamInfo> infos;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    for (const ManifestParam& p : buckets[b].params) {
      infos.push_back({.name = p.name, .count = p.count, .element_bytes = sizeof(float), .group = static_cast<int>(b)});
    }
  }
  return engine::plan_shard_layout(infos, {.world_size = world, .alignment_bytes = sizeof(float)});
}

std::optional<std::string> first_parameter_difference(const std::vector<ManifestBucket>& saved,
                                                      const std::vector<ManifestBucket>& here) {
  std::vector<ManifestParam> a = flat_params(saved), b = flat_params(here);
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] == b[i]) continue;
    return fmt::format("parameter {} (in bucket order) is '{}' of {} elements in the checkpoint, '{}' of {} here", i,
                       a[i].name, a[i].count, b[i].name, b[i].count);
  }
  if (a.size() != b.size()) return fmt::format("the checkpoint has {} parameters, this model {}", a.size(), b.size());
  return std::nullopt;
}

}  // namespace braid::torch
