// braid-train and DistributedDataParallel through real rank processes (braid-run): data
// parallelism is equivalent to one process with the whole batch, replicas stay bitwise
// identical, a resumed run matches an uninterrupted one bit for bit, and bad input fails on
// every rank with a clear message. Runs use tiny subsets and a few steps.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "train_fixture.h"
#include "braid/tools/braid_train/blas_core_choice.h"

namespace braid::testing {
namespace {

// N ranks with batch B/N each and one process with batch B see the same samples per step
// (DistributedSampler strides the same permutation) and average the same per-sample
// gradients; only the order of the float sums differs (per-rank means, then the mean of those).
// After 3 SGD steps that changes parameters by a few fp32 ulps of the updates: well below 1e-5
// absolute for weights of magnitude ~0.05, while a wrong sample, scale or missing rank moves
// them by >= 1e-3.
TEST_F(TrainTest, DataParallelMatchesOneProcessWithTheWholeBatch) {
  std::vector<std::string> common = {"--model", "mlp", "--steps", "3", "--batch", "24", "--train-samples", "240",
                                     "--lr", "0.1", "--compress-min-elements", "0"};
  auto args_for = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--export", path(out), "--check-replicas"});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_success(train(1, args_for("one.pt", {})));
  std::vector<float> reference = exported_parameters("mlp", path("one.pt"));
  struct Case {
    int ranks;
    std::vector<std::string> extra;
  };
  for (const Case& c : {Case{2, {}}, Case{3, {"--overlap", "off"}}, Case{4, {"--bucket-mb", "1"}},
                        Case{2, {"--accumulate", "2"}}}) {
    std::string out = "ranks" + std::to_string(c.ranks) + std::to_string(c.extra.size()) + ".pt";
    LaunchResult r = train(c.ranks, args_for(out, c.extra));
    expect_success(r);
    std::vector<float> got = exported_parameters("mlp", path(out));
    ASSERT_EQ(got.size(), reference.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - reference[i]));
    EXPECT_LT(worst, 1e-5) << c.ranks << " ranks";
    EXPECT_GT(worst, -1.0);
  }
}

// Pipeline parallelism (--pp) runs the same arithmetic as one process with the whole batch: M
// micro-batch means / M instead of one mean, summed in another order (same bound as above).
// Every schedule, 2 stages; and 2 pipelines x 2 stages with the stages' gradients averaged
// over the data-parallel groups.
TEST_F(TrainTest, PipelineParallelMatchesOneProcessForEverySchedule) {
  std::vector<std::string> common = {"--model", "mlp", "--steps", "3", "--batch", "24", "--train-samples", "240",
                                     "--lr", "0.1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_success(train(1, with({"--export", path("one.pt")})));
  std::vector<float> reference = exported_parameters("mlp", path("one.pt"));
  struct Case {
    int ranks;
    int stages;
    std::string schedule;
  };
  // 2 stages under every schedule, 4 stages (the 6 layers cut 4 ways; interleaved:2 would need
  // 8 pieces), and 2 pipelines x 2 stages.
  for (const Case& c : {Case{2, 2, "gpipe"}, Case{2, 2, "1f1b"}, Case{2, 2, "interleaved:2"}, Case{2, 2, "zb1"},
                        Case{4, 4, "gpipe"}, Case{4, 4, "1f1b"}, Case{4, 4, "zb1"}, Case{4, 2, "1f1b"}}) {
    std::string out = "pp" + std::to_string(c.ranks) + std::to_string(c.stages) + "-" + c.schedule.substr(0, 5) + ".pt";
    LaunchResult r = train(c.ranks, with({"--pp", std::to_string(c.stages), "--microbatches", "4", "--schedule",
                                          c.schedule, "--export", path(out), "--check-replicas"}));
    expect_success(r);
    std::vector<float> got = exported_parameters("mlp", path(out));
    ASSERT_EQ(got.size(), reference.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - reference[i]));
    EXPECT_LT(worst, 1e-5) << c.ranks << " ranks, " << c.stages << " stages, " << c.schedule;
  }
}

// The transformer cut into 4 stages (9 layers: embeddings, 6 blocks, norm, head) trains like
// one process: the final training loss agrees to float rounding (1e-4 relative; a wrong
// gradient or a dropped micro-batch moves it by > 1e-2 after 3 Adam steps).
TEST_F(TrainTest, TransformerOnFourStagesTrainsLikeOneProcess) {
  std::vector<std::string> common = {"--model", "gpt", "--steps", "3", "--batch", "8", "--train-samples", "64",
                                     "--context", "16", "--optimizer", "adam"};
  auto loss_of = [&](int ranks, std::vector<std::string> extra, const std::string& name) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--json", path(name)});
    expect_success(train(ranks, args));
    return json(name)["epochs"].back()["train_loss"].get<double>();
  };
  double reference = loss_of(1, {}, "one.json");
  for (std::string schedule : {"gpipe", "1f1b", "interleaved:2", "zb1"}) {
    double got = loss_of(4, {"--pp", "4", "--microbatches", "4", "--schedule", schedule}, "pp4.json");
    EXPECT_NEAR(got, reference, 1e-4 * reference) << schedule;
  }
}

