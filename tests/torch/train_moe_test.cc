// braid-train --model moe-gpt through real rank processes: --ep 2 on 2 and 4 ranks trains
// (the loss decreases), unpipelined and with --moe-chunks 2, and ends with the parameters of the --ep 1 run (every expert on every
// rank) of the same seed and data; so do --tp 2 --ep 2 on 4 ranks and --pp 2 (with --tp 2 on 8); the run report carries the MoE figures; what the MoE trainer
// does not combine with is refused on every rank with the reason.
#include <torch/torch.h>

#include "train_fixture.h"

namespace braid::testing {
namespace {

class TrainMoeTest : public TrainTest {
 protected:
  // A small moe-gpt (blocks 1 and 3 MoE, 4 experts, top-2, tokens dropped at capacity factor 0.5).
  std::vector<std::string> args(int ep, const std::string& name) const {
    return {"--model", "moe-gpt", "--steps", "6", "--batch", "8", "--train-samples", "128", "--context", "16",
            "--width", "32", "--layers", "4", "--heads", "2", "--experts", "4", "--top-k", "2",
            "--capacity-factor", "0.5", "--optimizer", "sgd", "--lr", "0.1", "--aux-loss-coef", "0.01", "--z-loss-coef", "0.001",
            "--ep", std::to_string(ep), "--json", path(name + ".json"), "--export", path(name + ".pt")};
  }
  torch::Tensor exported(const std::string& name) const {
    torch::Tensor whole;
    torch::load(whole, path(name + ".pt"));
    return whole;
  }
  // args(ep, name) for 3 steps, with the extra flags.
  std::vector<std::string> three_steps(int ep, const std::string& name, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> a = args(ep, name);
    a[std::find(a.begin(), a.end(), "--steps") - a.begin() + 1] = "3";
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  // Run `name` (3 steps) on `ranks` ranks of the mesh `layout`; it must train and end like the
  // run `reference`: loss curve, whole model, drops per step (tolerances: see below).
  void expect_trains_like(int ranks, const std::vector<std::string>& run_args, const std::string& name,
                          const std::string& layout, const std::string& reference) const;
};

// Tolerance: float32. The --ep 2 run routes the same tokens to the same experts (the gate sees
// the same rows; moe_layer_test shows outputs equal bit for bit and gradients within ~1e-7
// relative), but the experts' weight gradients sum their rows in another order and the dense
// ones are averaged by another reduction tree, so the parameters drift apart by rounding
// through 6 SGD steps (plain SGD with momentum carries a gradient's rounding into the
// parameters linearly: lr x ~1e-7 per step; Adam would divide by sqrt(v) and amplify the
// rounding of near-zero gradients up to lr x noise / eps, so it is not used here).
// 1e-5 x max|p| absolute is far above that and far below what a wrong expert, a missing 1/ep
// or an unaveraged gradient does (lr x O(gradient) ~ 1e-3 after one step).
void expect_same_parameters(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.numel(), want.numel()) << what;
  double scale = want.abs().max().item<double>();
  double diff = (got - want).abs().max().item<double>();
  std::printf("%s: max |difference| of the parameters %.3g (max |p| %.3g)\n", what.c_str(), diff, scale);
  EXPECT_LE(diff, 1e-5 * scale) << what;
}

void TrainMoeTest::expect_trains_like(int ranks, const std::vector<std::string>& run_args, const std::string& name,
                                      const std::string& layout, const std::string& reference) const {
  LaunchResult run = train(ranks, run_args);
  expect_success(run);
  EXPECT_EQ(run.count(layout), 1) << run.output;
  std::vector<double> losses = step_losses(name + ".json");
  ASSERT_EQ(losses.size(), 3U);
  EXPECT_LT(losses.back(), losses.front()) << run.output;
  std::string what = name + " vs " + reference;
  expect_same_curve(losses, step_losses(reference + ".json"), 1e-4, what);
  expect_same_parameters(exported(name), exported(reference), what);
  EXPECT_EQ(json(name + ".json")["moe"]["dropped_tokens_per_step"], json(reference + ".json")["moe"]["dropped_tokens_per_step"]);
}

TEST_F(TrainMoeTest, ExpertParallelTrainsLikeEp1On2And4Ranks) {
  for (int ranks : {2, 4}) {
    std::string r = std::to_string(ranks);
    expect_success(train(ranks, args(1, "ep1-" + r)));
    LaunchResult run = train(ranks, args(2, "ep2-" + r));
    expect_success(run);
    std::vector<double> losses = step_losses("ep2-" + r + ".json");
    ASSERT_EQ(losses.size(), 6U);
    EXPECT_LT(losses.back(), losses.front()) << run.output;
    expect_same_curve(losses, step_losses("ep1-" + r + ".json"), 1e-4, r + " ranks: ep 2 vs ep 1");
    expect_same_parameters(exported("ep2-" + r), exported("ep1-" + r), r + " ranks: ep 2 vs ep 1");
    nlohmann::json moe = json("ep2-" + r + ".json")["moe"];
    EXPECT_EQ(moe["ep"], 2);
    EXPECT_EQ(moe["dropped_tokens_per_step"].size(), 6U);
    EXPECT_EQ(moe["alltoall_seconds_per_step"].size(), 6U);
    ASSERT_EQ(moe["expert_load"].size(), 2U);  // blocks 1 and 3
    // Every choice of every token of every step lands in the histogram: batch x context x top-k x steps.
    std::int64_t routed = 0;
    for (std::int64_t n : moe["expert_load"][0].get<std::vector<std::int64_t>>()) routed += n;
    EXPECT_EQ(routed, 8 * 16 * 2 * 6);
    EXPECT_EQ(moe["dropped_tokens_per_step"], json("ep1-" + r + ".json")["moe"]["dropped_tokens_per_step"]);
    std::int64_t dropped = 0;
    for (std::int64_t n : moe["dropped_tokens_per_step"].get<std::vector<std::int64_t>>()) dropped += n;
    EXPECT_GT(dropped, 0) << "capacity factor 0.5 must drop tokens";
    EXPECT_EQ(run.count("MoE: ep 2, 4 experts, top-2"), 1) << run.output;
  }
  // The pipelined exchange (forward and backward chunked) trains the same model.
  std::vector<std::string> pipelined = args(2, "ep2-chunks2");
  pipelined.insert(pipelined.end(), {"--moe-chunks", "2"});
  expect_success(train(2, pipelined));
  expect_same_curve(step_losses("ep2-chunks2.json"), step_losses("ep1-2.json"), 1e-4, "2 ranks: ep 2 chunks 2 vs ep 1");
  expect_same_parameters(exported("ep2-chunks2"), exported("ep1-2"), "2 ranks: ep 2 chunks 2 vs ep 1");
}

// --tp 2 --ep 2 on 4 ranks (mesh edp 1 x ep 2 x tp 2: 2 data-parallel replicas; the dense layers
// TP-split, each tp rank's MoE layers over the EP group of its tp index) trains the model of
// --ep 1 --tp 1 on 2 ranks. The reference is the 2-replica run, not one process: the expert
// capacity and the load-balancing loss are per replica's batch (nonlinear in it), so only a run
// with the same replicas' batches has the same routing and loss. Tolerance as above: TP splits
// the dense matmuls' sums and adds the allreduces' order (rounding ~1e-7 relative, carried
// linearly by SGD); a gradient averaged over tp as well, or a tp rank routing other tokens,
// would be off by O(gradient). Routing is compared exactly (drops per step): the gate's inputs
// differ only by that rounding, far from flipping a choice in these few steps.
TEST_F(TrainMoeTest, TensorParallelWithExpertParallelTrainsLikeEp1) {
  expect_success(train(2, three_steps(1, "tp1-ep1")));
  expect_trains_like(4, three_steps(2, "tp2-ep2", {"--tp", "2"}), "tp2-ep2", "edp=1 x ep=2 x pp=1 x tp=2", "tp1-ep1");
  nlohmann::json moe = json("tp2-ep2.json")["moe"];
  // Counted once per replica, not once per tp rank: batch x context x top-k x steps.
  std::int64_t routed = 0;
  for (std::int64_t n : moe["expert_load"][0].get<std::vector<std::int64_t>>()) routed += n;
  EXPECT_EQ(routed, 8 * 16 * 2 * 3);
}

// --pp 2: the blocks cut into two stages, each stage's MoE layers over the EP group of that stage
// (mesh edp x ep x pp x tp), their auxiliary losses carried in each chunk's backward
// (torch/attached_loss.h). Three proofs, 3 SGD steps each, tolerances as above (the stages
// compute the same operations; only the reduction trees differ):
//  - one micro-batch, --ep 2 on 4 ranks (2 replicas) against the one-stage --ep 1 run on 2 ranks:
//    the same model, losses, drops and expert loads; a stage whose auxiliary losses were not
//    differentiated leaves its routers far off (measured with the attached gradient removed: 1.4e-3, 35x the tolerance);
//  - the same with tp 2 inside each stage, on 8 ranks;
//  - two micro-batches in flight (1F1B), --ep 2 against --ep 1 on the same pipeline: the EP
//    groups' exchanges interleave with the pipeline's sends and stay in step.
TEST_F(TrainMoeTest, PipelineWithExpertParallelTrainsLikeOneStage) {
  expect_success(train(2, three_steps(1, "pp1-ep1")));
  nlohmann::json one_stage = json("pp1-ep1.json")["moe"];
  expect_trains_like(4, three_steps(2, "pp2-ep2", {"--pp", "2", "--microbatches", "1"}), "pp2-ep2",
                     "edp=1 x ep=2 x pp=2 x tp=1", "pp1-ep1");
  EXPECT_EQ(json("pp2-ep2.json")["moe"]["expert_load"], one_stage["expert_load"]);  // each choice once: not the shape pass
  // Every axis at once: 8 ranks, edp 1 x ep 2 x pp 2 x tp 2 (the stages' dense layers TP-split).
  expect_trains_like(8, three_steps(2, "pp2-tp2-ep2", {"--pp", "2", "--tp", "2", "--microbatches", "1"}), "pp2-tp2-ep2",
                     "edp=1 x ep=2 x pp=2 x tp=2", "pp1-ep1");
  EXPECT_EQ(json("pp2-tp2-ep2.json")["moe"]["expert_load"], one_stage["expert_load"]);

  std::vector<std::string> in_flight = {"--pp", "2", "--microbatches", "2", "--schedule", "1f1b"};
  expect_success(train(4, three_steps(1, "pp2-m2-ep1", in_flight)));
  expect_trains_like(4, three_steps(2, "pp2-m2-ep2", in_flight), "pp2-m2-ep2", "edp=1 x ep=2 x pp=2 x tp=1", "pp2-m2-ep1");
}

TEST_F(TrainMoeTest, DroplessDropsNothing) {
  std::vector<std::string> a = args(2, "dropless");
  a[std::find(a.begin(), a.end(), "0.5") - a.begin()] = "dropless";
  a[std::find(a.begin(), a.end(), "--steps") - a.begin() + 1] = "2";
  expect_success(train(2, a));
  for (std::int64_t n : json("dropless.json")["moe"]["dropped_tokens_per_step"].get<std::vector<std::int64_t>>()) {
    EXPECT_EQ(n, 0);
  }
}

TEST_F(TrainMoeTest, WhatTheMoeTrainerDoesNotCombineWithIsRefused) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      // 2 ranks at tp 2 leave one data-parallel rank: no room for an EP group of 2.
      {{"--model", "moe-gpt", "--ep", "2", "--tp", "2"},
       "--ep 2: must be at least 1 and divide the data-parallel size world / (tp x pp) = 2 / (2 x 1)"},
      {{"--model", "moe-gpt", "--pp", "2", "--schedule", "zb1"},
       "--schedule zb1 with --model moe-gpt: a zero-bubble schedule splits each backward into two passes"},
      {{"--model", "moe-gpt", "--tp", "2", "--sp"}, "--sp with --model moe-gpt: a MoE layer routes the whole sequence"},
      {{"--model", "moe-gpt", "--tp", "2", "--heads", "3", "--width", "48"}, "--tp 2: the attention of every block has 3 heads"},
      {{"--model", "moe-gpt", "--ep", "2", "--experts", "3"}, "--experts 3: must be at least 1 and divisible by --ep 2"},
      {{"--model", "moe-gpt", "--ep", "3"},
       "--ep 3: must be at least 1 and divide the data-parallel size world / (tp x pp) = 2 / (1 x 1)"},
      {{"--model", "moe-gpt", "--capacity-factor", "0"}, "--capacity-factor 0: must be a finite number > 0, or `dropless`"},
      {{"--model", "moe-gpt", "--top-k", "3"}, "--top-k 3: 1 or 2"},
      {{"--model", "gpt", "--ep", "2"}, "need --model moe-gpt"},
  };
  for (const Case& c : cases) {
    LaunchResult r = train(2, c.args, 120);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2) << r.output;  // the command line's fault, before the first step
    EXPECT_GE(r.count(c.message), 1) << c.message << "\n" << r.output;
    EXPECT_EQ(r.count("epoch 1:"), 0) << r.output;
  }
}

}  // namespace
}  // namespace braid::testing
