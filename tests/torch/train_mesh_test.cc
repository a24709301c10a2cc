// braid-train on a process mesh through real rank processes (braid-run): tensor parallelism
// (--tp, --sp) with pipeline and data parallelism follows one process's loss curve, moves the
// bytes braid-plan predicts on every axis, clips by the whole model's norm, resumes bit for bit,
// traces its collectives, and refuses layouts it must not run.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "train_fixture.h"

namespace braid::testing {
namespace {

// Tensor parallelism (--tp, with --sp, --pp and data parallelism) computes what one process
// computes: the same loss at every step. The TP layers split each matmul's reduction (row-
// parallel) and the softmax's sums (vocabulary-parallel cross-entropy) into tp partial sums
// added in another order, so float32 results differ by rounding: ~1e-7 relative per step here,
// growing with the steps as the trajectories drift; 2e-5 relative over 30 steps leaves two
// orders of magnitude of margin, while a wrong gradient (a missing allreduce, padding that
// trains) moves the loss by > 1e-3 within 3 steps. Also: the bytes each axis moved per step
// equal braid-plan's prediction (plan/training_traffic.h) within 1%.
class MeshTrainTest : public TrainTest {
 protected:
  // braid-plan's bytes per step on each axis for the run `name` (its mesh and micro-batches).
  void expect_planned_bytes(const std::string& name, int microbatches, int micro_batch, bool sp, int chunks = 1) const {
    nlohmann::json run = json(name);
    nlohmann::json mesh = run["mesh"];
    ToolResult plan = run_tool(
        "braid-plan", fmt::format("traffic --preset gpt-tiny --vocab 114 --context 32 --dp {} --tp {} --pp {} -m {} "
                                  "--micro-batch {} --chunks {}{} --json",
                                  mesh["dp"].get<int>(), mesh["tp"].get<int>(), mesh["pp"].get<int>(), microbatches,
                                  micro_batch, chunks, sp ? " --sp" : ""));
    ASSERT_EQ(plan.exit_code, 0) << plan.output;
    std::map<std::string, double> planned;
    nlohmann::json report = nlohmann::json::parse(plan.output);
    for (const nlohmann::json& result : report["sections"][0]["results"]) {
      planned[result["name"].get<std::string>()] = result["value"].get<double>();
    }
    nlohmann::json measured = run["epochs"].back()["axis_bytes_per_step"];
    for (const char* axis : {"dp", "tp", "pp"}) {
      ASSERT_EQ(planned.count(std::string(axis) + "_bytes_per_step"), 1u) << plan.output;
      double want = planned.at(std::string(axis) + "_bytes_per_step");
      double got = measured[axis].get<double>();
      EXPECT_NEAR(got, want, 0.01 * want + 1) << name << " axis " << axis << "\n" << plan.output;
    }
  }
};

TEST_F(MeshTrainTest, TensorParallelTrainsLikeOneProcessAndMovesThePlannedBytes) {
  std::vector<std::string> common = {"--model", "gpt", "--steps", "4", "--batch", "8", "--train-samples", "64",
                                     "--context", "32"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_success(train(1, with({"--json", path("one.json")})));
  std::vector<double> reference = step_losses("one.json");
  struct Case {
    int ranks;
    std::vector<std::string> flags;
    int microbatches;
    bool sp;
  };
  for (const Case& c : {Case{2, {"--tp", "2", "--microbatches", "1"}, 1, false},
                        Case{4, {"--tp", "4", "--microbatches", "2"}, 2, false},
                        Case{2, {"--tp", "2", "--sp", "--microbatches", "2"}, 2, true},
                        Case{4, {"--tp", "2", "--microbatches", "2"}, 2, false},                 // dp 2 x tp 2
                        Case{4, {"--tp", "2", "--pp", "2", "--microbatches", "2", "--schedule", "gpipe"}, 2, false},
                        Case{4, {"--tp", "2", "--pp", "2", "--microbatches", "2", "--schedule", "1f1b"}, 2, false},
                        Case{4, {"--tp", "2", "--pp", "2", "--microbatches", "2", "--schedule", "interleaved:2"}, 2, false},
                        Case{4, {"--tp", "2", "--pp", "2", "--microbatches", "2", "--schedule", "zb1"}, 2, false}}) {
    std::string name = fmt::format("mesh-{}-{}.json", c.ranks, fmt::join(c.flags, ""));
    std::vector<std::string> flags = c.flags;
    flags.insert(flags.end(), {"--json", path(name), "--check-replicas"});
    expect_success(train(c.ranks, with(flags)));
    expect_same_curve(step_losses(name), reference, 2e-5, name);
    int replicas = json(name)["mesh"]["dp"].get<int>();
    std::string flags_text = fmt::format("{}", fmt::join(c.flags, " "));
    expect_planned_bytes(name, c.microbatches, 8 / replicas / c.microbatches, c.sp,
                         flags_text.find("interleaved:2") != std::string::npos ? 2 : 1);
  }
}

// --clip-grad on a mesh clips by the norm of the whole model, each parameter counted once: the
// curve is one process's with the same clipping (torch's clip_grad_norm_ there), and differs
// from the unclipped one, so the threshold was reached. Counting the replicated parameters tp
// times would clip harder and leave the one-process curve.
TEST_F(MeshTrainTest, ClippingCountsEveryParameterOnce) {
  std::vector<std::string> common = {"--model", "gpt", "--steps", "4", "--batch", "8", "--train-samples", "64",
                                     "--context", "32", "--lr", "0.5"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_success(train(1, with({"--json", path("free.json")})));
  expect_success(train(1, with({"--clip-grad", "0.2", "--json", path("one.json")})));
  expect_success(train(2, with({"--clip-grad", "0.2", "--tp", "2", "--microbatches", "1", "--json", path("tp.json")})));
  expect_success(train(4, with({"--clip-grad", "0.2", "--tp", "2", "--pp", "2", "--microbatches", "2", "--json",
                                path("mesh.json")})));
  std::vector<double> free = step_losses("free.json"), clipped = step_losses("one.json");
  EXPECT_GT(std::abs(free.back() - clipped.back()), 1e-3 * free.back()) << "the norm never reached 0.2";
  expect_same_curve(step_losses("tp.json"), clipped, 2e-5, "tp 2, --clip-grad 0.2");
  expect_same_curve(step_losses("mesh.json"), clipped, 2e-5, "pp 2 x tp 2, --clip-grad 0.2");
}

// --zero 1 on the mesh (Megatron's distributed optimizer: each stage's and TP piece's optimizer
// state sharded over its data-parallel group) trains to the mesh DDP's parameters BIT FOR BIT,
// for the reasons ZeroTrainTest gives (train_zero_test.cc: on one host both the dp allreduce and
// the reduce-scatter are shm_direct, summing in rank order and dividing once; Adam is
// elementwise): dp x tp, dp x pp, a dp of 3 (padded shards), and one replica (tp 2 on 2 ranks,
// where ZeRO still synchronizes: its optimizer steps GradSync's shards). The dp axis moves what
// DDP's allreduce moves (reduce-scatter + allgather, within the padding); the optimizer state
// is 1/dp of DDP's. With --clip-grad the norm is summed over the whole job with TP-replicated
// parameters counted on TP rank 0 only: the same clipped curve as DDP within 2e-5 (the squares
// are added in another order), and not the unclipped one.
TEST_F(MeshTrainTest, ZeroOneOnTheMeshTrainsToDdpsParametersBitForBit) {
  std::vector<std::string> common = {"--model", "gpt", "--steps", "3", "--batch", "12", "--train-samples", "96",
                                     "--context", "32", "--microbatches", "2", "--optimizer", "adam"};
  struct Case {
    int ranks, replicas;
    std::vector<std::string> flags;
  };
  for (const Case& c : {Case{4, 2, {"--tp", "2"}}, Case{4, 2, {"--pp", "2"}}, Case{3, 3, {"--dropout", "0.1"}},
                        Case{2, 1, {"--tp", "2"}}}) {
    std::string tag = fmt::format("{}-{}", c.ranks, fmt::join(c.flags, ""));
    for (const char* zero : {"0", "1"}) {
      std::vector<std::string> args = common;
      args.insert(args.end(), c.flags.begin(), c.flags.end());
      args.insert(args.end(), {"--zero", zero, "--check-replicas", "--json", path(fmt::format("z{}-{}.json", zero, tag))});
      expect_success(train(c.ranks, args));
    }
    nlohmann::json ddp = json(fmt::format("z0-{}.json", tag)), zero = json(fmt::format("z1-{}.json", tag));
    EXPECT_EQ(zero["parameter_digest"], ddp["parameter_digest"]) << tag;
    EXPECT_EQ(zero["step_losses"], ddp["step_losses"]) << tag;
    EXPECT_EQ(zero["zero_stage"], 1) << tag;
    double ddp_dp = ddp["epochs"].back()["axis_bytes_per_step"]["dp"].get<double>();
    double zero_dp = zero["epochs"].back()["axis_bytes_per_step"]["dp"].get<double>();
    EXPECT_NEAR(zero_dp, ddp_dp, 0.001 * ddp_dp + 1) << tag;
    double state = ddp["model_state"]["optimizer_state"].get<double>();
    EXPECT_NEAR(zero["model_state"]["optimizer_state"].get<double>(), state / c.replicas, 8.0 * 64 * c.replicas) << tag;
  }
  std::vector<std::string> clipped = common;
  clipped.insert(clipped.end(), {"--tp", "2", "--lr", "0.5"});
  auto run = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = clipped;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--json", path(name)});
    expect_success(train(4, args));
  };
  run("free.json", {"--zero", "1"});
  run("ddp-clip.json", {"--zero", "0", "--clip-grad", "0.2"});
  run("zero-clip.json", {"--zero", "1", "--clip-grad", "0.2"});
  std::vector<double> free = step_losses("free.json"), reference = step_losses("ddp-clip.json");
  EXPECT_GT(std::abs(free.back() - reference.back()), 1e-3 * free.back()) << "the norm never reached 0.2";
  expect_same_curve(step_losses("zero-clip.json"), reference, 2e-5, "dp 2 x tp 2 --zero 1 --clip-grad 0.2");
}

// --trace shows the tensor- and sequence-parallel collectives on each rank's timeline (lane
// "collectives"): with --sp, allgathers before the column-parallel layers and reduce-scatters
// after the row-parallel ones, besides the cross-entropy's allreduces.
TEST_F(MeshTrainTest, TheTraceShowsTheSequenceParallelCollectives) {
  expect_success(train(2, {"--model", "gpt", "--steps", "2", "--batch", "4", "--train-samples", "32", "--context",
                           "32", "--tp", "2", "--sp", "--microbatches", "1", "--trace", path("trace")}));
  std::map<std::string, int> events;
  std::ifstream in(path("trace/braid-trace-rank0.json"));
  ASSERT_TRUE(in) << "no trace/braid-trace-rank0.json";
  nlohmann::json trace = nlohmann::json::parse(in);
  for (const nlohmann::json& e : trace["traceEvents"]) {
    std::string name = e.value("name", "");
    if (e.value("cat", "") == "comm") ++events[name.substr(0, name.find(' '))];
  }
  // Per micro-batch: 6 blocks x (2 forward + 2 backward) of each, the embedding's and the
  // head's pair: 26 allgathers and 26 reduce-scatters per step, 2 steps (and the epoch end's
  // gathering of the shards adds allgathers).
  EXPECT_GE(events["allgather"], 52);
  EXPECT_EQ(events["reduce_scatter"], 52);
  EXPECT_GE(events["allreduce"], 2 * 2);  // the cross-entropy's (and the SP gradients')
}

// A TP group must stay on one host: with ranks on two emulated hosts (rank r on host r % 2, so
// TP pairs (0, 1) and (2, 3) straddle them) braid-train is refused on every rank naming the
// hosts, and --allow-tp-across-hosts accepts it with a warning (and still trains correctly:
// the TP collectives then run over TCP).
TEST_F(MeshTrainTest, ATensorParallelGroupAcrossHostsIsRefusedUnlessAllowed) {
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"-c", "BRAID_HOST_ID=host$((BRAID_RANK % 2)) exec \"$0\" \"$@\"",
                                     tool_path("braid-train"), "--model", "gpt", "--steps", "2", "--batch", "8",
                                     "--train-samples", "32", "--context", "32", "--tp", "2", "--microbatches", "1",
                                     "--quiet", "--test-samples", "16"};
    args.insert(args.end(), extra.begin(), extra.end());
    return launch({.ranks = 4, .program = "/bin/sh", .args = args, .env = {{"BRAID_TIMEOUT", "60"}},
                   .timeout_seconds = 120});
  };
  LaunchResult refused = run({});
  EXPECT_FALSE(refused.timed_out);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_GE(refused.count("a TP group should stay on one host"), 1) << refused.output;
  EXPECT_EQ(refused.count("epoch 1:"), 0) << refused.output;
  LaunchResult allowed = run({"--allow-tp-across-hosts"});
  expect_success(allowed);
  EXPECT_GE(allowed.count("allow_tp_across_hosts"), 1) << allowed.output;
}

// The 8-rank mesh dp 2 x pp 2 x tp 2, and dp 2 x tp 2 and pp 2 x tp 2 on 4 ranks, train the GPT
// 30 steps along the curve of one process and of 8 data-parallel ranks with the same global
// batch (tolerance: see above).
TEST_F(MeshTrainTest, ThreeDimensionalMeshTrainsThirtyStepsLikeDataParallelism) {
  std::vector<std::string> common = {"--model", "gpt", "--steps", "30", "--batch", "8", "--train-samples", "240",
                                     "--context", "32", "--optimizer", "adam"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_success(train(1, with({"--json", path("one.json")})));
  expect_success(train(8, with({"--json", path("dp8.json")}), 400));  // data parallel only, 1 sample per rank
  std::vector<double> one = step_losses("one.json");
  expect_same_curve(step_losses("dp8.json"), one, 2e-5, "dp 8, 30 Adam steps");
  expect_success(train(8, with({"--tp", "2", "--pp", "2", "--microbatches", "2", "--json", path("mesh.json")}), 400));
  expect_same_curve(step_losses("mesh.json"), one, 2e-5, "dp2 x pp2 x tp2, 30 Adam steps");
  expect_planned_bytes("mesh.json", 2, 2, false);
  expect_success(train(4, with({"--tp", "2", "--microbatches", "1", "--json", path("dp-tp.json")})));
  expect_same_curve(step_losses("dp-tp.json"), one, 2e-5, "dp2 x tp2, 30 Adam steps");
  expect_success(train(4, with({"--tp", "2", "--pp", "2", "--microbatches", "4", "--json", path("pp-tp.json")})));
  expect_same_curve(step_losses("pp-tp.json"), one, 2e-5, "pp2 x tp2, 30 Adam steps");
}

// A mesh run stopped after 3 steps and resumed matches the uninterrupted run bit for bit: every
// shard's parameters and optimizer state, and the dropout streams (--dropout draws masks every
// step, inside and outside the TP regions).
TEST_F(MeshTrainTest, AResumedMeshRunMatchesTheUninterruptedOneBitForBit) {
  std::vector<std::string> common = {"--model", "gpt", "--batch", "8", "--train-samples", "64", "--context", "32",
                                     "--tp", "2", "--pp", "2", "--microbatches", "2", "--dropout", "0.1",
                                     "--optimizer", "adam", "--schedule", "1f1b"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_success(train(4, with({"--steps", "6", "--json", path("whole.json")})));
  expect_success(train(4, with({"--steps", "3", "--checkpoint-dir", path("ckpt")})));
  expect_success(train(4, with({"--steps", "6", "--checkpoint-dir", path("ckpt"), "--resume", "--json", path("resumed.json")})));
  EXPECT_EQ(json("resumed.json")["parameter_digest"], json("whole.json")["parameter_digest"]);
  EXPECT_TRUE(json("resumed.json")["resumed"].get<bool>());
  // Another layout than the checkpoint's is refused on every rank, naming both.
  LaunchResult r = train(4, {"--model", "gpt", "--batch", "8", "--train-samples", "64", "--context", "32", "--tp", "4",
                             "--microbatches", "2", "--dropout", "0.1", "--optimizer", "adam", "--steps", "6",
                             "--checkpoint-dir", path("ckpt"), "--resume"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_GE(r.count("was saved by another run layout or configuration"), 1) << r.output;
  EXPECT_GE(r.count("tp=2"), 1) << r.output;
}

// The same with --zero 1 (Megatron's distributed optimizer): each (stage, TP rank) shard is its
// data-parallel group's sharded ZeRO checkpoint (torch/zero_checkpoint.h), on a dp 2 x pp 2 mesh
// and a dp 2 x tp 2 one: resumed, bit for bit the uninterrupted run.
TEST_F(MeshTrainTest, AResumedZeroOneMeshRunMatchesTheUninterruptedOneBitForBit) {
  for (const char* axis : {"--pp", "--tp"}) {
    std::vector<std::string> common = {"--model", "gpt", "--batch", "8", "--train-samples", "64", "--context", "32",
                                       axis, "2", "--microbatches", "2", "--dropout", "0.1", "--optimizer", "adam",
                                       "--zero", "1"};
    std::string tag = std::string(axis).substr(2);
    expect_success(train(4, plus(common, {"--steps", "6", "--json", path(tag + "-whole.json")})));
    expect_success(train(4, plus(common, {"--steps", "3", "--checkpoint-dir", path(tag + "-ckpt")})));
    expect_success(train(4, plus(common, {"--steps", "6", "--checkpoint-dir", path(tag + "-ckpt"), "--resume",
                                          "--json", path(tag + "-resumed.json")})));
    EXPECT_EQ(json(tag + "-resumed.json")["parameter_digest"], json(tag + "-whole.json")["parameter_digest"]) << axis;
    EXPECT_TRUE(json(tag + "-resumed.json")["resumed"].get<bool>()) << axis;
  }
}

}  // namespace
}  // namespace braid::testing
