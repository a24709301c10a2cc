// Sharded checkpoints of ZeRO stage 3 (torch/zero_checkpoint.h over a FullyShardedModule,
// braid-train --zero 3 --checkpoint-dir) through real rank processes (braid-run): a run stopped at
// step K/2 on 4 ranks and resumed to K on 4 ranks is the uninterrupted run bit for bit, also
// resumed under stage 2, and a stage-1 checkpoint resumes under stage 3 bit for bit; resumed on 2
// or 3 ranks with another --max-gathered-units (resharded per unit) it is within rounding; fp16
// (its loss scale restored), bf16, qwZ+qgZ and hpZ resume bit for bit; damaged checkpoints, those
// of another model, configuration or kind are refused on every rank, and a failed load changes
// nothing. The resharding itself is checked element by element through the library
// (programs/fully_sharded_checkpoint_scenarios.cc).
//
// Why 4 -> 4 is bit for bit: the checkpoint holds every shard element and its optimizer state
// exactly (fp32 bytes, Adam's step count), and the position; the resumed run rebuilds the same
// layout (it depends on the parameters and the alignment only) and then does the arithmetic the
// uninterrupted run does (stage 3 adds like DDP, train_zero3_test.cc). Across stages the same
// holds: stages 1, 2 and 3 all train to DDP's parameters bit for bit, and the checkpoint records
// each parameter's elements by name, so the re-cut from buckets to units (or back) is a copy.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "train_fixture.h"
#include "zero_checkpoint_fixture.h"

