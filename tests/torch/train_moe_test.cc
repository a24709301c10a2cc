// braid-train --model moe-gpt through real rank processes: --ep 2 on 2 and 4 ranks trains
// (the loss decreases), unpipelined and with --moe-chunks 2, and ends with the parameters of the --ep 1 run (every expert on every
// rank) of the same seed and data; the run report carries the MoE figures; what the MoE trainer
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
      {{"--model", "moe-gpt", "--ep", "2", "--tp", "2"}, "--tp with --model moe-gpt: the MoE trainer is data-parallel"},
      {{"--model", "moe-gpt", "--ep", "2", "--pp", "2"}, "--pp with --model moe-gpt: the MoE trainer is data-parallel"},
      {{"--model", "moe-gpt", "--ep", "2", "--experts", "3"}, "--experts 3: must be at least 1 and divisible by --ep 2"},
      {{"--model", "moe-gpt", "--ep", "3"}, "--ep 3: must be at least 1 and divide the world size 2"},
      {{"--model", "moe-gpt", "--capacity-factor", "0"}, "--capacity-factor 0: must be a finite number > 0, or `dropless`"},
      {{"--model", "moe-gpt", "--top-k", "3"}, "--top-k 3: 1 or 2"},
      {{"--model", "gpt", "--ep", "2"}, "need --model moe-gpt"},
  };
  for (const Case& c : cases) {
    LaunchResult r = train(2, c.args, 120);
    EXPECT_FALSE(r.timed_out);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_GE(r.count(c.message), 1) << c.message << "\n" << r.output;
    EXPECT_EQ(r.count("epoch 1:"), 0) << r.output;
  }
}

}  // namespace
}  // namespace braid::testing
