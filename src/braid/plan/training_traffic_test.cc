// training_traffic against numbers worked out by hand for a small GPT, and the properties the
// per-axis formulas must have whatever the numbers.
#include "braid/plan/training_traffic.h"

#include <string>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::plan {
namespace {

// V = 50 (padded to 52 for tp = 4), h = 16, L = 2, 4 heads, t = 8; b = 2, M = 4.
//   P_s = 2 x 52 x 16 + 52 + 2 x (12 x 256 + 7 x 16) = 1716 + 6368 = 8084
//   P_r = 8 x 16 + 6 x 16 x 2 + 2 x 16 = 352
//   S = b t h 4 = 1024 B; an allreduce over 4 ranks moves 2 x 3/4 x 1024 = 1536 B per rank.
constexpr GptShape kSmall{.vocab = 50, .width = 16, .layers = 2, .heads = 4, .context = 8};

TrainingLayout small_layout(bool sp) {
  return {.dp = 2, .tp = 4, .pp = 2, .chunks = 1, .microbatches = 4, .micro_batch = 2, .sequence_parallel = sp};
}

TEST(TrainingTrafficTest, ParameterCountsByHand) {
  const TrainingTraffic t = training_traffic(kSmall, small_layout(false));
  EXPECT_DOUBLE_EQ(t.padded_vocab, 52);
  EXPECT_DOUBLE_EQ(t.sharded_params, 8084);
  EXPECT_DOUBLE_EQ(t.replicated_params, 352);
  EXPECT_DOUBLE_EQ(t.total_params, 8436);
  EXPECT_DOUBLE_EQ(t.params_per_rank, (8084 + 4 * 352) / 8.0);  // 1186.5
  // tp = 1: no padding, every parameter on one rank of each stage.
  const TrainingTraffic one = training_traffic(kSmall, {.dp = 1, .tp = 1, .pp = 1, .microbatches = 4, .micro_batch = 2});
  EXPECT_DOUBLE_EQ(one.padded_vocab, 50);
  EXPECT_DOUBLE_EQ(one.params_per_rank, one.total_params);
  EXPECT_DOUBLE_EQ(one.total_params, 2 * 50 * 16 + 50 + 2 * (12 * 256 + 7 * 16) + 352);
}

TEST(TrainingTrafficTest, DataParallelByHand) {
  // 2 (2-1)/2 x 4 B x 1186.5 = 4746 B, with or without SP.
  EXPECT_DOUBLE_EQ(training_traffic(kSmall, small_layout(false)).dp_bytes, 4746);
  EXPECT_DOUBLE_EQ(training_traffic(kSmall, small_layout(true)).dp_bytes, 4746);
  TrainingLayout dp4 = small_layout(false);
  dp4.dp = 4;  // 2 x 3/4 x 4 x 1186.5
  EXPECT_DOUBLE_EQ(training_traffic(kSmall, dp4).dp_bytes, 7119);
}

TEST(TrainingTrafficTest, TensorParallelByHand) {
  // Per micro-batch: embedding 1 + 2 blocks x 4 + head 1 = 10 allreduces of S: 15360 B; the
  // cross-entropy's allreduces of 64 B and 128 B: 96 + 192 = 288 B. x M = 4 / pp = 2: 31296 B.
  const TrainingTraffic off = training_traffic(kSmall, small_layout(false));
  EXPECT_DOUBLE_EQ(find_estimate(off.tp_terms, "tp_embedding_bytes_per_microbatch").value, 1536);
  EXPECT_DOUBLE_EQ(find_estimate(off.tp_terms, "tp_block_bytes_per_microbatch").value, 4 * 1536);
  EXPECT_DOUBLE_EQ(find_estimate(off.tp_terms, "tp_head_bytes_per_microbatch").value, 1536);
  EXPECT_DOUBLE_EQ(find_estimate(off.tp_terms, "tp_cross_entropy_bytes_per_microbatch").value, 288);
  EXPECT_DOUBLE_EQ(find_estimate(off.tp_terms, "tp_bytes_per_microbatch").value, 15648);
  EXPECT_DOUBLE_EQ(off.tp_bytes, 31296);
  // SP: the same per micro-batch, plus once per step an allreduce of 4 x 352 = 1408 B over 4
  // ranks (2112 B) on the stages that hold them: 2112 / 2 = 1056 B mean per rank.
  const TrainingTraffic on = training_traffic(kSmall, small_layout(true));
  EXPECT_DOUBLE_EQ(find_estimate(on.tp_terms, "tp_replicated_grad_bytes_per_step").value, 1056);
  EXPECT_DOUBLE_EQ(on.tp_bytes, 31296 + 1056);
  // pp = 1: the whole model on every rank of the TP group.
  TrainingLayout flat = small_layout(false);
  flat.pp = 1;
  EXPECT_DOUBLE_EQ(training_traffic(kSmall, flat).tp_bytes, 4 * 15648);
}

TEST(TrainingTrafficTest, PipelineByHand) {
  // One boundary: 2 x 1 x 4 x 1024 / 2 = 4096 B; with SP the boundary is 1024 / 4.
  EXPECT_DOUBLE_EQ(training_traffic(kSmall, small_layout(false)).pp_bytes, 4096);
  EXPECT_DOUBLE_EQ(training_traffic(kSmall, small_layout(true)).pp_bytes, 1024);
  TrainingLayout interleaved = small_layout(false);
  interleaved.chunks = 2;  // 3 boundaries between 4 virtual stages: 2 x 3 x 4 x 1024 / 2
  EXPECT_DOUBLE_EQ(training_traffic(kSmall, interleaved).pp_bytes, 12288);
}

TEST(TrainingTrafficTest, AnAxisOfOneMovesNothing) {
  const TrainingTraffic t =
      training_traffic(kSmall, {.dp = 1, .tp = 1, .pp = 1, .microbatches = 4, .micro_batch = 2, .sequence_parallel = true});
  EXPECT_EQ(t.dp_bytes, 0);
  EXPECT_EQ(t.tp_bytes, 0);
  EXPECT_EQ(t.pp_bytes, 0);
  EXPECT_EQ(training_traffic(kSmall, {.dp = 3, .tp = 1, .pp = 2, .microbatches = 4, .micro_batch = 2}).tp_bytes, 0);
  EXPECT_EQ(training_traffic(kSmall, {.dp = 1, .tp = 2, .pp = 2, .microbatches = 4, .micro_batch = 2}).dp_bytes, 0);
  EXPECT_EQ(training_traffic(kSmall, {.dp = 2, .tp = 2, .pp = 1, .microbatches = 4, .micro_batch = 2}).pp_bytes, 0);
}

TEST(TrainingTrafficTest, SequenceParallelConservesTheTensorParallelTotal) {
  for (int tp : {1, 2, 4}) {
    for (int pp : {1, 2, 5}) {
      TrainingLayout l{.dp = 2, .tp = tp, .pp = pp, .microbatches = 3, .micro_batch = 2};
      const TrainingTraffic off = training_traffic(kSmall, l);
      l.sequence_parallel = true;
      const TrainingTraffic on = training_traffic(kSmall, l);
      const double once = find_estimate(on.tp_terms, "tp_replicated_grad_bytes_per_step").value;
      EXPECT_DOUBLE_EQ(on.tp_bytes - once, off.tp_bytes) << "tp " << tp << " pp " << pp;
      EXPECT_DOUBLE_EQ(once, 2.0 * (tp - 1) / tp * 4 * 352 / pp);
      EXPECT_DOUBLE_EQ(on.pp_bytes * tp, off.pp_bytes);
      EXPECT_DOUBLE_EQ(on.dp_bytes, off.dp_bytes);
    }
  }
}

TEST(TrainingTrafficTest, ScalesWithMicrobatchesAndGrowsWithTheGroup) {
  TrainingLayout l = small_layout(false);
  const TrainingTraffic base = training_traffic(kSmall, l);
  l.microbatches = 8;
  const TrainingTraffic twice = training_traffic(kSmall, l);
  EXPECT_DOUBLE_EQ(twice.tp_bytes, 2 * base.tp_bytes);
  EXPECT_DOUBLE_EQ(twice.pp_bytes, 2 * base.pp_bytes);
  EXPECT_DOUBLE_EQ(twice.dp_bytes, base.dp_bytes);  // once per step
}

TEST(TrainingTrafficTest, PresetsAreBraidTrainsModels) {
  const GptShape small = gpt_preset("gpt-small", 96);
  EXPECT_EQ(small.width, 512);
  EXPECT_EQ(small.layers, 8);
  EXPECT_EQ(small.heads, 8);
  EXPECT_EQ(small.context, 128);
  const TrainingTraffic t = training_traffic(small, {});
  EXPECT_NEAR(t.total_params, 25.3e6, 0.2e6);  // "about 25 M parameters"
  const TrainingTraffic tiny = training_traffic(gpt_preset("gpt-tiny", 96), {});
  EXPECT_NEAR(tiny.total_params, 1.22e6, 0.02e6);  // gpt_model.cc: "about 1.2 M parameters"
  EXPECT_THROW(gpt_preset("gpt-huge", 96), InvalidArgument);
}

void expect_refused(const GptShape& m, const TrainingLayout& l, const std::string& field) {
  try {
    training_traffic(m, l);
    ADD_FAILURE() << "accepted a layout that names " << field;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(TrainingTrafficTest, BadInputNamesTheField) {
  const TrainingLayout ok = small_layout(false);
  expect_refused({.vocab = 0, .width = 16, .layers = 2, .heads = 4, .context = 8}, ok, "vocab");
  expect_refused({.vocab = 50, .width = 16, .layers = 0, .heads = 4, .context = 8}, ok, "layers");
  expect_refused({.vocab = 50, .width = 16, .layers = 2, .heads = 4, .context = 0}, ok, "context");
  expect_refused({.vocab = 50, .width = 18, .layers = 2, .heads = 4, .context = 8}, ok, "heads = 4 must divide width");
  expect_refused({.vocab = 50, .width = 18, .layers = 2, .heads = 6, .context = 8}, ok, "tp = 4 must divide heads");
  TrainingLayout l = ok;
  l.dp = 0;
  expect_refused(kSmall, l, "dp");
  l = ok;
  l.microbatches = 0;
  expect_refused(kSmall, l, "microbatches");
  l = ok;
  l.micro_batch = 0;
  expect_refused(kSmall, l, "micro-batch");
  l = ok;
  l.pp = 3;
  l.chunks = 2;  // 6 virtual stages > 5 layers
  expect_refused(kSmall, l, "pp x chunks");
  l = ok;
  l.pp = 1;
  l.chunks = 2;
  expect_refused(kSmall, l, "chunks");
  l = ok;
  l.pp = 6;
  expect_refused(kSmall, l, "pp");
}

}  // namespace
}  // namespace braid::plan