namespace braid::testing {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kMlp = {"--model", "mlp", "--batch", "24", "--train-samples", "96", "--lr", "0.1"};

class Zero3CheckpointTest : public ZeroCheckpointTest {
 protected:
  // hpZ needs hosts: with two_hosts_, ranks 0-1 and 2-3 get BRAID_HOST_ID host0 and host1.
  LaunchResult run_training(int ranks, const std::vector<std::string>& args) const override {
    if (!two_hosts_) return train(ranks, args);
    std::vector<std::string> wrapped = {"-c", "BRAID_HOST_ID=host$((BRAID_RANK / 2)) exec \"$0\" \"$@\"",
                                        tool_path("braid-train"), "--quiet", "--test-samples", "200"};
    wrapped.insert(wrapped.end(), args.begin(), args.end());
    return launch({.ranks = ranks, .program = "/bin/sh", .args = wrapped, .env = {{"BRAID_TIMEOUT", "60"}},
                   .timeout_seconds = 240});
  }
  nlohmann::json manifest(const std::string& dir) const {
    std::ifstream in(path(dir) + "/zero-checkpoint.json");
    return nlohmann::json::parse(in)["body"];
  }
  bool two_hosts_ = false;
};

// The MLP (three units) with SGD and momentum 0.9 saved by stage 3 on 4 ranks under a cap of 2,
// stopped mid-epoch at step 3 and resumed to 6 (into epoch 2): on 4 ranks bit for bit, under stage
// 2 on 4 ranks (one bucket, parameters in reverse order) bit for bit, on 2 ranks with cap 1 and on
// 3 ranks with cap 3 within rounding (every unit re-cut: 3 pads every unit differently).
TEST_F(Zero3CheckpointTest, MlpWithMomentumResumesBitForBitOnFourRanksAndWithinRoundingOnTwoAndThree) {
  stop_and_resume(kMlp, 6, /*export_parameters=*/true, {"--zero", "3", "--max-gathered-units", "2"},
                  {{"4", 4, {"--zero", "3", "--max-gathered-units", "2"}},
                   {"4-zero2", 4, {"--zero", "2"}},
                   {"2", 2, {"--zero", "3", "--max-gathered-units", "1"}},
                   {"3", 3, {"--zero", "3", "--max-gathered-units", "3"}}});
  expect_resumed_curves(6, {"4", "4-zero2"}, {"2", "3"});
  EXPECT_TRUE(exported_parameters("mlp", path("resumed-4.pt")) == exported_parameters("mlp", path("full.pt")));
  for (const char* name : {"2", "3"}) expect_parameters_within("mlp", name);
  // The manifest names the units with the whole model's parameter names, at 64-byte alignment.
  nlohmann::json body = manifest("ckpt");
  EXPECT_EQ(body["sharding"], "units");
  EXPECT_EQ(body["alignment_bytes"], 64);
  EXPECT_EQ(body["buckets"].size(), 3u);
  EXPECT_EQ(body["buckets"][0]["params"][0]["name"], "layers.1.weight");
  EXPECT_FALSE(body.contains("loss_scaler")) << "fp32: no loss scale";
}

// The GPT (9 units) with Adam (two moments and a step per shard), 72 windows of 16 characters: 3
// steps per epoch at every world size; stopped at step 2, resumed to 4 (into epoch 2).
TEST_F(Zero3CheckpointTest, TransformerWithAdamResumesBitForBitOnFourRanksAndWithinRoundingOnTwoAndThree) {
  stop_and_resume({"--model", "gpt", "--context", "16", "--optimizer", "adam", "--batch", "24", "--train-samples", "72"},
                  4, /*export_parameters=*/false, {"--zero", "3"},
                  {{"4", 4, {"--zero", "3"}},
                   {"2", 2, {"--zero", "3", "--max-gathered-units", "1"}},
                   {"3", 3, {"--zero", "3", "--max-gathered-units", "3"}}});
  expect_resumed_curves(4, {"4"}, {"2", "3"});
}

// A stage-1 checkpoint (--bucket-mb 1: four buckets, parameters in reverse registration order,
// contiguous) resumes under stage 3 (units in module order, 64-byte aligned): on 4 ranks bit for
// bit, on 3 within rounding. Stage 3 has no buckets, but --bucket-mb is part of the run's
// fingerprint (it shapes qgZ's blocks at stages 1-2), so the resumes pass the same value.
TEST_F(Zero3CheckpointTest, AStageOneCheckpointResumesUnderStageThree) {
  stop_and_resume(kMlp, 6, /*export_parameters=*/false, {"--zero", "1", "--bucket-mb", "1"},
                  {{"4", 4, {"--zero", "3", "--bucket-mb", "1"}},
                   {"3", 3, {"--zero", "3", "--bucket-mb", "1", "--max-gathered-units", "1"}}});
  expect_resumed_curves(6, {"4"}, {"3"});
  EXPECT_EQ(manifest("ckpt")["sharding"], "buckets");
  EXPECT_EQ(manifest("ckpt")["buckets"].size(), 4u);
}

// What a resumed run must continue besides the model, 4 steps stopped at 2: fp16's loss scale (an
// overflow injected at step 1 halves it to 32768 before the save; resumed from the initial 65536
// the run would report that instead), bf16's and qwZ+qgZ's 16-bit and int8 wires (gathered again
// from the exact fp32 shards the checkpoint holds), and hpZ's host copies (rebuilt at the first
// forward; ranks 0-1 and 2-3 on two emulated hosts). On 2 ranks, hpZ on 4 (it needs two hosts).
TEST_F(Zero3CheckpointTest, MixedPrecisionAndZeroPlusPlusResumeBitForBit) {
  struct Variant {
    std::string label;
    std::vector<std::string> flags;
    bool two_hosts = false;
  };
  for (const Variant& v : {Variant{"fp16-", {"--precision", "fp16", "--inject-overflow", "1"}},
                           Variant{"bf16-", {"--precision", "bf16"}}, Variant{"qwz-qgz-", {"--zero-pp", "qwz,qgz"}},
                           Variant{"hpz-", {"--zero-pp", "hpz"}, /*two_hosts=*/true}}) {
    label_ = v.label;
    two_hosts_ = v.two_hosts;
    world_ = v.two_hosts ? 4 : 2;
    std::vector<std::string> flags = plus({"--zero", "3"}, v.flags);
    stop_and_resume(kMlp, 4, /*export_parameters=*/false, flags, {{"same", world_, flags}});
    expect_resumed_curves(4, {"same"}, {});
  }
  EXPECT_EQ(json("fp16-full.json")["skipped_steps"], nlohmann::json::array({1}));
  EXPECT_EQ(json("fp16-full.json")["loss_scale"], 32768.0);
  EXPECT_EQ(json("fp16-resumed-same.json")["loss_scale"], 32768.0) << "the loss scale restored";
  nlohmann::json scaler = manifest("fp16-ckpt")["loss_scaler"];
  EXPECT_EQ(scaler["scale"], 32768.0);
  EXPECT_EQ(scaler["skipped"], 1);
  EXPECT_EQ(scaler["clean"], 1);  // step 2
  EXPECT_GT(json("hpz-resumed-same.json")["gathers"]["host_allgathers"].get<int>(), 0);
}

// The resharding through the library, element by element: a FullyShardedModule and a
// ZeroOptimizer over the same layers, SGD (momentum) and Adam (amsgrad: three state tensors),
// saved at 1-4 ranks; each checkpoint loaded at 1-4 ranks into stage 3 (from stage 3 and from
// stage 1) and into stage 1 (from stage 3): every shard element, the padding (0), every state
// tensor, Adam's step and every whole parameter (gathered) is the value saved for it, bit for bit.
TEST_F(Zero3CheckpointTest, ReshardAnyWorldToAnyWorldAndAcrossTheStagesThroughTheLibrary) {
  LaunchResult r = scenario(4, "reshard3");
  std::vector<std::string> lines = r.lines_with("RESHARD3 ");
  EXPECT_EQ(lines.size(), std::size_t(2 * 3 * 4 * (1 + 2 + 3 + 4))) << r.output;  // optimizers x pairs x n x ranks of every m
  for (const std::string& line : lines) EXPECT_NE(line.find("faults 0"), std::string::npos) << line;
}

// A load that fails leaves the shards and the optimizer state as they were, on every rank: each
// case fails on every rank with the error kind named, and the state is bit for bit that of
// before the load ("unchanged 1").
TEST_F(Zero3CheckpointTest, AFailedLoadChangesNothingOnAnyRank) {
  expect_failed_loads_changed_nothing("refused3", "REFUSED3");
}

// Bad checkpoints given to braid-train --zero 3: a non-zero exit, the message on every rank, no
// step trained (nothing was loaded: the previous test shows a failed load writes nothing).
TEST_F(Zero3CheckpointTest, BadCheckpointsAreRefusedOnEveryRankNamingTheFileOrTheDifference) {
  std::vector<std::string> ddp = {"--model", "mlp", "--batch", "8", "--train-samples", "32"};
  std::vector<std::string> mlp = plus(ddp, {"--zero", "3"});
  auto gpt_of_width = [](const std::string& width) {
    return std::vector<std::string>{"--model", "gpt", "--context", "8", "--width", width, "--layers", "1", "--heads",
                                    "2", "--batch", "8", "--train-samples", "32", "--zero", "3"};
  };
  expect_success(train(2, plus(mlp, {"--steps", "2", "--checkpoint-dir", path("mlp")})));
  expect_success(train(2, plus(gpt_of_width("32"), {"--steps", "1", "--checkpoint-dir", path("gpt")})));
  expect_success(train(2, plus(ddp, {"--steps", "2", "--checkpoint-dir", path("ddp")})));
  expect_refused_on_both_ranks({
      {"missing shard", mlp, "mlp", removing("zero-1-rank1.pt"), "zero-1-rank1.pt is missing"},
      {"truncated shard", mlp, "mlp", truncating("zero-1-rank0.pt", 4096),
       "zero-1-rank0.pt has 4096 bytes, the manifest recorded"},
      // A quarter in lies in the first unit's tensors (its shard and momentum: 3.2 of 7.4 MB).
      {"flipped byte", mlp, "mlp", flipping_a_bit_a_quarter_in("zero-1-rank0.pt"), "zero-1-rank0.pt: tensor 'bucket0."},
      {"another width", gpt_of_width("64"), "gpt", undamaged, "is a checkpoint of another model: parameter 0 of this model"},
      {"another model", gpt_of_width("32"), "mlp", undamaged, "is a checkpoint of another model: parameter 0 of this model"},
      {"another configuration", plus(mlp, {"--lr", "0.05"}), "mlp", undamaged, "was written by another configuration"},
      {"a DDP checkpoint", mlp, "ddp", undamaged, "holds a DDP (--zero 0) checkpoint"},
      {"a stage-3 checkpoint without --zero", ddp, "mlp", undamaged, "holds a sharded ZeRO (--zero 1, 2 or 3) checkpoint"},
  });
}

}  // namespace
}  // namespace braid::testing
