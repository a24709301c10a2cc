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
#include "zero_checkpoint_fixture.h"

namespace braid::testing {
namespace {

namespace fs = std::filesystem;

// The uninterrupted run and the save are --zero 1, the resumes --zero 2: the stages compute the
// same numbers, and a checkpoint of one resumes under the other.
const std::vector<Resume> kFourTwoThree = {{"4", 4, {"--zero", "2"}}, {"2", 2, {"--zero", "2"}}, {"3", 3, {"--zero", "2"}}};

// The MLP with SGD and momentum 0.9, several buckets (--bucket-mb 1: the 4 MiB and 3 MiB weights
// alone, the biases and the last layer together, each padded differently at 2, 3 and 4 ranks):
// 96 samples, 4 steps per epoch at every world size, stopped mid-epoch at step 3, resumed to 6
// (into epoch 2). Also a crashed save next to the checkpoint (shard files of the next generation
// and no manifest naming them) is ignored by the load and removed by the next save.
TEST_F(ZeroCheckpointTest, MlpWithMomentumResumesBitForBitOnFourRanksAndWithinRoundingOnTwoAndThree) {
  std::vector<std::string> common = {"--model", "mlp", "--batch", "24", "--train-samples", "96", "--lr", "0.1",
                                     "--bucket-mb", "1"};
  // What a save killed before its manifest leaves: generation 2's files, one of them half written.
  auto crashed_save = [](const std::string& dir, const Resume& r) {
    if (r.ranks != 4) return;
    fs::copy_file(dir + "/zero-1-rank0.pt", dir + "/zero-2-rank0.pt");
    fs::copy_file(dir + "/zero-1-rank1.pt", dir + "/zero-2-rank1.pt.tmp.12345");
    fs::resize_file(dir + "/zero-2-rank0.pt", 1000);
  };
  stop_and_resume(common, 6, /*export_parameters=*/true, {"--zero", "1"}, kFourTwoThree, crashed_save);
  expect_resumed_curves(6, {"4"}, {"2", "3"});
  EXPECT_TRUE(exported_parameters("mlp", path("resumed-4.pt")) == exported_parameters("mlp", path("full.pt")));
  for (const char* name : {"2", "3"}) expect_parameters_within("mlp", name);
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
                  4, /*export_parameters=*/false, {"--zero", "1"}, kFourTwoThree);
  expect_resumed_curves(4, {"4"}, {"2", "3"});
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
  expect_failed_loads_changed_nothing("refused", "REFUSED");
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
  expect_refused_on_both_ranks({
      {"missing shard", mlp, "mlp", removing("zero-1-rank1.pt"), "zero-1-rank1.pt is missing"},
      {"truncated shard", mlp, "mlp", truncating("zero-1-rank0.pt", 4096),
       "zero-1-rank0.pt has 4096 bytes, the manifest recorded"},
      {"flipped byte", mlp, "mlp", flipping_a_bit_a_quarter_in("zero-1-rank0.pt"),
       "zero-1-rank0.pt: tensor 'bucket0.param' is damaged"},
      {"missing manifest", mlp, "mlp", removing("zero-checkpoint.json"), "there is no checkpoint at "},
      {"another width", gpt_of_width("64"), "gpt", undamaged, "is a checkpoint of another model: parameter"},
      {"another model", gpt, "mlp", undamaged, "is a checkpoint of another model: parameter 0 of this model"},
      {"a DDP checkpoint", mlp, "ddp", undamaged, "holds a DDP (--zero 0) checkpoint"},
      {"a ZeRO checkpoint without --zero", ddp, "mlp", undamaged, "holds a sharded ZeRO (--zero 1, 2 or 3) checkpoint"},
  });
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
