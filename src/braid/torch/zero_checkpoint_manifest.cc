#include "braid/torch/zero_checkpoint_manifest.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <limits>
#include <stdexcept>

#include "braid/base/crc32c.h"

namespace braid::torch {
namespace {

constexpr int kFormat = 2;
constexpr int kFirstFormat = 1;  // stages 1-2 only: no sharding, alignment or loss scaler

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
  engine::ShardLayout layout = manifest_layout(m.buckets, 1, static_cast<std::size_t>(m.alignment_bytes));
  json buckets = json::array();
  for (std::size_t b = 0; b < m.buckets.size(); ++b) {
    json params = json::array();
    for (const ManifestParam& p : m.buckets[b].params) params.push_back({{"name", p.name}, {"count", p.count}});
    buckets.push_back({{"elements", layout.buffers[b].used_elements}, {"params", params}});
  }
  json shards = json::array();
  for (const ManifestFile& f : m.shards) shards.push_back(file_json(f));
  json body = {{"format", kFormat},
               {"generation", m.generation},
               {"world_size", m.world_size},
               {"optimizer", m.optimizer},
               {"sharding", m.sharding},
               {"alignment_bytes", m.alignment_bytes},
               {"fingerprint", m.fingerprint},
               {"position", {{"step", m.step}, {"epoch", m.epoch}, {"batch_in_epoch", m.batch_in_epoch}}},
               {"buckets", buckets},
               {"shards", shards},
               {"buffers", file_json(m.buffers)}};
  if (m.loss_scaler) {
    const parallel::DynamicLossScaler::State& s = *m.loss_scaler;
    body["loss_scaler"] = {{"scale", s.scale}, {"clean", s.clean}, {"skipped", s.skipped},
                           {"overflows_in_a_row", s.overflows_in_a_row}};
  }
  return body;
}

// Each bucket's recorded length against the one its parameters imply at the alignment.
void check_bucket_lengths(const ZeroManifest& m, const json& buckets) {
  if (m.alignment_bytes < 1 || m.alignment_bytes > (1 << 30) || (m.alignment_bytes & (m.alignment_bytes - 1)) != 0 ||
      m.alignment_bytes % static_cast<std::int64_t>(sizeof(float)) != 0) {
    throw Malformed(fmt::format("alignment_bytes {}: not a power of two that floats fit", m.alignment_bytes));
  }
  if (m.sharding != "buckets" && m.sharding != "units") throw Malformed(fmt::format("sharding '{}'", m.sharding));
  engine::ShardLayout layout;
  try {
    layout = manifest_layout(m.buckets, 1, static_cast<std::size_t>(m.alignment_bytes));
  } catch (const InvalidArgument& e) {  // a decoder reports what it read as Corrupt, never a caller's error
    throw Malformed(e.detail());
  }
  for (std::size_t b = 0; b < m.buckets.size(); ++b) {
    if (layout.buffers[b].used_elements != integer_of<std::int64_t>(buckets.at(b).at("elements"))) {
      throw Malformed(fmt::format("bucket {}'s elements are not where its parameters end", b));
    }
  }
}

ZeroManifest manifest_of(const json& body, int format) {
  ZeroManifest m{.generation = integer_of<std::int64_t>(body.at("generation")),
                 .world_size = integer_of<int>(body.at("world_size")),
                 .optimizer = body.at("optimizer").get<std::string>(),
                 .fingerprint = body.at("fingerprint").get<std::string>(),
                 .step = integer_of<std::int64_t>(body.at("position").at("step")),
                 .epoch = integer_of<std::int64_t>(body.at("position").at("epoch")),
                 .batch_in_epoch = integer_of<std::int64_t>(body.at("position").at("batch_in_epoch")),
                 .buffers = file_of(body.at("buffers"))};
  if (format != kFirstFormat) {
    m.sharding = body.at("sharding").get<std::string>();
    m.alignment_bytes = integer_of<std::int64_t>(body.at("alignment_bytes"));
    if (body.contains("loss_scaler")) {
      const json& s = body.at("loss_scaler");
      m.loss_scaler = parallel::DynamicLossScaler::State{
          .scale = s.at("scale").get<double>(), .clean = integer_of<std::int64_t>(s.at("clean")),
          .skipped = integer_of<std::int64_t>(s.at("skipped")), .overflows_in_a_row = integer_of<int>(s.at("overflows_in_a_row"))};
    }
  }
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
    m.buckets.push_back(std::move(bucket));
  }
  check_bucket_lengths(m, body.at("buckets"));
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
    if (format != kFormat && format != kFirstFormat) {
      throw Corrupt(context, fmt::format("{}: manifest format {}, this braid reads {} and {}", path, format,
                                         kFirstFormat, kFormat));
    }
    return manifest_of(whole.at("body"), format);
  } catch (const json::exception& e) {
    throw Corrupt(context, fmt::format("{}: a malformed manifest: {}", path, e.what()));
  } catch (const Malformed& e) {
    throw Corrupt(context, fmt::format("{}: a malformed manifest: {}", path, e.what()));
  }
}

engine::ShardLayout manifest_layout(const std::vector<ManifestBucket>& buckets, int world, std::size_t alignment_bytes) {
  std::vector<engine::ShardParamInfo> infos;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    for (const ManifestParam& p : buckets[b].params) {
      infos.push_back({.name = p.name, .count = p.count, .element_bytes = sizeof(float), .group = static_cast<int>(b)});
    }
  }
  return engine::plan_shard_layout(infos, {.world_size = world, .alignment_bytes = alignment_bytes});
}

std::optional<std::string> first_parameter_difference(const std::vector<ManifestBucket>& saved,
                                                      const std::vector<ManifestBucket>& here) {
  std::map<std::string, std::int64_t> saved_count;
  for (const ManifestParam& p : flat_params(saved)) saved_count.emplace(p.name, p.count);
  std::vector<ManifestParam> mine = flat_params(here);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    auto it = saved_count.find(mine[i].name);
    if (it == saved_count.end()) {
      return fmt::format("parameter {} of this model, '{}' of {} elements, is not in the checkpoint", i, mine[i].name,
                         mine[i].count);
    }
    if (it->second != mine[i].count) {
      return fmt::format("parameter {} of this model, '{}' of {} elements, has {} in the checkpoint", i, mine[i].name,
                         mine[i].count, it->second);
    }
  }
  std::size_t saved_params = flat_params(saved).size();
  if (saved_params != mine.size()) {
    return fmt::format("the checkpoint has {} parameters, this model {}", saved_params, mine.size());
  }
  return std::nullopt;
}

}  // namespace braid::torch
