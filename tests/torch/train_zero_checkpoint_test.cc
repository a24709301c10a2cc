// Sharded ZeRO checkpoints (torch/zero_checkpoint.h, braid-train --zero 1|2 --checkpoint-dir)
// through real rank processes (braid-run): a run stopped at step K/2 on 4 ranks and resumed to K
// on 4 ranks is the uninterrupted run bit for bit; resumed on 2 or 3 ranks (resharded) it is
// within rounding; damaged checkpoints, checkpoints of another model or kind are refused on
// every rank with nothing loaded. The resharding of the optimizer state itself is checked
// element by element through the library (programs/zero_checkpoint_scenarios.cc).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "launch.h"
#include "train_fixture.h"

namespace braid::testing {
namespace {

namespace fs = std::filesystem;

// How far a resumed run at another world size may drift from the uninterrupted one, and why.
// The checkpoint itself loads exactly (every element of the parameters and of the optimizer
// state lands where it was: ReshardAnyWorldToAnyWorld below checks it bit for bit); what differs
// after it is the arithmetic at m ranks: each rank's loss is the mean over batch / m samples and
// the ranks' gradients are summed over m in another grouping, so every averaged gradient element
// differs from the 4-rank one by a few float ulps (~1e-7 relative), and so does every logged
// loss, already at the first resumed step. Measured over 3 (MLP) and 2 (GPT) resumed steps on 2
// and 3 ranks: loss curves within 1.2e-7 relative, the MLP's parameters within 7.5e-9 absolute
// (a float ulp of its ~0.05 weights is 3.7e-9). The bounds below leave about two orders of
// magnitude of margin for other BLAS kernels and core counts, and still catch a resharding
// error, which is not a rounding: one element of the momentum shifted, lost or zeroed moves its
// parameter by about the learning rate times a gradient (0.1 x ~1e-3 here, 100 times the
// parameter bound), and a misplaced range of a shard moves the loss far beyond 1e-5.
constexpr double kLossRtol = 1e-5;
constexpr double kParameterAtol = 1e-6;

class ZeroCheckpointTest : public TrainTest {
 protected:
  std::string digest(const std::string& name) const { return json(name)["parameter_digest"].get<std::string>(); }

  // Trains `steps` uninterrupted on 4 ranks ("full"), then steps / 2 on 4 ranks with a checkpoint
  // ("ckpt"), then resumes a copy of the checkpoint ("ckpt-<m>", first handed to `before_resume`)
  // at each world size m to `steps` ("resumed-<m>"), under --zero 2 (the save is --zero 1: the
  // stages compute the same numbers, and a checkpoint of one resumes under the other).
  void stop_and_resume(const std::vector<std::string>& common, int steps, bool export_parameters,
                       const std::function<void(const std::string&, int)>& before_resume = {}) {
    auto outputs = [&](const std::string& name) {
      std::vector<std::string> out = {"--json", path(name + ".json")};
      if (export_parameters) out.insert(out.end(), {"--export", path(name + ".pt")});
      return out;
    };
    expect_success(train(4, plus(plus(common, {"--zero", "1", "--steps", std::to_string(steps)}), outputs("full"))));
    expect_success(train(4, plus(common, {"--zero", "1", "--steps", std::to_string(steps / 2), "--checkpoint-dir",
                                          path("ckpt")})));
    for (int ranks : {4, 2, 3}) {
      std::string dir = path(fmt::format("ckpt-{}", ranks));
      fs::copy(path("ckpt"), dir, fs::copy_options::recursive);
      if (before_resume) before_resume(dir, ranks);
      LaunchResult r = train(ranks, plus(plus(common, {"--zero", "2", "--steps", std::to_string(steps), "--checkpoint-dir",
                                                      dir, "--resume"}),
                                         outputs(fmt::format("resumed-{}", ranks))));
      expect_success(r);
      EXPECT_EQ(r.count(fmt::format("resumed from {}/zero-checkpoint.json at step {}", dir, steps / 2)), 1) << r.output;
    }
  }

  // braid-zero-checkpoint-rank SCENARIO on `ranks` ranks (programs/zero_checkpoint_scenarios.cc),
  // in this test's directory; every rank must reach its end.
  LaunchResult scenario(int ranks, const std::string& name) const {
    LaunchResult r = launch({.ranks = ranks, .program = test_program_path("braid-zero-checkpoint-rank"),
                             .args = {name, path("scenario")}, .env = {{"BRAID_TIMEOUT", "60"}},
                             .timeout_seconds = 120});
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.count("PASS " + name), ranks) << r.output;
    return r;
  }

