// braid-train --precision (tools/braid_train/mixed_precision_training.h) through real rank
// processes (braid-run): bf16 computes under CPU autocast and halves the wire, fp16 halves it
// under a dynamic loss scale, an injected overflow skips its step on every rank alike, and what
// would fight --precision over the wire's dtype is refused.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "train_fixture.h"

namespace braid::testing {
namespace {

class MixedPrecisionTest : public TrainTest {
 protected:
  const std::vector<std::string> mlp_ = {"--model", "mlp", "--batch", "48", "--train-samples", "960", "--lr", "0.05",
                                         "--bucket-mb", "1", "--check-replicas"};
  double wire(const std::string& name) const { return json(name)["epochs"].back()["wire_bytes"].get<double>(); }
  std::string digest(const std::string& name) const { return json(name)["parameter_digest"].get<std::string>(); }
};

// fp16 under the dynamic loss scale: at --inject-overflow 3 the last rank's first gradient
// element is +inf. Under ZeRO only the rank whose shard holds that element sees it, yet every
// rank must skip (--check-replicas would fail at step 3 were the replicas to diverge), the scale
// halves (65536 -> 32768), and the skipped step changes nothing: the run stopped after it has
// the parameters of the run stopped after step 2, bit for bit (the optimizer state too, or
// step 4 would differ: the 4-step runs with and without a skipped step 3 are checked to differ
// from each other only by that step).
TEST_F(MixedPrecisionTest, Fp16InjectedOverflowSkipsTheStepOnEveryRankAlike) {
  for (const char* zero : {"0", "2", "3"}) {
    std::vector<std::string> fp16 = plus(mlp_, {"--precision", "fp16", "--zero", zero});
    std::string tag = fmt::format("zero{}", zero);
    LaunchResult injected = train(3, plus(fp16, {"--steps", "3", "--inject-overflow", "3", "--json",
                                                  path(tag + "-skipped.json")}));
    expect_success(injected);
    EXPECT_EQ(injected.count("step 3: the fp16 gradients overflowed at loss scale 65536: step skipped on every rank, "
                             "the scale is now 32768"),
              1)
        << injected.output;
    nlohmann::json run = json(tag + "-skipped.json");
    EXPECT_EQ(run["skipped_steps"], nlohmann::json::array({3})) << tag;
    EXPECT_EQ(run["loss_scale"].get<double>(), 32768.0) << tag;
    expect_success(train(3, plus(fp16, {"--steps", "2", "--json", path(tag + "-two.json")})));
    EXPECT_EQ(digest(tag + "-skipped.json"), digest(tag + "-two.json")) << tag << ": the skipped step moved something";
    EXPECT_EQ(json(tag + "-two.json")["skipped_steps"], nlohmann::json::array()) << tag;
    EXPECT_EQ(json(tag + "-two.json")["loss_scale"].get<double>(), 65536.0) << tag;
  }
}

// A DDP (--zero 0) fp16 run's checkpoint keeps the loss scale: an overflow injected at step 1
// halves it to 32768 before the save at step 2, and the run resumed to step 4 continues from
// 32768 (from the initial 65536 its fp16 gradients would round differently and the digest
// would differ), bit for bit the uninterrupted run. (ZeRO's manifests keep it too:
// Zero3CheckpointTest.MixedPrecisionAndZeroPlusPlusResumeBitForBit.)
TEST_F(MixedPrecisionTest, AResumedFp16DdpRunContinuesFromTheSavedLossScale) {
  std::vector<std::string> fp16 = plus(mlp_, {"--precision", "fp16", "--zero", "0", "--inject-overflow", "1"});
  expect_success(train(2, plus(fp16, {"--steps", "4", "--json", path("whole.json")})));
  std::vector<std::string> saved = plus(fp16, {"--checkpoint-dir", path("ckpt"), "--checkpoint-every", "2"});
  expect_success(train(2, plus(saved, {"--steps", "2"})));
  expect_success(train(2, plus(saved, {"--steps", "4", "--resume", "--json", path("resumed.json")})));
  EXPECT_TRUE(json("resumed.json")["resumed"].get<bool>());
  EXPECT_EQ(json("whole.json")["loss_scale"].get<double>(), 32768.0);
  EXPECT_EQ(json("resumed.json")["loss_scale"].get<double>(), 32768.0) << "the loss scale restored";
  EXPECT_EQ(digest("resumed.json"), digest("whole.json"));
}

// Without an overflow fp16 trains as fp32 does: the gradients (and ZeRO's parameters) travel as
// fp16, rounded to 11 significant bits once per value, so after 20 steps the loss is within
// 0.5% of fp32's (measured: 0.01%; a lost or unscaled gradient moves it by > 10%), and the wire
// carries half the bytes (within 1%: headers and the fp32 scalar allreduce of the overflow flag
// are not counted as wire). bf16 also computes the forward in bf16 (autocast: 8 significant
// bits per matmul input, ~0.4% per product): within 3% of fp32 (measured 0.5%).
TEST_F(MixedPrecisionTest, HalfPrecisionsTrainLikeFp32OnHalfTheWire) {
  for (const char* zero : {"0", "2", "3"}) {
    std::vector<std::string> common = plus(mlp_, {"--steps", "20", "--zero", zero});
    std::string tag = fmt::format("zero{}", zero);
    expect_success(train(2, plus(common, {"--json", path(tag + "-fp32.json")})));
    double reference = step_losses(tag + "-fp32.json").back();
    for (const auto& [precision, rtol] : {std::pair{"fp16", 5e-3}, std::pair{"bf16", 3e-2}}) {
      std::string name = fmt::format("{}-{}.json", tag, precision);
      expect_success(train(2, plus(common, {"--precision", precision, "--json", path(name)})));
      double loss = step_losses(name).back();
      std::printf("%s: final loss %.6f, fp32 %.6f (%+.3f%%); wire %.0f of %.0f bytes\n", name.c_str(), loss, reference,
                  100 * (loss - reference) / reference, wire(name), wire(tag + "-fp32.json"));
      EXPECT_NEAR(loss, reference, rtol * reference) << name;
      EXPECT_NEAR(wire(name), 0.5 * wire(tag + "-fp32.json"), 0.01 * wire(tag + "-fp32.json")) << name;
      EXPECT_EQ(json(name)["precision"], precision);
      EXPECT_EQ(json(name)["skipped_steps"], nlohmann::json::array()) << name;
      if (std::string(zero) == "2") {
        // ZeRO keeps an exact fp32 master shard per rank (1/n of the parameters) beside the
        // flat parameters, which hold the 16-bit values every rank computes with: in bf16 under
        // bf16 (2 bytes each: the master shard is as large on 2 ranks), in fp32 under fp16
        // (LibTorch 1.13 computes fp16 in fp32 on CPU: half the flat bytes).
        double params = json(name)["model_state"]["parameters"].get<double>();
        double master_share = std::string(precision) == "bf16" ? 1.0 : 0.5;
        EXPECT_NEAR(json(name)["model_state"]["master"].get<double>(), params * master_share, 4.0 * 2 * 64) << name;
      }
    }
  }
}

// What would set the wire's dtype a second way, or has no meaning, is refused before training.
TEST_F(MixedPrecisionTest, ConflictingFlagsAreRefusedNamingThem) {
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  for (const Case& c : {Case{{"--precision", "bf16", "--zero", "1", "--zero-pp", "qwz"}, "--precision bf16: with --zero-pp qwz"},
                        Case{{"--precision", "fp16", "--compress", "int8"}, "--precision fp16: with --compress int8"},
                        Case{{"--precision", "bf16", "--loss-scale", "1024"}, "--loss-scale applies to --precision fp16 only"},
                        Case{{"--inject-overflow", "2"}, "--inject-overflow tests the loss scale of --precision fp16"},
                        Case{{"--precision", "fp16", "--loss-scale", "huge"}, "--loss-scale 'huge': expected dynamic"},
                        Case{{"--precision", "fp8"}, "--precision"}}) {
    LaunchResult r = train(2, plus(c.flags, {"--steps", "1"}), 60);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2) << fmt::format("{}", fmt::join(c.flags, " ")) << "\n" << r.output;
    EXPECT_GE(r.count(c.message), 1) << r.output;
  }
}

}  // namespace
}  // namespace braid::testing
