// Stage-3 checkpoints and ZeRO++ on the mesh (braid-train --zero 3 with --tp/--pp/--dropout;
// tools/braid_train/mesh_checkpoint.h, mesh_fully_sharded.h) through real rank processes
// (braid-run):
// - a dp 2 x tp 2 run with dropout stopped at step 3 with a checkpoint and resumed to 6 is the
//   uninterrupted run bit for bit (every (stage, TP rank) group's sharded ZeRO checkpoint of its
//   units, the dropout streams, the data position);
// - a dp 2 x pp 2 checkpoint resumes at dp 1 x pp 2 (every unit re-cut from 2 shards to 1)
//   within the rounding of another batch split;
// - a checkpoint of another mesh shape or model, a missing or a truncated shard file: refused on
//   every rank before any step;
// - --zero-pp qwz,qgz on the mesh's ZeRO-3 (dp x pp, dp x tp) and ZeRO-1 (dp 3 with dropout):
//   within the int8 goal of the compression docs of the uncompressed mesh run, replicas
//   identical, the data-parallel axis's bytes (braid's own per-communicator counters) cut >= 3.5x.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "train_fixture.h"
#include "zero_checkpoint_fixture.h"

namespace braid::testing {
namespace {

namespace fs = std::filesystem;

// The small GPT, Adam, 2 micro-batches: 8 steps an epoch at dp 2 and at dp 1 (the same
// steps-per-epoch, which the stage-3 fingerprint holds instead of the world size).
const std::vector<std::string> kGpt = {"--model", "gpt", "--batch", "12", "--train-samples", "96", "--context", "32",
                                       "--microbatches", "2", "--optimizer", "adam"};

class MeshZero3CheckpointTest : public TrainTest {
 protected:
  // 6 steps uninterrupted, then 3 with a checkpoint in ckpt-<tag>, both on 4 ranks with `flags`.
  void save_half_way(const std::string& tag, const std::vector<std::string>& flags) const {
    std::vector<std::string> run = plus(plus(kGpt, flags), {"--zero", "3"});
    expect_success(train(4, plus(run, {"--steps", "6", "--json", path(tag + "-whole.json")})));
    expect_success(train(4, plus(run, {"--steps", "3", "--checkpoint-dir", path("ckpt-" + tag)})));
  }
  LaunchResult resume(const std::string& tag, int ranks, const std::vector<std::string>& flags,
                      const std::string& report) const {
    return train(ranks, plus(plus(kGpt, flags), {"--zero", "3", "--steps", "6", "--checkpoint-dir", path("ckpt-" + tag), "--resume",
                                                 "--json", path(report)}), 120);
  }
};

// Bit for bit at the same mesh: the shards hold every parameter element and Adam's moments and
// step exactly, the stage module's buffers the dropout streams (drawn every step, inside and
// outside the TP regions), the manifest the position; the resumed run rebuilds the same units
// and does the uninterrupted run's arithmetic. At dp 1 (2 ranks, the same pp 2): every unit's
// 2 shards land in one (checked element by element for the loader in
// fully_sharded_checkpoint_scenarios.cc); what differs is the arithmetic after it: one replica's
// micro-batch holds 6 samples where two replicas held 3 each and averaged, so each gradient
// element differs by a few ulps and so does every loss: zero_checkpoint_fixture.h's kLossRtol
// (1e-5, two orders above the measured 1e-7; a misplaced shard range moves the loss far more).
// No dropout there: the streams are per (stage, TP rank), not per sample, so another dp size
// draws other masks (a valid run, not the same trajectory).
TEST_F(MeshZero3CheckpointTest, ResumesBitForBitOnTheSameMeshAndWithinRoundingAtAnotherDpSize) {
  save_half_way("tp", {"--tp", "2", "--dropout", "0.1"});
  EXPECT_TRUE(fs::exists(path("ckpt-tp") + "/mesh-1/pp0-tp1/zero-checkpoint.json"));  // a ZeRO checkpoint per TP rank
  LaunchResult same = resume("tp", 4, {"--tp", "2", "--dropout", "0.1"}, "tp-resumed.json");
  expect_success(same);
  EXPECT_EQ(same.count(fmt::format("resumed from {} at step 3", path("ckpt-tp"))), 1) << same.output;
  EXPECT_EQ(digest("tp-resumed.json"), digest("tp-whole.json"));
  std::vector<double> whole = step_losses("tp-whole.json");
  EXPECT_EQ(step_losses("tp-resumed.json"), std::vector<double>(whole.begin() + 3, whole.end()));

  save_half_way("pp", {"--pp", "2"});
  expect_success(resume("pp", 2, {"--pp", "2"}, "pp-dp1.json"));
  std::vector<double> pp = step_losses("pp-whole.json");
  expect_same_curve(step_losses("pp-dp1.json"), std::vector<double>(pp.begin() + 3, pp.end()), kLossRtol,
                    "dp 2 x pp 2 resumed at dp 1 x pp 2");
  EXPECT_NE(digest("pp-dp1.json"), "");
}

// Every refusal on every rank (rethrow_first_failure), before any step: another mesh shape
// (tp 2 for pp 2: another fingerprint), another model (its width), a shard file missing or cut
// short (the ZeRO loader's Corrupt naming the file, from one group, told to the others).
TEST_F(MeshZero3CheckpointTest, BadCheckpointsAreRefusedOnEveryRank) {
  expect_success(train(4, plus(kGpt, {"--zero", "3", "--pp", "2", "--steps", "2", "--checkpoint-dir", path("ckpt")})));
  struct Case {
    std::string name;
    std::vector<std::string> flags;
    void (*damage)(const std::string& dir);
    std::string message;
  };
  const std::string shard = "/mesh-1/pp1-tp0/zero-1-rank1.pt";
  for (const Case& c : {
           Case{"another mesh", {"--tp", "2"}, [](const std::string&) {}, "was saved by another run layout"},
           Case{"another model", {"--pp", "2", "--width", "64"}, [](const std::string&) {},
                "was saved by another run layout"},
           Case{"missing shard", {"--pp", "2"}, [](const std::string& d) { fs::remove(d + "/mesh-1/pp1-tp0/zero-1-rank1.pt"); },
                "zero-1-rank1.pt"},
           Case{"truncated shard", {"--pp", "2"},
                [](const std::string& d) { fs::resize_file(d + "/mesh-1/pp1-tp0/zero-1-rank1.pt", 100); },
                "zero-1-rank1.pt"}}) {
    std::string dir = path("case-" + c.name.substr(0, c.name.find(' ')) + "-" + c.name.substr(c.name.find(' ') + 1));
    fs::copy(path("ckpt"), dir, fs::copy_options::recursive);
    ASSERT_TRUE(fs::exists(dir + shard)) << c.name;
    c.damage(dir);
    LaunchResult r = train(4, plus(plus(kGpt, c.flags), {"--zero", "3", "--steps", "4", "--checkpoint-dir", dir, "--resume"}), 60);
    EXPECT_FALSE(r.timed_out) << c.name;
    EXPECT_NE(r.exit_code, 0) << c.name << "\n" << r.output;
    EXPECT_EQ(r.count(c.message), 4) << c.name << "\n" << r.output;
    EXPECT_EQ(r.count("resumed from"), 0) << c.name << "\n" << r.output;
    EXPECT_EQ(r.count("epoch 1:"), 0) << c.name << "\n" << r.output;
  }
}

// --zero-pp qwz,qgz on the mesh: stage 3 on dp 2 x pp 2 and dp 2 x tp 2 (each chunk gathered in
// int8 for every call, its gradients reduce-scattered in int8; with tp the TP-replicated
// parameters' shard gradients averaged over the TP group, mesh_fully_sharded.h) and stage 1 on
// dp 3 with dropout (ZeroOptimizer's int8 reduce-scatter and allgather over the group, padded to
// 3 shards), 4 steps each against the same run without it. The loss tolerance is the compression
// docs' int8 goal for a loss (2%): every weight the forward sees and every gradient element is
// off by at most max|block| / 254; measured 0.11%, 0.08% and 0.06%. The digest must differ (the
// int8 path ran) while --check-replicas holds (every replica, and with tp every TP rank's copy of
// a replicated parameter, the same bytes: without the TP average the tp run fails it). The dp
// axis carries only ZeRO's collectives, so its bytes per step (the communicator's byte counter)
// are cut by int8's 4 / (1 + 4 / 1024) less the headers: >= 3.5x (issue 19; measured 3.98x,
// 3.98x, 3.96x).
TEST_F(MeshZero3CheckpointTest, ZeroPlusPlusOnTheMeshTrainsWithinTheInt8GoalAndCutsTheDataParallelBytes) {
  for (const auto& [zero, axis] : {std::pair<std::string, std::string>{"3", "--pp"}, {"3", "--tp"}, {"1", "--dropout"}}) {
    std::string tag = "z" + zero + axis;
    for (const char* parts : {"", "qwz,qgz"}) {
      std::vector<std::string> args =
          plus(kGpt, {axis, axis == "--dropout" ? "0.1" : "2", "--zero", zero, "--steps", "4", "--check-replicas", "--json",
                      path(tag + (*parts ? "-int8.json" : "-fp32.json"))});
      if (*parts) args.insert(args.end(), {"--zero-pp", parts});
      expect_success(train(axis == "--dropout" ? 3 : 4, args));
    }
    expect_same_curve(step_losses(tag + "-int8.json"), step_losses(tag + "-fp32.json"), 0.02,
                      "--zero " + zero + " " + axis + " --zero-pp qwz,qgz");
    EXPECT_NE(digest(tag + "-int8.json"), digest(tag + "-fp32.json")) << tag;
    double fp32 = json(tag + "-fp32.json")["epochs"].back()["axis_bytes_per_step"]["dp"].get<double>();
    double int8 = json(tag + "-int8.json")["epochs"].back()["axis_bytes_per_step"]["dp"].get<double>();
    std::printf("--zero %s %s: dp bytes per step %.0f -> %.0f (%.2fx)\n", zero.c_str(), axis.c_str(), fp32, int8,
                fp32 / int8);
    EXPECT_GE(fp32 / int8, 3.5) << tag;
  }
}

}  // namespace
}  // namespace braid::testing