  // The resumed runs' losses against the uninterrupted run's last steps.
  void expect_resumed_curves(int steps) const {
    std::vector<double> full = step_losses("full.json");
    ASSERT_EQ(full.size(), std::size_t(steps));
    std::vector<double> tail(full.begin() + steps / 2, full.end());
    EXPECT_EQ(step_losses("resumed-4.json"), tail) << "same world size: bit for bit";
    EXPECT_EQ(digest("resumed-4.json"), digest("full.json")) << "same world size: bit for bit";
    for (int ranks : {2, 3}) {
      expect_same_curve(step_losses(fmt::format("resumed-{}.json", ranks)), tail, kLossRtol,
                        fmt::format("resumed at {} ranks", ranks));
    }
  }
};

// The MLP with SGD and momentum 0.9, several buckets (--bucket-mb 1: the 4 MiB and 3 MiB weights
// alone, the biases and the last layer together, each padded differently at 2, 3 and 4 ranks):
// 96 samples, 4 steps per epoch at every world size, stopped mid-epoch at step 3, resumed to 6
// (into epoch 2). Also a crashed save next to the checkpoint (shard files of the next generation
// and no manifest naming them) is ignored by the load and removed by the next save.
TEST_F(ZeroCheckpointTest, MlpWithMomentumResumesBitForBitOnFourRanksAndWithinRoundingOnTwoAndThree) {
  std::vector<std::string> common = {"--model", "mlp", "--batch", "24", "--train-samples", "96", "--lr", "0.1",
                                     "--bucket-mb", "1"};
  // What a save killed before its manifest leaves: generation 2's files, one of them half written.
  auto crashed_save = [](const std::string& dir, int ranks) {
    if (ranks != 4) return;
    fs::copy_file(dir + "/zero-1-rank0.pt", dir + "/zero-2-rank0.pt");
    fs::copy_file(dir + "/zero-1-rank1.pt", dir + "/zero-2-rank1.pt.tmp.12345");
    fs::resize_file(dir + "/zero-2-rank0.pt", 1000);
  };
  stop_and_resume(common, 6, /*export_parameters=*/true, crashed_save);
  expect_resumed_curves(6);
  std::vector<float> full = exported_parameters("mlp", path("full.pt"));
  EXPECT_TRUE(exported_parameters("mlp", path("resumed-4.pt")) == full);
  for (int ranks : {2, 3}) {
    std::vector<float> resumed = exported_parameters("mlp", path(fmt::format("resumed-{}.pt", ranks)));
    ASSERT_EQ(resumed.size(), full.size());
    double worst = 0;
    for (std::size_t i = 0; i < full.size(); ++i) worst = std::max(worst, double(std::abs(resumed[i] - full[i])));
    EXPECT_LT(worst, kParameterAtol) << ranks << " ranks";
    std::printf("resumed at %d ranks: largest parameter difference %.3g\n", ranks, worst);
  }
  // The resumed run saved twice more, at its epoch end and its end, as generations 3 (past the
  // crashed save's 2) and 4, each removing every other generation after its commit.
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(path("ckpt-4"))) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"zero-4-buffers.pt", "zero-4-rank0.pt", "zero-4-rank1.pt",
                                              "zero-4-rank2.pt", "zero-4-rank3.pt", "zero-checkpoint.json"}));
}

// The GPT with Adam (two moments and a step per shard), one bucket, 72 windows of 16 characters:
// 3 steps per epoch at every world size; stopped at step 2, resumed to 4 (into epoch 2).
TEST_F(ZeroCheckpointTest, TransformerWithAdamResumesBitForBitOnFourRanksAndWithinRoundingOnTwoAndThree) {
  stop_and_resume({"--model", "gpt", "--context", "16", "--optimizer", "adam", "--batch", "24", "--train-samples", "72"},
                  4, /*export_parameters=*/false);
  expect_resumed_curves(4);
}