TEST_F(TrainTest, ReplicasStayIdenticalWithCompressionBatchNormAndTheTransformer) {
  // --check-replicas compares every rank's parameter digest after every step (Mismatch otherwise).
  expect_success(train(2, {"--model", "cnn", "--steps", "3", "--batch", "16", "--train-samples", "160",
                           "--compress", "int8", "--compress-min-elements", "0", "--check-replicas"}));
  expect_success(train(3, {"--model", "gpt", "--steps", "2", "--batch", "6", "--train-samples", "60", "--context",
                           "32", "--optimizer", "adam", "--compress", "powersgd:2", "--compress-min-elements", "0",
                           "--check-replicas"}));
}

TEST_F(TrainTest, ResumedRunMatchesAnUninterruptedOneBitForBit) {
  for (std::string codec : {"none", "int8"}) {
    std::vector<std::string> common = {"--model", "mlp", "--batch", "16", "--train-samples", "96", "--compress", codec,
                                       "--compress-min-elements", "0", "--checkpoint-dir", path("ckpt-" + codec)};
    auto with = [&](std::vector<std::string> extra) {
      std::vector<std::string> args = common;
      args.insert(args.end(), extra.begin(), extra.end());
      return args;
    };
    // 96 samples / 16 = 6 steps per epoch: stop mid-epoch (step 4), finish at step 8 (epoch 2).
    expect_success(train(2, with({"--steps", "4"})));
    LaunchResult resumed = train(2, with({"--steps", "8", "--resume", "--json", path("resumed.json")}));
    expect_success(resumed);
    EXPECT_GE(resumed.count("resumed from"), 1) << resumed.output;
    std::vector<std::string> fresh = {"--model", "mlp", "--batch", "16", "--train-samples", "96", "--compress", codec,
                                      "--compress-min-elements", "0", "--steps", "8", "--json", path("fresh.json")};
    expect_success(train(2, fresh));
    EXPECT_EQ(json("resumed.json")["parameter_digest"], json("fresh.json")["parameter_digest"]) << codec;
    EXPECT_EQ(json("resumed.json")["steps"], 8);
  }
}

