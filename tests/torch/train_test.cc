// braid-train and DistributedDataParallel through real rank processes (braid-run): data
// parallelism is equivalent to one process with the whole batch, replicas stay bitwise
// identical, a resumed run matches an uninterrupted one bit for bit, and bad input fails on
// every rank with a clear message. Runs use tiny subsets and a few steps.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "braid/tools/braid_train/blas_core_choice.h"
#include "braid/tools/braid_train/models.h"

namespace braid::testing {
namespace {

class TrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("braid-train-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static LaunchResult train(int ranks, std::vector<std::string> args, double timeout = 240) {
    args.insert(args.end(), {"--quiet", "--test-samples", "200"});
    return launch({.ranks = ranks, .program = tool_path("braid-train"), .args = args,
                   .env = {{"BRAID_TIMEOUT", "60"}}, .timeout_seconds = timeout});
  }
  static void expect_success(const LaunchResult& r) {
    ASSERT_FALSE(r.timed_out) << r.output;
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  nlohmann::json json(const std::string& name) const {
    std::ifstream in(path(name));
    return nlohmann::json::parse(in);
  }

  std::filesystem::path dir_;
};

// Parameters of an exported model, flattened in registration order.
std::vector<float> exported_parameters(const std::string& model, const std::string& file) {
  std::shared_ptr<braid::train::TrainModel> m = braid::train::make_model({.name = model, .vocab = 0, .context = 0});
  auto as_module = std::static_pointer_cast<::torch::nn::Module>(m);
  ::torch::load(as_module, file);
  std::vector<float> flat;
  for (const ::torch::Tensor& p : m->parameters()) {
    ::torch::Tensor c = p.detach().contiguous();
    flat.insert(flat.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return flat;
}

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
  std::vector<double> step_losses(const std::string& name) const { return json(name)["step_losses"].get<std::vector<double>>(); }
  static void expect_same_curve(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                                const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]) / want[i]);
    EXPECT_LT(worst, rtol) << what;
    std::printf("%s: worst relative difference of the loss curve %.3g\n", what.c_str(), worst);
  }
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

// ZeRO stages 1 and 2 (--zero, torch/zero_optimizer.h) against DDP (--zero 0) from the same
// seed, on 1-4 ranks (3 pads every bucket: 24 samples, micro-batches of 12 / (world x 2)), with
// gradient accumulation and several buckets (--bucket-mb 1 on the MLP): the final parameters
// are equal BIT FOR BIT (parameter_digest, a CRC32C of every parameter; the MLP's exported
// parameters too). Why the arithmetic is the same:
//  - the gradients: on one host the tuner picks shm_direct for both DDP's allreduce and ZeRO's
//    reduce_scatter at every size (tuning_table.cc: hosts=1 rows), and both reduce every element
//    in rank order 0..n-1 (allreduce_shm_direct.cc, reduce_scatter_shm_direct.cc:
//    reduce_in_rank_order) and divide once at the end: the same sum of the same inputs, whatever
//    element a bucket's shard boundaries fall on; accumulation adds the micro-batches into the
//    same .grad tensors in both;
//  - the update: SGD (momentum) and Adam are elementwise, and ZeRO's inner optimizer runs the
//    same LibTorch kernels on a flat shard, so each element sees the same operations on the same
//    values; the allgather and the copies back move bytes.
// Should a kernel ever round an element differently by its position in a vectorised loop, this
// test is where it shows (the first differing run is named).
class ZeroTrainTest : public MeshTrainTest {
 protected:
  std::string digest(const std::string& name) const { return json(name)["parameter_digest"].get<std::string>(); }
  std::int64_t state(const std::string& name, const std::string& part) const {
    return json(name)["model_state"][part].get<std::int64_t>();
  }
  // ZeRO's model states on rank 0 against DDP's (torch/zero_optimizer.h, flat parameters): the
  // same gradients; the parameters are the flat tensors, DDP's plus the padding (at most n - 1
  // floats per bucket); the optimizer state is rank 0's share (its real elements: at most
  // ceil(E / n) of each bucket's E, at least E / n rounded down, so within n x buckets elements
  // of 1/n); no master copy.
  void expect_sharded_state(const std::string& zero, const std::string& ddp, int ranks, int state_floats) const {
    EXPECT_GE(state(zero, "parameters"), state(ddp, "parameters")) << zero;
    EXPECT_LE(state(zero, "parameters"), state(ddp, "parameters") + 4 * ranks * 64) << zero;
    EXPECT_EQ(state(zero, "gradients"), state(ddp, "gradients")) << zero;
    double share = double(state(ddp, "optimizer_state")) / ranks;
    EXPECT_NEAR(double(state(zero, "optimizer_state")), share, 4.0 * state_floats * ranks * 64) << zero;
    EXPECT_EQ(state(zero, "master"), 0) << zero;
    EXPECT_EQ(json(zero)["model_state_bytes"].get<std::int64_t>(),
              state(zero, "parameters") + state(zero, "gradients") + state(zero, "master") +
                  state(zero, "optimizer_state"));
  }
  // braid-plan memory's model states per rank (plan/memory.h) for the model of the DDP run `ddp`
  // (its parameter count), fp32 weights and gradients and `optimizer_bytes` of state per
  // parameter (no master copy: fp32 training steps the parameters themselves).
  double planned_model_state(const std::string& ddp, int ranks, int zero, int optimizer_bytes) const {
    ToolResult plan = run_tool("braid-plan", fmt::format("memory --params {} --dtype fp32 --optimizer-bytes {} --dp {} "
                                                         "--zero {} --json",
                                                         state(ddp, "parameters") / 4, optimizer_bytes, ranks, zero));
    EXPECT_EQ(plan.exit_code, 0) << plan.output;
    nlohmann::json report = nlohmann::json::parse(plan.output);
    for (const nlohmann::json& section : report["sections"]) {
      for (const nlohmann::json& result : section["results"]) {
        if (result["name"] == "model_state_bytes") return result["value"].get<double>();
      }
    }
    ADD_FAILURE() << "no model_state_bytes in\n" << plan.output;
    return 0;
  }
  // Issue 19: the model states counted from the real allocations are braid-plan's within 2%.
  // The systematic differences are the flat parameters' padding (at most n - 1 floats per
  // bucket) and rank 0's shard rounding up (ceil(E / n) of each bucket's E), both below 0.1% of
  // these models. Stage 2 is the exception, on purpose not hidden: the planner divides the
  // gradients by n (the ZeRO paper's model), braid keeps LibTorch's whole .grad tensors
  // (docs/zero.md "What stage 2 saves"), so it is checked equal to the planner's stage 1, and
  // the planner's stage 2 plus the unsharded gradients, 4 (1 - 1/n) bytes per parameter.
  void expect_planned_model_state(const std::string& name, const std::string& ddp, int ranks, int zero,
                                  int optimizer_bytes) const {
    double measured = double(json(name)["model_state_bytes"].get<std::int64_t>());
    double planned = planned_model_state(ddp, ranks, zero, optimizer_bytes);
    double params = double(state(ddp, "parameters")) / 4;
    std::printf("%s: model states %.0f bytes on rank 0, braid-plan %.0f (%+.3f%%)\n", name.c_str(), measured, planned,
                100 * (measured - planned) / planned);
    if (zero < 2) {
      EXPECT_NEAR(measured, planned, 0.02 * planned) << name;
      return;
    }
    double stage1 = planned_model_state(ddp, ranks, 1, optimizer_bytes);
    EXPECT_NEAR(measured, stage1, 0.02 * stage1) << name;
    double unsharded_gradients = 4 * params * (1 - 1.0 / ranks);
    EXPECT_NEAR(measured - unsharded_gradients, planned, 0.02 * planned) << name;
  }
};

TEST_F(ZeroTrainTest, StagesOneAndTwoTrainTheMlpToDdpsParametersBitForBit) {
  std::vector<std::string> common = {"--model", "mlp", "--steps", "3", "--batch", "24", "--train-samples", "240",
                                     "--lr", "0.1", "--accumulate", "2", "--bucket-mb", "1"};
  for (int ranks : {1, 2, 3, 4}) {
    std::map<int, std::vector<float>> exported;
    for (int zero : {0, 1, 2}) {
      std::string name = fmt::format("mlp-{}-{}", ranks, zero);
      std::vector<std::string> args = common;
      args.insert(args.end(), {"--zero", std::to_string(zero), "--json", path(name + ".json"), "--export",
                               path(name + ".pt"), "--check-replicas"});
      expect_success(train(ranks, args));
      exported[zero] = exported_parameters("mlp", path(name + ".pt"));
    }
    std::string ddp = fmt::format("mlp-{}-0.json", ranks);
    for (int zero : {1, 2}) {
      std::string name = fmt::format("mlp-{}-{}.json", ranks, zero);
      EXPECT_EQ(digest(name), digest(ddp)) << name;
      ASSERT_EQ(exported[zero].size(), exported[0].size());
      EXPECT_TRUE(exported[zero] == exported[0]) << name << ": the parameters differ from DDP's";
      EXPECT_EQ(json(name)["step_losses"], json(ddp)["step_losses"]) << name;
      expect_sharded_state(name, ddp, ranks, 1);  // SGD: one momentum float per element
      // On the wire per step: reduce-scatter + allgather, (n-1)/n of the gradient each, against
      // DDP's allreduce 2 (n-1)/n: equal but for the shards' padding (under 2% here).
      double wire = json(name)["epochs"].back()["wire_bytes"].get<double>();
      double ddp_wire = json(ddp)["epochs"].back()["wire_bytes"].get<double>();
      EXPECT_NEAR(wire, ddp_wire, 0.02 * ddp_wire) << name;
    }
    for (int zero : {0, 1, 2}) expect_planned_model_state(fmt::format("mlp-{}-{}.json", ranks, zero), ddp, ranks, zero, 4);
  }
}

// The GPT with Adam (two state floats per element), 3 steps, one bucket: bit for bit as above.
// Model states per parameter: DDP 16 bytes (parameter, gradient, two moments); ZeRO 8 + 8 / n
// (the moments sharded; the shards are the flat parameters' own memory, no master copy): below
// DDP's from 2 ranks on (12 on 2, 10.7 on 3, 10 on 4); and braid-plan's within 2%.
TEST_F(ZeroTrainTest, StagesOneAndTwoTrainTheTransformerWithAdamToDdpsParametersBitForBit) {
  std::vector<std::string> common = {"--model", "gpt", "--steps", "3", "--batch", "24", "--train-samples", "96",
                                     "--context", "16", "--optimizer", "adam", "--accumulate", "2"};
  for (int ranks : {1, 2, 3, 4}) {
    for (int zero : {0, 1, 2}) {
      std::vector<std::string> args = common;
      args.insert(args.end(), {"--zero", std::to_string(zero), "--json", path(fmt::format("gpt-{}-{}.json", ranks, zero))});
      expect_success(train(ranks, args));
    }
    std::string ddp = fmt::format("gpt-{}-0.json", ranks);
    for (int zero : {1, 2}) {
      std::string name = fmt::format("gpt-{}-{}.json", ranks, zero);
      EXPECT_EQ(digest(name), digest(ddp)) << name;
      EXPECT_EQ(json(name)["step_losses"], json(ddp)["step_losses"]) << name;
      expect_sharded_state(name, ddp, ranks, 2);
      std::printf("%s: model states %lld bytes on rank 0, DDP's %lld\n", name.c_str(),
                  static_cast<long long>(json(name)["model_state_bytes"].get<std::int64_t>()),
                  static_cast<long long>(json(ddp)["model_state_bytes"].get<std::int64_t>()));
      if (ranks >= 2) {
        EXPECT_LT(json(name)["model_state_bytes"].get<std::int64_t>(), json(ddp)["model_state_bytes"].get<std::int64_t>())
            << name;
      }
    }
    for (int zero : {0, 1, 2}) expect_planned_model_state(fmt::format("gpt-{}-{}.json", ranks, zero), ddp, ranks, zero, 8);
  }
}

// --clip-grad with --zero clips by the global norm summed over the shards (each element once):
// the curve is DDP's with the same clipping, which differed from the unclipped one. Not bit for
// bit: ZeRO sums the squares in double over shards, torch's clip_grad_norm_ in float per
// parameter, so the scale differs in the last bits (~1e-7 relative per step); 2e-5 relative
// over 4 steps, as for the mesh, while counting a shard twice or once per rank would change the
// scale by > 1e-2.
TEST_F(ZeroTrainTest, ClippingUsesTheNormOverEveryShard) {
  std::vector<std::string> common = {"--model", "gpt", "--steps", "4", "--batch", "12", "--train-samples", "96",
                                     "--context", "16", "--lr", "0.5"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_success(train(3, with({"--json", path("free.json")})));
  expect_success(train(3, with({"--clip-grad", "0.2", "--json", path("ddp.json")})));
  expect_success(train(3, with({"--clip-grad", "0.2", "--zero", "1", "--json", path("zero1.json")})));
  expect_success(train(3, with({"--clip-grad", "0.2", "--zero", "2", "--json", path("zero2.json")})));
  std::vector<double> free = step_losses("free.json"), clipped = step_losses("ddp.json");
  EXPECT_GT(std::abs(free.back() - clipped.back()), 1e-3 * free.back()) << "the norm never reached 0.2";
  expect_same_curve(step_losses("zero1.json"), clipped, 2e-5, "--zero 1 --clip-grad 0.2");
  expect_same_curve(step_losses("zero2.json"), clipped, 2e-5, "--zero 2 --clip-grad 0.2");
}

// What --zero does not do yet is refused before training, with exit 2 and the flags named.
TEST_F(ZeroTrainTest, WhatIsNotImplementedYetIsRefusedNamingTheFlags) {
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  std::vector<std::string> gpt = {"--model", "gpt", "--context", "16", "--batch", "8", "--steps", "1"};
  auto plus = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  for (const Case& c : {Case{{"--zero", "3"}, "--zero 3: stage 3 is not implemented yet"},
                        Case{plus(gpt, {"--zero", "1", "--tp", "2", "--microbatches", "1"}), "--zero 1: with --tp, --pp or --dropout"},
                        Case{plus(gpt, {"--zero", "2", "--pp", "2"}), "--zero 2: with --tp, --pp or --dropout"},
                        Case{plus(gpt, {"--zero", "1", "--dropout", "0.1"}), "--zero 1: with --tp, --pp or --dropout"},
                        Case{{"--zero", "1", "--compress", "fp16"}, "--zero 1: with --compress fp16"},
                        Case{{"--zero", "2", "--checkpoint-dir", path("ckpt")}, "--zero 2: with --checkpoint-dir or --resume"},
                        Case{{"--zero", "1", "--checkpoint-dir", path("ckpt"), "--resume"},
                             "sharded checkpoints are not implemented yet"},
                        Case{{"--zero", "4"}, "--zero 4: the stage must be 0, 1, 2 or 3"}}) {
    LaunchResult r = train(2, c.flags, 60);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2) << fmt::format("{}", fmt::join(c.flags, " ")) << "\n" << r.output;
    EXPECT_GE(r.count(c.message), 1) << r.output;
    EXPECT_EQ(r.count("epoch 1:"), 0) << r.output;
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

// The byte at `offset` XORed with `mask`, or `count` bytes from `offset` overwritten with 0xA5:
// the two damages of the issue (a flipped bit, a 4 KiB overwrite in the middle of the file).
void damage(const std::string& file, std::uintmax_t offset, std::size_t count, std::uint8_t mask) {
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(io) << file;
  std::vector<char> bytes(count);
  io.seekg(static_cast<std::streamoff>(offset));
  io.read(bytes.data(), static_cast<std::streamsize>(count));
  for (char& b : bytes) b = static_cast<char>(mask != 0 ? (b ^ mask) : 0xA5);
  io.seekp(static_cast<std::streamoff>(offset));
  io.write(bytes.data(), static_cast<std::streamsize>(count));
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

LaunchResult ddp_scenario(int ranks, const std::string& scenario) {
  return launch({.ranks = ranks, .program = test_program_path("braid-torch-rank"), .args = {scenario},
                 .env = {{"BRAID_TIMEOUT", "60"}}, .timeout_seconds = 120});
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

// ZeroOptimizer used directly (tests/torch/programs/ddp_scenarios.cc "zero-vs-ddp"), with a
// parameter forward never touches (allow_unused: its gradient counts as zero), buckets of a
// few hundred bytes (so they split and pad) or one per parameter (on 3 ranks a 4-float bias
// leaves one rank an empty shard), on 1-4 ranks: SGD with momentum, Adam and AdamW
// (weight decay moves the unused parameter too) under stages 1 and 2 end bit for bit where DDP
// with the same torch optimizer ends (same reasoning as ZeroTrainTest); with clipping within
// 1e-6 (the norm is summed in another order: a few ulps of the scale, over 3 steps of
// parameters ~0.3). Every run also checks the flat layout (ddp_scenarios.cc flat_faults): the
// parameters and the inner shards are views of the flat tensors, and the padding is exactly 0.0.
TEST(ZeroOptimizerTest, MatchesDdpWithUnusedParametersEveryOptimizerAndStage) {
  for (int ranks : {1, 2, 3, 4}) {
    LaunchResult r = ddp_scenario(ranks, "zero-vs-ddp");
    EXPECT_FALSE(r.timed_out);
    ASSERT_EQ(r.count("PASS zero-vs-ddp"), ranks) << r.output;
    std::vector<std::string> lines = r.lines_with("ZERO ");
    ASSERT_EQ(lines.size(), std::size_t(ranks) * 24) << r.output;
    for (const std::string& line : lines) {
      EXPECT_NE(line.find(" flat-faults 0 "), std::string::npos) << line;
      double difference = std::stod(line.substr(line.find("difference ") + 11));
      if (line.find("clip 0 ") != std::string::npos) {
        EXPECT_EQ(difference, 0.0) << line;
      } else {
        EXPECT_LT(difference, 1e-6) << line;
      }
    }
  }
  LaunchResult wrong = ddp_scenario(2, "zero-without-stage");
  EXPECT_EQ(wrong.count("ERROR InvalidArgument"), 2) << wrong.output;
  EXPECT_EQ(wrong.count("ZeroOptimizer steps the gradient shards of stage 1 or 2"), 2) << wrong.output;
}

TEST(DistributedDataParallelTest, AReplacedGradientIsRefused) {
  LaunchResult r = ddp_scenario(2, "replaced-grad");
  EXPECT_EQ(r.count("the gradient of 'fc1.weight' was replaced"), 2) << r.output;
}

}  // namespace
}  // namespace braid::testing