// The resharding itself, through the library: SGD (momentum), Adam (amsgrad: three state tensors)
// and AdamW, 232 floats in buckets of up to 131, saved at 1-4 ranks and each checkpoint loaded at
// 1-4 ranks: every element of the flat parameters (on every rank, after the allgather), of the
// padding (0) and of every state tensor of every rank's new shard is the value saved for it, bit
// for bit, and Adam's step count is kept. Also loaded at 4 ranks into other buckets (one per
// parameter, as another --bucket-mb would make): the re-cut crosses bucket boundaries.
TEST_F(ZeroCheckpointTest, ReshardAnyWorldToAnyWorldThroughTheLibrary) {
  LaunchResult r = scenario(4, "reshard");
  std::vector<std::string> lines = r.lines_with("RESHARD ");
  EXPECT_EQ(lines.size(), std::size_t(3 * 4 * (1 + 2 + 3 + 4))) << r.output;  // optimizers x n x (ranks of every m)
  std::vector<std::string> regrouped = r.lines_with("REGROUPED ");
  EXPECT_EQ(regrouped.size(), std::size_t(3 * 4 * 4)) << r.output;  // optimizers x n x ranks
  lines.insert(lines.end(), regrouped.begin(), regrouped.end());
  for (const std::string& line : lines) EXPECT_NE(line.find("faults 0"), std::string::npos) << line;
}

// A load that fails leaves the model and the optimizer as they were, on every rank: the files are
// read into temporaries and written only after every rank succeeded. Each case fails on every
// rank with the error kind named, and the parameters and optimizer state are bit for bit those
// of before the load ("unchanged 1").
TEST_F(ZeroCheckpointTest, AFailedLoadChangesNothingOnAnyRank) {
  LaunchResult r = scenario(3, "refused");
  for (const char* refused : {"REFUSED flipped-byte Corrupt unchanged 1", "REFUSED truncated-shard Corrupt unchanged 1",
                              "REFUSED missing-shard Corrupt unchanged 1", "REFUSED damaged-manifest Corrupt unchanged 1",
                              "REFUSED another-model InvalidArgument unchanged 1"}) {
    EXPECT_EQ(r.count(refused), 3) << refused << "\n" << r.output;
  }
  EXPECT_EQ(r.count("zero-1-rank2.pt is missing"), 3) << r.output;  // rank 2 found it, ranks 0 and 1 were told
}

// Bad checkpoints given to braid-train: a non-zero exit, the message on every rank, no step
// trained (nothing was loaded: the previous test shows a failed load writes nothing).
TEST_F(ZeroCheckpointTest, BadCheckpointsAreRefusedOnEveryRankNamingTheFileOrTheDifference) {
  std::vector<std::string> mlp = {"--model", "mlp", "--batch", "8", "--train-samples", "32", "--zero", "1"};
  auto gpt_of_width = [](const std::string& width) {
    return std::vector<std::string>{"--model", "gpt", "--context", "8", "--width", width, "--layers", "1", "--heads",
                                    "2", "--batch", "8", "--train-samples", "32", "--zero", "1"};
  };
  std::vector<std::string> gpt = gpt_of_width("32");
  expect_success(train(2, plus(mlp, {"--steps", "2", "--checkpoint-dir", path("mlp")})));
  expect_success(train(2, plus(gpt, {"--steps", "1", "--checkpoint-dir", path("gpt")})));
  std::vector<std::string> ddp = {"--model", "mlp", "--batch", "8", "--train-samples", "32"};
  expect_success(train(2, plus(ddp, {"--steps", "2", "--checkpoint-dir", path("ddp")})));
  struct Case {
    std::string name;
    std::vector<std::string> run;  // resumed with --steps 4 --resume
    std::string source;            // the checkpoint copied, then damaged
    std::function<void(const std::string&)> damage;
    std::string message;           // on every rank
  };
  auto none = [](const std::string&) {};
  std::vector<Case> cases = {
      {"missing shard", mlp, "mlp", [](const std::string& d) { fs::remove(d + "/zero-1-rank1.pt"); },
       "zero-1-rank1.pt is missing"},
      {"truncated shard", mlp, "mlp", [](const std::string& d) { fs::resize_file(d + "/zero-1-rank0.pt", 4096); },
       "zero-1-rank0.pt has 4096 bytes, the manifest recorded"},
      // A quarter in lies in the parameters' bytes (the middle may fall in the zip padding
      // between two tensors, which no reader looks at).
      {"flipped byte", mlp, "mlp",
       [](const std::string& d) { damage(d + "/zero-1-rank0.pt", fs::file_size(d + "/zero-1-rank0.pt") / 4, 1, 0x08); },
       "zero-1-rank0.pt: tensor 'bucket0.param' is damaged"},
      {"missing manifest", mlp, "mlp", [](const std::string& d) { fs::remove(d + "/zero-checkpoint.json"); },
       "there is no checkpoint at "},
      {"another width", gpt_of_width("64"), "gpt", none, "is a checkpoint of another model: parameter"},
      {"another model", gpt, "mlp", none, "is a checkpoint of another model: parameter 0"},
      {"a DDP checkpoint", mlp, "ddp", none, "holds a DDP (--zero 0) checkpoint"},
      {"a ZeRO checkpoint without --zero", ddp, "mlp", none, "holds a sharded ZeRO (--zero 1 or 2) checkpoint"},
  };
  for (const Case& c : cases) {
    std::string dir = path("case-" + std::to_string(&c - cases.data()));
    fs::copy(path(c.source), dir, fs::copy_options::recursive);
    c.damage(dir);
    LaunchResult r = train(2, plus(c.run, {"--steps", "4", "--checkpoint-dir", dir, "--resume"}), 60);
    EXPECT_FALSE(r.timed_out) << c.name;
    EXPECT_NE(r.exit_code, 0) << c.name << "\n" << r.output;
    EXPECT_EQ(r.count(c.message), 2) << c.name << "\n" << r.output;
    EXPECT_EQ(r.count("resumed from"), 0) << c.name << "\n" << r.output;
    EXPECT_EQ(r.count("epoch 1:"), 0) << c.name << "\n" << r.output;
  }
}