TEST_F(TrainTest, ResumingUnderAnotherConfigurationIsRefused) {
  expect_success(train(2, {"--model", "mlp", "--batch", "16", "--train-samples", "64", "--steps", "2",
                           "--checkpoint-dir", path("ckpt")}));
  LaunchResult r = train(2, {"--model", "mlp", "--batch", "32", "--train-samples", "64", "--steps", "4",
                             "--checkpoint-dir", path("ckpt"), "--resume"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.count("was written by another configuration"), 2) << r.output;
}

TEST_F(TrainTest, BadInputFailsOnEveryRankWithAClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"--data", path("nowhere")}, "no such file"},
      {{"--batch", "10"}, "not divisible by the world size 4"},
      {{"--train-samples", "3", "--batch", "4"}, "3 samples, fewer than the 4 ranks"},
      {{"--model", "gpt", "--data", path("nowhere")}, "no such directory"},
      {{"--compress", "zstd"}, "zstd"},
      {{"--no-such-flag"}, "no-such-flag"},
      {{"--pp", "3"}, "--pp 3 x --tp 1: each must be at least 1 and their product divide the world size 4"},
      {{"--model", "gpt", "--tp", "3"}, "their product divide the world size 4"},
      {{"--model", "gpt", "--tp", "4", "--heads", "2", "--width", "64"}, "2 heads, which 4 ranks cannot share evenly"},
      {{"--model", "mlp", "--tp", "2"}, "only gpt and gpt-small have tensor-parallel layers"},
      {{"--model", "gpt", "--tp", "2", "--sp", "--context", "15"}, "does not split into 2 sequence shards"},
      {{"--pp", "4", "--microbatches", "2", "--schedule", "interleaved:2"}, "multiple"},
  };
  // Every rank checks its input before the first collective, so every rank fails on its own;
  // braid-run then stops the job at the first failure, which may cut the other ranks short
  // before they print: at least one message, never a hang, never a training line.
  for (const Case& c : cases) {
    LaunchResult r = train(4, c.args, 120);
    EXPECT_FALSE(r.timed_out);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_GE(r.count(c.message), 1) << c.message << "\n" << r.output;
    EXPECT_EQ(r.count("epoch 1:"), 0) << r.output;
  }
}

// A damaged checkpoint used to resume "successfully" into wrong parameters: every tensor now
// carries a CRC32C, checked on every rank, and a mismatch fails every rank naming file and tensor.
TEST_F(TrainTest, ADamagedCheckpointIsRefusedOnEveryRankNamingTheTensor) {
  std::vector<std::string> common = {"--model", "mlp", "--batch", "16", "--train-samples", "64",
                                     "--checkpoint-dir", path("ckpt")};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  std::string file = path("ckpt/checkpoint.pt");
  expect_success(train(2, with({"--steps", "2"})));
  std::filesystem::copy_file(file, path("intact.pt"));
  std::uintmax_t size = std::filesystem::file_size(file);
  struct Case {
    std::string name;
    std::uintmax_t offset;
    std::size_t count;
    std::uint8_t mask;
    std::string tensor;  // the start of its name: a quarter in lies in the parameters
  };
  for (const Case& c : {Case{"one flipped bit", size / 4, 1, 0x08, "model/param."},
                        Case{"4 KiB overwritten in the middle", size / 2, 4096, 0, ""}}) {
    std::filesystem::copy_file(path("intact.pt"), file, std::filesystem::copy_options::overwrite_existing);
    damage(file, c.offset, c.count, c.mask);
    LaunchResult r = train(2, with({"--steps", "4", "--resume"}));
    EXPECT_FALSE(r.timed_out) << c.name;
    EXPECT_NE(r.exit_code, 0) << c.name << "\n" << r.output;
    EXPECT_EQ(r.count("braid::Corrupt"), 2) << c.name << "\n" << r.output;
    EXPECT_EQ(r.count(file + ": tensor '" + c.tensor), 2) << c.name << "\n" << r.output;
    EXPECT_EQ(r.count("resumed from"), 0) << c.name << "\n" << r.output;
  }
}

