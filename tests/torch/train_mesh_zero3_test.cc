// braid-train --zero 3 on the mesh (--tp, --pp, --dropout; tools/braid_train/mesh_fully_sharded.h)
// through real rank processes (braid-run): each (pipeline stage, TP piece)'s parameters sharded
// over its data-parallel group, every pipeline chunk gathered for each micro-batch's forward and
// backward, the step's accumulated gradients reduce-scattered once.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "train_fixture.h"

namespace braid::testing {
namespace {

class MeshZero3Test : public TrainTest {
 protected:
  // The small GPT (3 Adam steps, 2 micro-batches) with `flags`, its report at path(report).
  void train_gpt(int ranks, const std::string& report, const std::vector<std::string>& flags) const {
    std::vector<std::string> args = {"--model", "gpt", "--steps", "3", "--batch", "12", "--train-samples", "96",
                                     "--context", "32", "--microbatches", "2", "--optimizer", "adam"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--json", path(report)});
    expect_success(train(ranks, args));
  }
};

// Stage 3 on the mesh against the mesh's DDP (--zero 0) on the same layout, bit for bit: the
// forward and backward see the same fp32 parameters (an allgather moves bytes), autograd adds
// the micro-batches into .grad in the same order as under DDP, and on one host both DDP's
// allreduce and stage 3's reduce-scatter are shm_direct, which adds each element over the ranks
// in rank order 0..n-1 and divides once (docs/zero.md "Why bitwise"), whichever bucket or shard
// the element falls in; Adam then runs the same elementwise kernels on the same values. So the
// digest and every step's loss are equal, also at dp 3 (three addends, where the order would
// show). Per rank the model states are 1/dp of DDP's plus the shard padding; the counters show
// one chunk gathered at a time (never the cap), one allgather per chunk per call (forward and
// backward; zb1: backward_input and backward_weight apart) and one reduce-scatter per chunk and
// step, nothing left gathered after a step, and the wire bytes mesh_fully_sharded.h's formula.
TEST_F(MeshZero3Test, TrainsToTheMeshDdpsParametersBitForBitOnEveryLayout) {
  struct Case {
    int ranks, replicas;
    std::vector<std::string> flags;
    int chunks, calls;  // units per stage; gathers per micro-batch and chunk
  };
  for (const Case& c : {Case{4, 2, {"--tp", "2"}, 1, 2}, Case{4, 2, {"--pp", "2", "--schedule", "1f1b"}, 1, 2},
                        Case{4, 2, {"--pp", "2", "--schedule", "gpipe"}, 1, 2},
                        Case{4, 2, {"--pp", "2", "--schedule", "zb1"}, 1, 3},
                        Case{2, 1, {"--pp", "2", "--schedule", "interleaved:2"}, 2, 2},
                        Case{3, 3, {"--dropout", "0.1"}, 1, 2}, Case{2, 1, {"--tp", "2"}, 1, 2}}) {
    std::string tag = fmt::format("{}-{}", c.ranks, fmt::join(c.flags, ""));
    for (const char* zero : {"0", "3"}) {
      std::vector<std::string> flags = c.flags;
      flags.insert(flags.end(), {"--zero", zero, "--check-replicas"});
      train_gpt(c.ranks, fmt::format("z{}-{}.json", zero, tag), flags);
    }
    nlohmann::json ddp = json(fmt::format("z0-{}.json", tag)), zero = json(fmt::format("z3-{}.json", tag));
    EXPECT_EQ(zero["parameter_digest"], ddp["parameter_digest"]) << tag;
    EXPECT_EQ(zero["step_losses"], ddp["step_losses"]) << tag;
    EXPECT_EQ(zero["zero_stage"], 3) << tag;
    // Padding: each chunk's flat buffer is aligned to 64 bytes per rank's shard.
    for (const char* part : {"parameters", "gradients", "optimizer_state"}) {
      double full = ddp["model_state"][part].get<double>();
      EXPECT_NEAR(zero["model_state"][part].get<double>(), full / c.replicas, 2.0 * 64 * c.chunks) << tag << " " << part;
    }
    const nlohmann::json& gathers = zero["gathers"];
    EXPECT_EQ(gathers["units"], c.chunks) << tag;
    EXPECT_EQ(gathers["max_gathered"], 1) << tag;
    EXPECT_LE(gathers["max_gathered"].get<int>(), gathers["max_gathered_units"].get<int>()) << tag;
    EXPECT_EQ(gathers["allgathers"], 3 * 2 * c.chunks * c.calls) << tag;  // steps x micro-batches x chunks x calls
    EXPECT_EQ(gathers["reduce_scatters"], 3 * c.chunks) << tag;
    EXPECT_EQ(gathers["storage_bytes_after_step"], 0) << tag;
    // The wire: per step each chunk's shard to the n - 1 peers in every allgather and the one
    // reduce-scatter, (n - 1) x shard bytes x (calls x M + 1) summed over the chunks.
    std::int64_t wire = 0;
    for (const nlohmann::json& epoch : zero["epochs"]) wire += epoch["wire_bytes"].get<std::int64_t>();
    EXPECT_EQ(wire, 3 * (c.replicas - 1) * zero["model_state"]["parameters"].get<std::int64_t>() * (c.calls * 2 + 1))
        << tag;
  }
}

// --clip-grad on stage 3 on the mesh: the squares of every rank's shards summed over the whole
// job, TP-replicated parameters (LayerNorms, biases of row-parallel layers) counted on TP rank 0
// only, as the mesh's DDP counts them: the same clipped curve within 2e-5 (the squares are
// added in another order, in double; the clipping factor then differs in the last bits), and
// not the unclipped curve (the norm did exceed the limit).
TEST_F(MeshZero3Test, ClipsByTheWholeJobsNorm) {
  train_gpt(4, "free.json", {"--tp", "2", "--lr", "0.5", "--zero", "3"});
  train_gpt(4, "ddp-clip.json", {"--tp", "2", "--lr", "0.5", "--zero", "0", "--clip-grad", "0.2"});
  train_gpt(4, "zero-clip.json", {"--tp", "2", "--lr", "0.5", "--zero", "3", "--clip-grad", "0.2"});
  std::vector<double> free = step_losses("free.json"), reference = step_losses("ddp-clip.json");
  EXPECT_GT(std::abs(free.back() - reference.back()), 1e-3 * free.back()) << "the norm never reached 0.2";
  expect_same_curve(step_losses("zero-clip.json"), reference, 2e-5, "dp 2 x tp 2 --zero 3 --clip-grad 0.2");
}

// --precision on stage 3 on the mesh (dp 2 x tp 2): the chunks are gathered and their gradients
// reduce-scattered in 16 bits (from the exact fp32 shards, as the data-parallel trainer's stage
// 3 does), where the mesh's DDP keeps fp32 parameters and moves only the gradients in 16 bits.
// So the parameters the forward sees are rounded once more: bf16 keeps 8 significant bits
// (2^-8 relative per element); the loss, an average over many elements, moved by at most 1e-4
// relative in these 3 steps, so 5e-4, while the curve itself falls by ~10% a step (a step that
// went wrong shows). fp16 keeps 11 bits (compute stays fp32: LibTorch's CPU fp16 matmul is
// missing): observed 3e-6, bounded by 5e-5. fp16 with --inject-overflow 2: step 2 is skipped
// under both (the overflow agreed over the whole job, or the stages would diverge and the
// digest check on every rank would fail) and the loss scale is the same.
TEST_F(MeshZero3Test, MixedPrecisionFollowsTheMeshDdpWithinTheWireRounding) {
  struct Case {
    std::vector<std::string> flags;
    double rtol;
  };
  for (const Case& c : {Case{{"--precision", "bf16"}, 5e-4}, Case{{"--precision", "fp16", "--inject-overflow", "2"}, 5e-5}}) {
    std::string tag = fmt::format("{}", fmt::join(c.flags, ""));
    for (const char* zero : {"0", "3"}) {
      std::vector<std::string> flags = c.flags;
      flags.insert(flags.end(), {"--tp", "2", "--zero", zero});
      train_gpt(4, fmt::format("z{}-{}.json", zero, tag), flags);
    }
    nlohmann::json ddp = json(fmt::format("z0-{}.json", tag)), zero = json(fmt::format("z3-{}.json", tag));
    expect_same_curve(step_losses(fmt::format("z3-{}.json", tag)), step_losses(fmt::format("z0-{}.json", tag)), c.rtol,
                      "dp 2 x tp 2 --zero 3 " + tag);
    EXPECT_EQ(zero["skipped_steps"], ddp["skipped_steps"]) << tag;
    EXPECT_EQ(zero["loss_scale"], ddp["loss_scale"]) << tag;
  }
  EXPECT_EQ(json("z3---precisionfp16--inject-overflow2.json")["skipped_steps"], nlohmann::json::array({2}));
}

// A pipeline piece without parameters (the MLP cut into 4: its Flatten alone) cannot be a unit:
// every rank refuses (each knows the whole partition) naming the piece, rather than one stage
// failing while the others wait on it.
TEST_F(MeshZero3Test, APieceWithoutParametersIsRefusedOnEveryRank) {
  LaunchResult r = train(4, {"--model", "mlp", "--pp", "4", "--steps", "1", "--batch", "8", "--train-samples", "64",
                             "--microbatches", "2", "--zero", "3"}, 60);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_GE(r.count("pipeline piece 0 (layers [0, 1) of stage 0, chunk 0) holds no parameter"), 1) << r.output;
  EXPECT_EQ(r.count("epoch 1:"), 0) << r.output;
}

}  // namespace
}  // namespace braid::testing
