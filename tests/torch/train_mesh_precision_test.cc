// braid-train --precision on the process mesh (--tp, --pp, data parallelism; mesh_trainer.cc and
// mixed_precision_training.h) through real rank processes (braid-run): an fp16 overflow on one
// rank skips the step on every stage, TP rank and replica; bf16 and fp16 train like fp32 with
// the data-parallel wire halved, bf16's TP collectives in 16 bits, the pipeline's activations
// exact fp32; fp16 clips the unscaled gradients; a bf16 ZeRO-1 run and an fp16 run (its loss
// scale saved) resume bit for bit. Every
// run passes --check-replicas: after each epoch every rank holds the whole model (each stage's,
// TP piece's) and all must be identical.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "train_fixture.h"

namespace braid::testing {
namespace {

class MeshPrecisionTest : public TrainTest {
 protected:
  // The small GPT of train_mesh_test.cc: 8 steps per epoch on one replica.
  const std::vector<std::string> gpt_ = {"--model", "gpt", "--batch", "8", "--train-samples", "64", "--context", "32",
                                         "--microbatches", "2", "--check-replicas"};
  double axis_bytes(const std::string& name, const char* axis) const {
    return json(name)["epochs"].back()["axis_bytes_per_step"][axis].get<double>();
  }
  double wire(const std::string& name) const { return json(name)["epochs"].back()["wire_bytes"].get<double>(); }
  // "tp2zero1" for {"--tp", "2", "--zero", "1"}: a file name's part.
  static std::string tag_of(const std::vector<std::string>& flags) {
    std::string tag;
    for (const std::string& f : flags) tag += f.rfind("--", 0) == 0 ? f.substr(2) : f;
    return tag;
  }
  void run(int ranks, const std::string& name, const std::vector<std::string>& flags) {
    expect_success(train(ranks, plus(plus(gpt_, flags), {"--json", path(name)})));
  }
};

// fp16 at --inject-overflow 3: the world's last rank (the last replica's last stage, and with
// --tp its TP rank 1) makes its first gradient element inf (after the pipeline's backward, so
// under zb1's autograd::grad weight pass too). Only it and its data-parallel peer
// see the inf (with ZeRO only the one whose shard holds it); the other stages and TP ranks
// compute finite gradients. The overflow is agreed over the whole job, so every rank skips:
// the skip is announced once, the scale halves, and the 3-step run's whole model (gathered
// from every stage and TP piece) is the 2-step run's bit for bit, while --check-replicas shows
// the other replica identical. Agreeing over the data-parallel group only would let the other
// stages or TP ranks step, and the digests would differ.
TEST_F(MeshPrecisionTest, AnOverflowOnOneRankSkipsTheStepOnEveryRankOfTheMesh) {
  struct Layout {
    int ranks;
    std::vector<std::string> flags;
  };
  for (const Layout& layout : {Layout{4, {"--pp", "2"}}, Layout{4, {"--tp", "2"}}, Layout{4, {"--tp", "2", "--zero", "1"}},
                               Layout{2, {"--pp", "2", "--schedule", "zb1"}}}) {  // zb1: the weight pass is autograd::grad
    std::string tag = tag_of(layout.flags);
    std::vector<std::string> fp16 = plus(layout.flags, {"--precision", "fp16"});
    LaunchResult injected = train(layout.ranks, plus(plus(gpt_, fp16), {"--steps", "3", "--inject-overflow", "3",
                                                                       "--json", path(tag + "-skipped.json")}));
    expect_success(injected);
    EXPECT_EQ(injected.count("step 3: the fp16 gradients overflowed at loss scale 65536: step skipped on every rank, "
                             "the scale is now 32768"),
              1)
        << injected.output;
    run(layout.ranks, tag + "-two.json", plus(fp16, {"--steps", "2"}));
    nlohmann::json skipped = json(tag + "-skipped.json"), two = json(tag + "-two.json");
    EXPECT_EQ(skipped["mesh"]["dp"], layout.ranks / 2) << tag;
    EXPECT_EQ(skipped["skipped_steps"], nlohmann::json::array({3})) << tag;
    EXPECT_EQ(skipped["loss_scale"].get<double>(), 32768.0) << tag;
    EXPECT_EQ(skipped["parameter_digest"], two["parameter_digest"]) << tag << ": the skipped step moved something";
    EXPECT_EQ(two["skipped_steps"], nlohmann::json::array()) << tag;
    EXPECT_EQ(two["loss_scale"].get<double>(), 65536.0) << tag;
  }
}

// Without an overflow the half precisions train like fp32 on each layout, 10 steps:
// - fp16 computes in fp32 (no fp16 CPU matmul); the loss scale 2^16 multiplies the last stage's
//   losses and divides the gradients exactly (a power of two, no fp32 overflow or underflow
//   here), so without a data-parallel axis nothing is rounded: the parameters are fp32's bit
//   for bit. Forgetting the unscale on any stage or TP rank would take a 65536x SGD step.
//   With dp 2 the gradients travel in fp16 (11 significant bits): measured 2.6e-5 of the loss
//   curve's worst relative difference, bound 5e-4.
// - bf16 computes the forward in bf16 under autocast (8 significant bits per matmul operand):
//   measured up to 2.5e-4, bound 2e-3; a wrong gradient (a missing allreduce or average, a
//   lost micro-batch) moves the loss by > 1e-2 within a few steps here.
// - The data-parallel wire (gradient reduce, ZeRO-1's parameter allgather) is half of fp32's
//   within 1%; both codecs' bytes are counted, not the 4-byte overflow flag.
// - TP (bf16): every collective after a row-parallel layer and every gradient collective before
//   a column-parallel one moves bf16: per micro-batch 25 of the 26 activation-sized collectives
//   (6 blocks x 4 and the head's), all but the vocabulary-parallel embedding's fp32 sum (the
//   embedding is not an autocast op), plus the cross-entropy's small fp32 sums: (25 / 2 + 1) /
//   26 = 0.52 of fp32's bytes (measured 0.5197). fp16 computes fp32: the TP bytes are fp32's.
// - PP: the pipeline's activations are the residual stream, which autocast keeps fp32 (fp32
//   parameters and residual adds promote), so they cross in fp32, exactly as fp32's bytes.
TEST_F(MeshPrecisionTest, HalfPrecisionsTrainLikeFp32WithTheDataParallelWireHalved) {
  struct Layout {
    int ranks;
    std::vector<std::string> flags;
  };
  for (const Layout& layout : {Layout{2, {"--tp", "2"}}, Layout{2, {"--pp", "2"}}, Layout{4, {"--tp", "2", "--zero", "1"}}}) {
    std::string tag = fmt::format("{}-{}", layout.ranks, tag_of(layout.flags));
    std::vector<std::string> flags = plus(layout.flags, {"--steps", "10"});
    run(layout.ranks, tag + "-fp32.json", flags);
    bool data_parallel = layout.ranks == 4;
    std::vector<double> reference = step_losses(tag + "-fp32.json");
    for (const auto& [precision, rtol] : {std::pair{"fp16", 5e-4}, std::pair{"bf16", 2e-3}}) {
      std::string name = fmt::format("{}-{}.json", tag, precision), fp32 = tag + "-fp32.json";
      run(layout.ranks, name, plus(flags, {"--precision", precision}));
      expect_same_curve(step_losses(name), reference, rtol, name);
      EXPECT_EQ(json(name)["precision"], precision);
      EXPECT_EQ(json(name)["skipped_steps"], nlohmann::json::array()) << name;
      bool bf16 = std::string(precision) == "bf16";
      if (!data_parallel && !bf16) {
        EXPECT_EQ(digest(name), digest(fp32)) << name << ": the loss scale was not undone exactly";
      }
      if (data_parallel) {
        EXPECT_NEAR(wire(name), 0.5 * wire(fp32), 0.01 * wire(fp32)) << name;
        EXPECT_NEAR(axis_bytes(name, "dp"), 0.5 * axis_bytes(fp32, "dp"), 0.01 * axis_bytes(fp32, "dp")) << name;
      }
      double tp = axis_bytes(name, "tp"), tp32 = axis_bytes(fp32, "tp");
      if (tp32 > 0) {
        EXPECT_NEAR(tp / tp32, bf16 ? 0.52 : 1.0, 0.01) << name;
      }
      EXPECT_EQ(axis_bytes(name, "pp"), axis_bytes(fp32, "pp")) << name;
      std::printf("%s: final loss %+.3g relative to fp32; bytes per step dp %.0f (fp32 %.0f), tp %.0f (%.0f), pp %.0f (%.0f)\n",
                  name.c_str(), (step_losses(name).back() - reference.back()) / reference.back(), axis_bytes(name, "dp"),
                  axis_bytes(fp32, "dp"), tp, tp32, axis_bytes(name, "pp"), axis_bytes(fp32, "pp"));
    }
  }
}

// --clip-grad under fp16 clips the unscaled gradients: the norm is taken after the division by
// the loss scale, so on tp 2 and on pp 2 (the norm summed over the model-parallel group) the
// run is fp32's with the same clipping bit for bit. Clipping the scaled gradients would see a
// norm 65536x too large and clip every step to a different, much smaller update. The fp32
// unclipped run differs, so the threshold was reached.
TEST_F(MeshPrecisionTest, Fp16ClipsTheUnscaledGradients) {
  std::vector<std::string> common = {"--steps", "4", "--lr", "0.5"};
  run(2, "free.json", plus(common, {"--tp", "2"}));
  for (const std::vector<std::string>& layout : {std::vector<std::string>{"--tp", "2"}, std::vector<std::string>{"--pp", "2"}}) {
    std::string tag = tag_of(layout);
    std::vector<std::string> clipped = plus(plus(common, layout), {"--clip-grad", "0.2"});
    run(2, tag + "-fp32.json", clipped);
    run(2, tag + "-fp16.json", plus(clipped, {"--precision", "fp16"}));
    EXPECT_EQ(digest(tag + "-fp16.json"), digest(tag + "-fp32.json")) << tag;
    EXPECT_EQ(json(tag + "-fp16.json")["step_losses"], json(tag + "-fp32.json")["step_losses"]) << tag;
  }
  std::vector<double> free = step_losses("free.json"), clipped = step_losses("tp2-fp32.json");
  EXPECT_GT(std::abs(free.back() - clipped.back()), 1e-3 * free.back()) << "the norm never reached 0.2";
}

// A bf16 mesh run with ZeRO-1 (dp 2 x tp 2) checkpointed at step 2 and resumed to step 4 ends
// with the uninterrupted run's parameters bit for bit: each (stage, TP rank) shard's ZeRO
// checkpoint holds the exact fp32 master shards the 16-bit allgather is made from, and the
// fingerprint carries the precision.
TEST_F(MeshPrecisionTest, AResumedBf16ZeroOneMeshRunMatchesTheUninterruptedOneBitForBit) {
  std::vector<std::string> bf16 = {"--tp", "2", "--zero", "1", "--precision", "bf16"};
  run(4, "whole.json", plus(bf16, {"--steps", "4"}));
  std::vector<std::string> saved = plus(bf16, {"--checkpoint-dir", path("ckpt"), "--checkpoint-every", "2"});
  run(4, "first.json", plus(saved, {"--steps", "2"}));
  run(4, "resumed.json", plus(saved, {"--steps", "4", "--resume"}));
  EXPECT_TRUE(json("resumed.json")["resumed"].get<bool>());
  EXPECT_EQ(digest("resumed.json"), digest("whole.json"));
  EXPECT_NE(digest("first.json"), digest("whole.json"));
}

// An fp16 mesh run (pp 2) overflowing at step 1 saves the halved scale with every shard at step
// 2; resumed to step 4 it continues from 32768, bit for bit the uninterrupted run.
TEST_F(MeshPrecisionTest, AResumedFp16MeshRunContinuesFromTheSavedLossScale) {
  std::vector<std::string> fp16 = {"--pp", "2", "--precision", "fp16", "--inject-overflow", "1"};
  run(2, "whole.json", plus(fp16, {"--steps", "4"}));
  std::vector<std::string> saved = plus(fp16, {"--checkpoint-dir", path("ckpt"), "--checkpoint-every", "2"});
  run(2, "first.json", plus(saved, {"--steps", "2"}));
  run(2, "resumed.json", plus(saved, {"--steps", "4", "--resume"}));
  EXPECT_TRUE(json("resumed.json")["resumed"].get<bool>());
  EXPECT_EQ(json("whole.json")["loss_scale"].get<double>(), 32768.0);
  EXPECT_EQ(json("resumed.json")["loss_scale"].get<double>(), 32768.0) << "the loss scale restored";
  EXPECT_EQ(digest("resumed.json"), digest("whole.json"));
}

}  // namespace
}  // namespace braid::testing