TEST_F(TrainTest, ALearningRateThatIsNotAFinitePositiveNumberIsRefused) {
  for (std::string lr : {"0", "nan", "inf", "-1"}) {
    LaunchResult r = train(2, {"--model", "mlp", "--steps", "1", "--batch", "8", "--train-samples", "16", "--lr", lr});
    EXPECT_EQ(r.exit_code, 2) << lr << "\n" << r.output;
    EXPECT_GE(r.count("must be a finite number greater than 0"), 1) << lr << "\n" << r.output;
    EXPECT_EQ(r.count("epoch 1:"), 0) << r.output;
  }
}

// A learning rate of 1e30 sends the MLP's loss to infinity or NaN within two steps, data-
// parallel and on a 2-stage pipeline (where only the last stage computes losses).
TEST_F(TrainTest, ANonFiniteLossStopsTheRunNamingTheStepUnlessAllowed) {
  for (std::vector<std::string> parallel : {std::vector<std::string>{}, {"--pp", "2", "--microbatches", "2"}}) {
    std::vector<std::string> args = {"--model", "mlp", "--steps", "6", "--batch", "8", "--train-samples", "64",
                                     "--lr", "1e30"};
    args.insert(args.end(), parallel.begin(), parallel.end());
    LaunchResult r = train(2, args);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.count("the training loss became"), 2) << r.output;
    EXPECT_GE(r.count("at step "), 2) << r.output;
    EXPECT_EQ(r.count("epoch 1:"), 0) << r.output;
    args.push_back("--allow-nonfinite-loss");
    expect_success(train(2, args));
  }
}

TEST_F(TrainTest, ResumeWithoutACheckpointIsRefusedUnlessIfPresent) {
  std::vector<std::string> args = {"--model", "mlp", "--steps", "1", "--batch", "8", "--train-samples", "16",
                                   "--checkpoint-dir", path("empty")};
  args.push_back("--resume");
  LaunchResult r = train(2, args);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("there is no checkpoint at " + path("empty/checkpoint.pt")), 2) << r.output;
  args.back() = "--resume-if-present";
  LaunchResult fresh = train(2, args);
  expect_success(fresh);
  EXPECT_EQ(fresh.count("--resume-if-present starts from step 0"), 1) << fresh.output;
}

// Outputs that cannot be written are refused before the first step on every rank (exit 2),
// not found out at the end of the run. A path under a regular file cannot be created even by
// root (the tests run as root, which chmod would not stop).
TEST_F(TrainTest, UnwritableOutputsAreRefusedBeforeTheFirstStep) {
  { std::ofstream(path("file")) << "x"; }
  std::string under_a_file = path("file") + "/x";
  for (std::string flag : {"--json", "--export", "--trace", "--checkpoint-dir"}) {
    LaunchResult r = train(2, {"--model", "mlp", "--steps", "1", "--batch", "8", "--train-samples", "16", flag,
                               under_a_file});
    EXPECT_FALSE(r.timed_out) << flag;
    EXPECT_EQ(r.exit_code, 2) << flag << "\n" << r.output;
    EXPECT_EQ(r.count(flag + " " + under_a_file + ": "), 2) << flag << "\n" << r.output;
    EXPECT_EQ(r.count("checked before the first step"), 2) << flag << "\n" << r.output;
    EXPECT_EQ(r.count("braid-train: mlp on"), 0) << flag << "\n" << r.output;
  }
}