// The sampler makes the global batch of step t the samples perm[t B, (t+1) B) at every world size
// whose ranks split B evenly (distributed_sampler.h: rank r takes every n-th index), but pads an
// epoch to a multiple of n, so its length in steps, floor(ceil(N / n) / (B / n)), may depend on
// n: 95 samples with --batch 12 make 8 steps on 2, 3 and 4 ranks, 7 on 1. A saved (epoch, batch)
// would then name other samples: the epoch's length is in the fingerprint, and such a resume is
// refused naming both; where the lengths agree it resumes.
TEST_F(ZeroCheckpointTest, ResumingWhereAnEpochHasAnotherLengthIsRefused) {
  std::vector<std::string> mlp = {"--model", "mlp", "--batch", "12", "--train-samples", "95", "--zero", "1"};
  expect_success(train(2, plus(mlp, {"--steps", "2", "--checkpoint-dir", path("ckpt")})));
  fs::copy(path("ckpt"), path("ckpt-3"), fs::copy_options::recursive);
  LaunchResult one = train(1, plus(mlp, {"--steps", "3", "--checkpoint-dir", path("ckpt"), "--resume"}), 60);
  EXPECT_NE(one.exit_code, 0) << one.output;
  EXPECT_EQ(one.count("was written by another configuration"), 1) << one.output;
  EXPECT_GE(one.count("steps-per-epoch=8"), 1) << one.output;
  EXPECT_GE(one.count("steps-per-epoch=7"), 1) << one.output;
  expect_success(train(3, plus(mlp, {"--steps", "3", "--checkpoint-dir", path("ckpt-3"), "--resume"})));
}

// With ZeRO++ (--zero-pp qwz,qgz) the checkpoint holds qwZ's exact master shards, and a load
// regathers the flat parameters through the int8 allgather, as a step ends: resumed at the same
// world size the run is the uninterrupted one bit for bit. Had the load allgathered the flat
// parameters as they were (the exact values, not their int8 round trip), the first resumed
// forward would compute with other weights and the digest would differ.
TEST_F(ZeroCheckpointTest, ZeroPlusPlusResumesBitForBitFromItsMasterShards) {
  std::vector<std::string> common = {"--model", "mlp", "--batch", "24", "--train-samples", "240", "--lr", "0.1",
                                     "--bucket-mb", "1", "--zero", "2", "--zero-pp", "qwz,qgz"};
  expect_success(train(2, plus(common, {"--steps", "6", "--json", path("full.json")})));
  expect_success(train(2, plus(common, {"--steps", "3", "--checkpoint-dir", path("ckpt")})));
  expect_success(train(2, plus(common, {"--steps", "6", "--checkpoint-dir", path("ckpt"), "--resume", "--json",
                                        path("resumed.json")})));
  EXPECT_EQ(digest("resumed.json"), digest("full.json"));
  std::vector<double> full = step_losses("full.json");
  EXPECT_EQ(step_losses("resumed.json"), std::vector<double>(full.begin() + 3, full.end()));
}

}  // namespace
}  // namespace braid::testing
