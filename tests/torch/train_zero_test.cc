// ZeRO stages 1 and 2 (braid-train --zero, torch::ZeroOptimizer) through real rank processes
// (braid-run): the same parameters as DDP bit for bit, the model states braid-plan predicts,
// the bytes DDP moves, clipping over the shards, and what is not built yet refused.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "train_fixture.h"

namespace braid::testing {
namespace {

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
class ZeroTrainTest : public TrainTest {
 protected:
  // ZeRO's model states on rank 0 against DDP's (torch/zero_optimizer.h, flat parameters): the
  // parameters are the flat tensors, DDP's plus the padding (at most n - 1 floats per bucket);
  // the gradients are DDP's whole .grad tensors at stage 1 and rank 0's averaged shards at stage
  // 2 (the DDP releases the full ones: 1/n, plus at most one float of padding per bucket); the
  // optimizer state is rank 0's share (its real elements: at most ceil(E / n) of each bucket's
  // E, at least E / n rounded down, so within n x buckets elements of 1/n); no master copy.
  void expect_sharded_state(const std::string& zero, const std::string& ddp, int ranks, int state_floats) const {
    EXPECT_GE(state(zero, "parameters"), state(ddp, "parameters")) << zero;
    EXPECT_LE(state(zero, "parameters"), state(ddp, "parameters") + 4 * ranks * 64) << zero;
    if (json(zero)["zero_stage"] == 2) {
      double share = double(state(ddp, "gradients")) / ranks;
      EXPECT_GE(double(state(zero, "gradients")), share - 4.0) << zero;
      EXPECT_LE(double(state(zero, "gradients")), share + 4.0 * 64) << zero;
    } else {
      EXPECT_EQ(state(zero, "gradients"), state(ddp, "gradients")) << zero;
    }
    double share = double(state(ddp, "optimizer_state")) / ranks;
    EXPECT_NEAR(double(state(zero, "optimizer_state")), share, 4.0 * state_floats * ranks * 64) << zero;
    EXPECT_EQ(state(zero, "master"), 0) << zero;
    EXPECT_EQ(json(zero)["model_state_bytes"].get<std::int64_t>(),
              state(zero, "parameters") + state(zero, "gradients") + state(zero, "master") +
                  state(zero, "optimizer_state"));
  }
  // Issue 19: the model states counted from the real allocations are braid-plan's within 2%,
  // at every stage (stage 2: the gradients 1/n, since the DDP releases the full ones). The
  // systematic differences are the flat parameters' padding (at most n - 1 floats per bucket)
  // and rank 0's shards rounding up (ceil(E / n) of each bucket's E), both below 0.1% of these
  // models.
  void expect_planned_model_state(const std::string& name, const std::string& ddp, int ranks, int zero,
                                  int optimizer_bytes) const {
    double measured = double(json(name)["model_state_bytes"].get<std::int64_t>());
    double planned = planned_model_state(ddp, ranks, zero, optimizer_bytes);
    std::printf("%s: model states %.0f bytes on rank 0, braid-plan %.0f (%+.3f%%)\n", name.c_str(), measured, planned,
                100 * (measured - planned) / planned);
    EXPECT_NEAR(measured, planned, 0.02 * planned) << name;
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
  // Stage 2's full gradient never exists at once: without accumulation (under no_sync the
  // micro-batches accumulate into whole .grad tensors, as FSDP's no_sync does) each bucket's
  // .grad tensors are released as the bucket is sent during backward, so the most gradient
  // bytes alive at once stay below the model's gradient (the MLP's 1 MiB buckets: at most its
  // 4 MiB matrix, which is a bucket of its own, 56% of 7.45 MB); after the step none is left
  // but rank 0's shards. Stages 0 and 1 keep whole .grad tensors (peak_gradients 0: not tracked).
  std::vector<std::string> once = common;
  once[std::find(once.begin(), once.end(), "--accumulate") - once.begin() + 1] = "1";
  once.insert(once.end(), {"--zero", "2", "--json", path("released.json")});
  expect_success(train(2, once));
  std::int64_t peak = state("released.json", "peak_gradients"), whole = state("mlp-2-0.json", "gradients");
  std::printf("--zero 2 without accumulation: at most %lld gradient bytes alive, of %lld\n", static_cast<long long>(peak),
              static_cast<long long>(whole));
  EXPECT_GT(peak, 0);
  EXPECT_LT(peak, whole);
  EXPECT_EQ(state("mlp-2-2.json", "peak_gradients"), whole) << "with --accumulate 2 every .grad exists after the first micro-batch";
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
  // Stage 3 on the mesh, its checkpoints and ZeRO++ over pp and dropout meshes are built
  // (train_mesh_zero3_test.cc, train_mesh_zero3_checkpoint_test.cc); hpz on the mesh and ZeRO++
  // with --tp are refused (train_config.cc says why).
  for (const Case& c : {Case{plus(gpt, {"--zero", "3", "--dropout", "0.1", "--zero-pp", "hpz"}),
                             "--zero 3: with --tp, --pp or --dropout (the mesh trainer) and --zero-pp hpz: hpz is refused "
                             "on the mesh"},
                        Case{plus(gpt, {"--zero", "1", "--tp", "2", "--zero-pp", "qgz"}),
                             "--zero 1: with --tp 2 and --zero-pp qgz: ZeRO++ on the mesh's stage 1 works over --pp and --dropout"},
                        Case{plus(gpt, {"--zero", "2", "--pp", "2"}), "--zero 2: with --tp, --pp or --dropout"},
                        Case{{"--zero", "1", "--compress", "fp16"}, "--zero 1: with --compress fp16"},
                        Case{{"--zero", "4"}, "--zero 4: the stage must be 0, 1, 2 or 3"}}) {
    LaunchResult r = train(2, c.flags, 60);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2) << fmt::format("{}", fmt::join(c.flags, " ")) << "\n" << r.output;
    EXPECT_GE(r.count(c.message), 1) << r.output;
    EXPECT_EQ(r.count("epoch 1:"), 0) << r.output;
  }
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

}  // namespace
}  // namespace braid::testing