// An OpenBLAS that runs Prescott kernels on a CPU that supports far more (simulated by a
// preloaded library that reports "Prescott" while OPENBLAS_CORETYPE is unset): every rank
// restarts itself once with the best core the CPU supports; a core the user chose stays.
TEST_F(TrainTest, ABlasCoreFarBelowTheCpusIsReplacedUnlessTheUserChoseIt) {
  std::string best = braid::train::best_blas_core(braid::train::cpu_features());
  if (braid::train::better_blas_core("Prescott", best).empty()) GTEST_SKIP() << "no core above Prescott here";
  std::optional<std::string> outer;  // the test's own environment may choose a core: not for this test
  if (const char* set = std::getenv("OPENBLAS_CORETYPE")) outer = set;
  ::unsetenv("OPENBLAS_CORETYPE");
  auto run = [&](std::map<std::string, std::string> env) {
    env["LD_PRELOAD"] = BRAID_OPENBLAS_OF_AN_UNKNOWN_CPU;
    env["BRAID_TIMEOUT"] = "60";
    return launch({.ranks = 2, .program = tool_path("braid-train"),
                   .args = {"--model", "mlp", "--steps", "1", "--batch", "8", "--train-samples", "16", "--quiet",
                            "--test-samples", "16", "--json", path("run.json")},
                   .env = env, .timeout_seconds = 120});
  };
  LaunchResult restarted = run({});
  LaunchResult chosen = run({{"OPENBLAS_CORETYPE", "Prescott"}});
  if (outer) ::setenv("OPENBLAS_CORETYPE", outer->c_str(), 1);
  expect_success(restarted);
  EXPECT_EQ(restarted.count("braid-train restarted itself with OPENBLAS_CORETYPE=" + best +
                            " because OpenBLAS had picked Prescott"),
            2)  // the first line and the summary, both on rank 0
      << restarted.output;
  expect_success(chosen);
  EXPECT_EQ(chosen.count("restarted"), 0) << chosen.output;
  EXPECT_EQ(chosen.count("warning: core Prescott (OPENBLAS_CORETYPE=Prescott, respected) is far below this CPU's " +
                         best),
            2)
      << chosen.output;
}


TEST(DistributedDataParallelTest, MismatchedModelsAreNamedOnEveryRank) {
  LaunchResult r = ddp_scenario(3, "mismatched-model");
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.count("ERROR InvalidArgument"), 3) << r.output;
  EXPECT_EQ(r.count("the model on rank 1 is not the model on rank 0: its parameter or buffer #0 differs from rank 0's "
                    "'fc1.weight float [16, 8]'"),
            3)
      << r.output;
  EXPECT_EQ(r.count("here: 'fc1.weight float [17, 8]'"), 1) << r.output;
}

TEST(DistributedDataParallelTest, UnusedParametersFailByDefaultAndAreZeroWhenAllowed) {
  LaunchResult r = ddp_scenario(2, "unused-param");
  EXPECT_EQ(r.count("ERROR InvalidArgument"), 2) << r.output;
  EXPECT_GE(r.count("spare.weight"), 1) << r.output;
  LaunchResult ok = ddp_scenario(2, "unused-allowed");
  ASSERT_EQ(ok.count("PASS unused-allowed"), 2) << ok.output;
  std::vector<std::string> digests = ok.lines_with("DIGEST");
  ASSERT_EQ(digests.size(), 2u) << ok.output;
  EXPECT_EQ(digests[0].substr(digests[0].find("DIGEST")), digests[1].substr(digests[1].find("DIGEST")));
}


// gradient_as_bucket_view: on 2 and 3 ranks, the same parameters and gradients as plain DDP
// bit for bit, every .grad in its bucket after every move, and the gradients kept when the
// wrapper goes (ddp_scenarios.cc, bucket-views).
TEST(DistributedDataParallelTest, BucketViewsTrainBitwiseLikeCopiedGradients) {
  for (int ranks : {2, 3}) {
    LaunchResult r = ddp_scenario(ranks, "bucket-views");
    ASSERT_EQ(r.count("PASS bucket-views"), ranks) << r.output;
    EXPECT_EQ(r.count("VIEWS misplaced 0 parameter-difference 0 gradient-difference 0 kept-difference 0"), ranks)
        << r.output;
  }
}

TEST(DistributedDataParallelTest, AReplacedGradientIsRefused) {
  LaunchResult r = ddp_scenario(2, "replaced-grad");
  EXPECT_EQ(r.count("the gradient of 'fc1.weight' was replaced"), 2) << r.output;
}

}  // namespace
}  // namespace braid::testing
