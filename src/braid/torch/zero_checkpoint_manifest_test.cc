// The manifest of a sharded ZeRO checkpoint without a rank or LibTorch: what it keeps, what it
// refuses as damaged, the layout it implies and how it names another model.
#include "braid/torch/zero_checkpoint_manifest.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>

#include "braid/base/crc32c.h"
#include "braid/base/error.h"

namespace braid::torch {
namespace {

ZeroManifest example() {
  return {.generation = 7, .world_size = 2, .optimizer = "adam", .fingerprint = "model=mlp batch=24", .step = 3,
          .epoch = 1, .batch_in_epoch = 2,
          .buckets = {{.params = {{"fc2.bias", 4}, {"fc2.weight", 64}}}, {.params = {{"fc1.weight", 128}}}},
          .shards = {{"zero-7-rank0.pt", 1000}, {"zero-7-rank1.pt", 990}},
          .buffers = {"zero-7-buffers.pt", 10}};
}

std::string corrupt_message(const std::string& text) {
  try {
    decode_manifest(text, {}, "ckpt/zero-checkpoint.json");
  } catch (const Corrupt& e) {
    return e.what();
  }
  return "";
}

// A manifest edited by hand, with the CRC32C of its new body: only the content decides.
std::string with_crc(nlohmann::json whole) {
  std::string body = whole["body"].dump();
  whole["crc32c"] = fmt::format("{:08x}", crc32c(body.data(), body.size()));
  return whole.dump();
}

// A manifest edited as JSON, its CRC32C recomputed: what someone crafting a file can write (the
// CRC guards against damage only). Found by tests/fuzz/checkpoint_manifest_fuzz.
std::string crafted(const std::function<void(nlohmann::json& body)>& edit) {
  nlohmann::json whole = nlohmann::json::parse(encode_manifest(example()));
  edit(whole["body"]);
  return with_crc(whole);
}

TEST(ZeroManifestTest, NumbersOutOfRangeAreCorruptEvenWithAValidCrc) {
  EXPECT_NE(corrupt_message(crafted([](nlohmann::json& b) { b["buckets"][1]["params"][0]["count"] = 9.2e28; }))
                .find("not an integer in range"),
            std::string::npos);  // was a float-to-int conversion out of range (undefined behaviour)
  EXPECT_NE(corrupt_message(crafted([](nlohmann::json& b) { b["world_size"] = 1.5; })).find("not an integer in range"),
            std::string::npos);  // was truncated to 1
  EXPECT_NE(corrupt_message(crafted([](nlohmann::json& b) {
              b["buckets"][1]["params"] = {{{"name", "a"}, {"count", INT64_MAX}}, {{"name", "b"}, {"count", INT64_MAX}}};
            })).find("overflow 64 bits"),
            std::string::npos);  // the bucket's sum was a signed overflow
}

TEST(ZeroManifestTest, RoundTripsEveryField) {
  ZeroManifest m = decode_manifest(encode_manifest(example()), {}, "m");
  ZeroManifest want = example();
  EXPECT_EQ(m.generation, 7);
  EXPECT_EQ(m.world_size, 2);
  EXPECT_EQ(m.optimizer, "adam");
  EXPECT_EQ(m.fingerprint, want.fingerprint);
  EXPECT_EQ((std::vector<std::int64_t>{m.step, m.epoch, m.batch_in_epoch}), (std::vector<std::int64_t>{3, 1, 2}));
  EXPECT_EQ(m.buckets, want.buckets);
  ASSERT_EQ(m.shards.size(), 2u);
  EXPECT_EQ(m.shards[1].file, "zero-7-rank1.pt");
  EXPECT_EQ(m.shards[1].bytes, 990);
  EXPECT_EQ(m.buffers.file, "zero-7-buffers.pt");
}

TEST(ZeroManifestTest, ADamagedTruncatedOrForeignManifestIsCorrupt) {
  std::string text = encode_manifest(example());
  std::string flipped = text;
  flipped[flipped.find("990")] = '8';  // still JSON, another size: only the CRC32C tells
  EXPECT_NE(corrupt_message(flipped).find("the manifest is damaged"), std::string::npos) << corrupt_message(flipped);
  std::string truncated = text.substr(0, text.size() / 2);
  EXPECT_NE(corrupt_message(truncated).find("not a readable manifest"), std::string::npos);
  EXPECT_NE(corrupt_message("{\"something\": 1}").find("a malformed manifest"), std::string::npos);
  ZeroManifest path = example();
  path.shards[0].file = "../elsewhere.pt";  // a name inside the directory, never a path
  EXPECT_NE(corrupt_message(encode_manifest(path)).find("bad file entry"), std::string::npos);
  ZeroManifest missing = example();
  missing.shards.pop_back();
  EXPECT_NE(corrupt_message(encode_manifest(missing)).find("1 shard files for a world of 2"), std::string::npos);
}

// Buffer b is bucket b, the parameters contiguous and 4-byte aligned: GradSync's cut.
TEST(ZeroManifestTest, TheLayoutIsTheBucketsCutAtTheWorldSize) {
  engine::ShardLayout layout = manifest_layout(example().buckets, 3);
  ASSERT_EQ(layout.buffers.size(), 2u);
  EXPECT_EQ(layout.buffers[0].offsets, (std::vector<std::int64_t>{0, 4}));
  EXPECT_EQ(layout.buffers[0].used_elements, 68);
  EXPECT_EQ(layout.buffers[0].shard_elements, 23);  // ceil(68 / 3)
  EXPECT_EQ(layout.buffers[1].shard_elements, 43);  // ceil(128 / 3)
  EXPECT_EQ(layout.params[2].name, "fc1.weight");
}

// By name: neither the buffer boundaries nor the order count (stage 3's units list the
// parameters in module order, stages 1-2's buckets in reverse).
TEST(ZeroManifestTest, TheFirstParameterDifferenceIsNamedAndNeitherBoundariesNorOrderCount) {
  std::vector<ManifestBucket> saved = example().buckets;
  std::vector<ManifestBucket> regrouped = {{.params = {{"fc2.bias", 4}}}, {.params = {{"fc2.weight", 64}, {"fc1.weight", 128}}}};
  EXPECT_EQ(first_parameter_difference(saved, regrouped), std::nullopt);
  std::vector<ManifestBucket> units = {{.params = {{"fc1.weight", 128}}}, {.params = {{"fc2.weight", 64}, {"fc2.bias", 4}}}};
  EXPECT_EQ(first_parameter_difference(saved, units), std::nullopt);
  std::vector<ManifestBucket> wider = {{.params = {{"fc2.bias", 4}, {"fc2.weight", 68}}}, {.params = {{"fc1.weight", 136}}}};
  EXPECT_EQ(first_parameter_difference(saved, wider),
            "parameter 1 of this model, 'fc2.weight' of 68 elements, has 64 in the checkpoint");
  std::vector<ManifestBucket> renamed = {{.params = {{"fc2.bias", 4}, {"head.weight", 64}}}, {.params = {{"fc1.weight", 128}}}};
  EXPECT_EQ(first_parameter_difference(saved, renamed),
            "parameter 1 of this model, 'head.weight' of 64 elements, is not in the checkpoint");
  std::vector<ManifestBucket> fewer = {{.params = {{"fc2.bias", 4}, {"fc2.weight", 64}}}};
  EXPECT_EQ(first_parameter_difference(saved, fewer), "the checkpoint has 3 parameters, this model 2");
}

// Stage 3's manifest: units at 64-byte alignment (each parameter's offset a multiple of 16
// floats, shards a multiple of 16), and fp16's loss scale; both round trip.
TEST(ZeroManifestTest, UnitsAtTheirAlignmentAndTheLossScaleRoundTrip) {
  ZeroManifest units = example();
  units.sharding = "units";
  units.alignment_bytes = 64;
  units.loss_scaler = parallel::DynamicLossScaler::State{.scale = 32768, .clean = 3, .skipped = 1, .overflows_in_a_row = 0};
  ZeroManifest m = decode_manifest(encode_manifest(units), {}, "m");
  EXPECT_EQ(m.sharding, "units");
  EXPECT_EQ(m.alignment_bytes, 64);
  EXPECT_EQ(m.loss_scaler, units.loss_scaler);
  EXPECT_EQ(m.buckets, units.buckets);
  engine::ShardLayout layout = manifest_layout(m.buckets, 3, 64);
  EXPECT_EQ(layout.buffers[0].offsets, (std::vector<std::int64_t>{0, 16}));  // fc2.bias, then fc2.weight aligned
  EXPECT_EQ(layout.buffers[0].used_elements, 80);
  EXPECT_EQ(layout.buffers[0].shard_elements, 32);  // ceil(80 / 3) rounded up to 16
  EXPECT_EQ(decode_manifest(encode_manifest(example()), {}, "m").loss_scaler, std::nullopt);
  nlohmann::json odd = nlohmann::json::parse(encode_manifest(units));
  odd["body"]["alignment_bytes"] = 48;  // not a power of two
  EXPECT_NE(corrupt_message(with_crc(odd)).find("alignment_bytes 48"), std::string::npos);
  nlohmann::json misplaced = nlohmann::json::parse(encode_manifest(units));
  misplaced["body"]["buckets"][0]["elements"] = 68;  // contiguous, not at 64 bytes
  EXPECT_NE(corrupt_message(with_crc(misplaced)).find("bucket 0's elements are not where its parameters end"),
            std::string::npos);
}

// A manifest of format 1 (before stage 3 had checkpoints): buckets, contiguous, no loss scale.
TEST(ZeroManifestTest, FormatOneReadsAsBucketsAtFourBytes) {
  std::string text = encode_manifest(example());
  nlohmann::json whole = nlohmann::json::parse(text);
  whole["body"]["format"] = 1;
  whole["body"].erase("sharding");
  whole["body"].erase("alignment_bytes");
  ZeroManifest m = decode_manifest(with_crc(whole), {}, "m");
  EXPECT_EQ(m.sharding, "buckets");
  EXPECT_EQ(m.alignment_bytes, 4);
  EXPECT_EQ(m.buckets, example().buckets);
  whole["body"]["format"] = 3;
  EXPECT_NE(corrupt_message(with_crc(whole)).find("manifest format 3, this braid reads 1 and 2"), std::string::npos);
}

}  // namespace
}  // namespace braid::torch
