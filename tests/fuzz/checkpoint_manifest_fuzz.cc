// libFuzzer target over the torch-free parts of the checkpoint reader (torch/): the manifest of
// a sharded ZeRO checkpoint (zero_checkpoint_manifest.h), which a resuming job reads before it
// opens any shard, and the table of tensor checksums a checkpoint carries
// (checkpoint_checksums.h). LibTorch's archive reader itself is not fuzzed here
// (docs/fuzzing.md says why).
//
// A manifest's CRC32C would reject nearly every mutation, so each input also runs with its CRC
// recomputed: a CRC guards against damage, not against someone who writes a manifest, and the
// fields behind it must be checked anyway.
//
// Findings (fuzz_support.h):
//   - an exception other than braid::Corrupt from decode_manifest or ChecksumTable::decode,
//     or other than InvalidArgument from manifest_layout on an accepted manifest;
//   - an accepted manifest that breaks what the loader relies on: world_size >= 1 with one
//     shard per rank, file names without '/' or a leading '.', non-negative sizes and counts,
//     every bucket's elements its parameters' sum;
//   - an accepted manifest or checksum table that does not survive encode and decode;
//   - a checksum table that verifies a key it does not hold or refuses its own entries.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "braid/base/crc32c.h"
#include "braid/torch/checkpoint_checksums.h"
#include "braid/torch/zero_checkpoint_manifest.h"
#include "fuzz_support.h"

namespace braid::torch {
namespace {

using fuzz::require;

bool same(const ZeroManifest& a, const ZeroManifest& b) {
  auto same_file = [](const ManifestFile& x, const ManifestFile& y) { return x.file == y.file && x.bytes == y.bytes; };
  if (a.shards.size() != b.shards.size()) return false;
  for (std::size_t i = 0; i < a.shards.size(); ++i) {
    if (!same_file(a.shards[i], b.shards[i])) return false;
  }
  return a.generation == b.generation && a.world_size == b.world_size && a.optimizer == b.optimizer &&
         a.fingerprint == b.fingerprint && a.step == b.step && a.epoch == b.epoch &&
         a.batch_in_epoch == b.batch_in_epoch && a.buckets == b.buckets && same_file(a.buffers, b.buffers);
}

void check_file(const ManifestFile& f) {
  require(!f.file.empty() && f.file.find('/') == std::string::npos && f.file[0] != '.' && f.bytes >= 0,
          "a manifest file entry the loader may not open was accepted", f.file);
}

void check_manifest(const ZeroManifest& m) {
  require(m.world_size >= 1 && m.shards.size() == static_cast<std::size_t>(m.world_size),
          "a manifest without one shard per rank was accepted");
  for (const ManifestFile& f : m.shards) check_file(f);
  check_file(m.buffers);
  for (const ManifestBucket& b : m.buckets) {
    require(!b.params.empty(), "a bucket without parameters was accepted");
    for (const ManifestParam& p : b.params) require(p.count >= 0, "a negative parameter count was accepted");
  }
  ZeroManifest again;
  require(fuzz::succeeds("decode_manifest of encode_manifest", {},
                         [&] { again = decode_manifest(encode_manifest(m), {}, "rewritten.json"); }) &&
              same(again, m),
          "a manifest does not survive encode_manifest and decode_manifest");
  require(!first_parameter_difference(m.buckets, m.buckets), "a manifest's parameters differ from themselves");
  fuzz::succeeds("manifest_layout", {ErrorKind::kInvalidArgument}, [&] { (void)manifest_layout(m.buckets, m.world_size); });
}

void decode_and_check(const std::string& text) {
  ZeroManifest m;
  if (fuzz::succeeds("decode_manifest", {ErrorKind::kCorrupt}, [&] { m = decode_manifest(text, {}, "fuzz.json"); })) {
    check_manifest(m);
  }
}

// The input with its body's CRC32C recomputed, when it is a JSON object with a body.
std::optional<std::string> with_crc_fixed(std::string_view text) {
  nlohmann::json whole = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!whole.is_object() || !whole.contains("body")) return std::nullopt;
  std::string body = whole["body"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  whole["crc32c"] = fmt::format("{:08x}", crc32c(body.data(), body.size()));
  return whole.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void check_checksums(std::string_view text, std::string_view probe) {
  const std::uint32_t crc = crc32c(text.data(), text.size());
  fuzz::succeeds("ChecksumTable::decode with a wrong CRC", {ErrorKind::kCorrupt}, [&] {
    (void)ChecksumTable::decode(text, crc ^ 1u, {}, "fuzz");
    fuzz::finding("a checksum table with a wrong CRC was accepted");
  });
  ChecksumTable table;
  if (!fuzz::succeeds("ChecksumTable::decode", {ErrorKind::kCorrupt},
                      [&] { table = ChecksumTable::decode(text, crc, {}, "fuzz"); })) {
    return;
  }
  const std::string encoded = table.encode();
  ChecksumTable again = ChecksumTable::decode(encoded, crc32c(encoded.data(), encoded.size()), {}, "fuzz");
  require(again.encode() == encoded, "a checksum table does not survive encode and decode");
  // A key the table holds verifies exactly the bytes with its CRC: add it to a copy and compare.
  const std::string key(probe.substr(0, probe.find('\n')));
  ChecksumTable with_probe = table;
  with_probe.add(key, probe.data(), probe.size());
  fuzz::succeeds("verify of an added key", {}, [&] { with_probe.verify(key, probe.data(), probe.size(), {}, "fuzz"); });
  if (probe.size() > 0) {
    fuzz::succeeds("verify of other bytes", {ErrorKind::kCorrupt}, [&] {
      with_probe.verify(key, probe.data(), probe.size() - 1, {}, "fuzz");
      if (crc32c(probe.data(), probe.size() - 1) != crc32c(probe.data(), probe.size())) {
        fuzz::finding("verify accepted bytes with another CRC32C");
      }
    });
  }
}

}  // namespace
}  // namespace braid::torch

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  braid::fuzz::target_name = "checkpoint_manifest_fuzz";
  braid::fuzz::quiet_logs();
  return 0;
}

// The whole input is a manifest; it is also a checksum table, and its last 16 bytes a tensor.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(braid::fuzz::as_text(data, size));
  braid::torch::decode_and_check(text);
  if (auto fixed = braid::torch::with_crc_fixed(text)) braid::torch::decode_and_check(*fixed);
  braid::torch::check_checksums(text, std::string_view(text).substr(size > 16 ? size - 16 : 0));
  return 0;
}
