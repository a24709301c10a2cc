// braid-train --zero 3 on the mesh with units inside the pipeline chunks (--zero-unit-layers,
// tools/braid_train/mesh_fully_sharded.h) through real rank processes (braid-run): each
// transformer block of a chunk gathered just before its forward and again before its backward,
// for every micro-batch, the next block prefetched inside the chunk under --max-gathered-units.
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

class MeshZero3UnitsTest : public TrainTest {
 protected:
  // The small GPT (`steps` Adam steps, 2 micro-batches) at --zero 3 with `flags`, its report.
  nlohmann::json train_gpt(int ranks, const std::string& report, const std::vector<std::string>& flags,
                           const std::string& steps = "3") const {
    std::vector<std::string> args = {"--model", "gpt", "--steps", steps, "--batch", "12", "--train-samples", "96",
                                     "--context", "32", "--microbatches", "2", "--optimizer", "adam", "--zero", "3",
                                     "--check-replicas"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--json", path(report)});
    expect_success(train(ranks, args));
    return json(report);
  }
};

// Block units against chunk units on dp 2 x pp 2 (1f1b) and dp 2 x tp 2, bit for bit: the
// forward and backward see the same fp32 parameters (an allgather moves bytes, whichever unit
// holds them), autograd adds the micro-batches into .grad as before, and the shm_direct
// reduce-scatter adds each element over the ranks in rank order whichever flat buffer holds it;
// chunk units are the mesh DDP's bit for bit (MeshZero3Test), so block units are too. What
// changes is the memory: rank 0's stage holds the embeddings and several blocks, gathered
// all at once as a chunk, but at most two blocks (cap 2: the prefetch ran, max_gathered reaches the cap)
// or one (cap 1) as units, so the peak gathered bytes fall strictly in that order, cap 1 to at
// most half the chunk's. Every unit is gathered once per micro-batch in the forward and once in
// its backward (the hooks), reduce-scattered once per step; nothing stays gathered; the wire is
// the chunk formula's with the units' shards: (n - 1) x shard bytes x (2 M + 1) per step.
TEST_F(MeshZero3UnitsTest, BlockUnitsTrainLikeChunkUnitsBitForBitWithLowerPeakGatheredBytes) {
  for (const std::vector<std::string>& layout :
       {std::vector<std::string>{"--pp", "2", "--schedule", "1f1b"}, std::vector<std::string>{"--tp", "2"}}) {
    std::string tag = fmt::format("{}", fmt::join(layout, ""));
    nlohmann::json chunk = train_gpt(4, "chunk-" + tag + ".json", layout);
    std::vector<std::int64_t> peaks;
    for (const char* cap : {"2", "1"}) {
      if (layout[0] == "--tp" && std::string(cap) == "1") continue;  // one layout shows the cap's effect
      std::vector<std::string> flags = layout;
      flags.insert(flags.end(), {"--zero-unit-layers", "1", "--max-gathered-units", cap});
      std::string what = tag + " cap " + cap;
      nlohmann::json block = train_gpt(4, fmt::format("block{}-{}.json", cap, tag), flags);
      EXPECT_EQ(block["parameter_digest"], chunk["parameter_digest"]) << what;
      EXPECT_EQ(block["step_losses"], chunk["step_losses"]) << what;
      const nlohmann::json& g = block["gathers"];
      int units = g["units"].get<int>();
      EXPECT_GT(units, 1) << what;
      EXPECT_EQ(g["max_gathered"], std::stoi(cap)) << what;  // never above the cap, and the prefetch filled it
      EXPECT_EQ(g["allgathers"], 3 * 2 * units * 2) << what;  // steps x micro-batches x units x (forward, backward)
      EXPECT_EQ(g["reduce_scatters"], 3 * units) << what;
      EXPECT_EQ(g["storage_bytes_after_step"], 0) << what;
      std::int64_t wire = 0;
      for (const nlohmann::json& epoch : block["epochs"]) wire += epoch["wire_bytes"].get<std::int64_t>();
      EXPECT_EQ(wire, 3 * 1 * block["model_state"]["parameters"].get<std::int64_t>() * (2 * 2 + 1)) << what;
      peaks.push_back(g["peak_gathered_bytes"].get<std::int64_t>());
    }
    std::int64_t chunk_peak = chunk["gathers"]["peak_gathered_bytes"].get<std::int64_t>();
    EXPECT_LT(peaks[0], chunk_peak) << tag;
    if (peaks.size() == 2) {
      EXPECT_LT(peaks[1], peaks[0]) << tag;
      EXPECT_LE(2 * peaks[1], chunk_peak) << tag;
    }
  }
}

// --precision bf16 --zero 3 on the mesh with the gathered units stored in bf16 (--param-storage
// compute, the default) against fp32 storage of the same values (--param-storage fp32: the
// allgather moves the same bf16, the units hold it widened), dp 2 x tp 2 with block units. The
// matmuls see the same bf16 values either way (autocast rounds fp32 weights to them); what differs
// is the embeddings' output, bf16 rows from bf16 weights where fp32 storage returns fp32 rows, so
// the residual stream starts rounded: the data-parallel trainer's GPT measured 3.1e-4 relative per
// step for that, so 5e-3, while a wrong weight or a lost gradient moves the loss by > 5%. The peak
// gathered bytes are exactly half, the at-rest model states (fp32 master shards, fp32 gradient
// shards, Adam's moments) equal, and every rank holds the same model (--check-replicas, hashed
// over fp32 values: a stage's own layers are bf16, the other stages hold an fp32 copy).
TEST_F(MeshZero3UnitsTest, SixteenBitStorageTrainsLikeFp32StorageWithHalfThePeakGatheredBytes) {
  std::vector<std::string> flags = {"--tp", "2", "--precision", "bf16", "--zero-unit-layers", "1"};
  nlohmann::json bf16 = train_gpt(4, "bf16.json", flags);
  flags.insert(flags.end(), {"--param-storage", "fp32"});
  nlohmann::json fp32 = train_gpt(4, "fp32.json", flags);
  EXPECT_EQ(bf16["parameter_dtype"], "bf16");
  EXPECT_EQ(fp32["parameter_dtype"], "fp32");
  expect_same_curve(step_losses("bf16.json"), step_losses("fp32.json"), 5e-3, "dp 2 x tp 2 bf16 vs fp32 storage");
  EXPECT_EQ(2 * bf16["gathers"]["peak_gathered_bytes"].get<std::int64_t>(),
            fp32["gathers"]["peak_gathered_bytes"].get<std::int64_t>());
  EXPECT_EQ(bf16["gathers"]["storage_bytes_after_step"], 0);
  EXPECT_EQ(bf16["model_state"], fp32["model_state"]);
}

// A 16-bit dp 2 x pp 2 run checkpointed at step 2 and resumed to 4 is the uninterrupted run bit
// for bit: the checkpoint holds the exact fp32 master shards (not the bf16 units), and every
// gather rounds them the same way again.
TEST_F(MeshZero3UnitsTest, ASixteenBitRunResumesBitForBit) {
  std::vector<std::string> flags = {"--pp", "2", "--precision", "bf16", "--zero-unit-layers", "1"};
  nlohmann::json whole = train_gpt(4, "whole.json", flags, "4");
  std::vector<std::string> saving = flags;
  saving.insert(saving.end(), {"--checkpoint-dir", path("ckpt")});
  train_gpt(4, "first.json", saving, "2");
  saving.push_back("--resume");
  nlohmann::json resumed = train_gpt(4, "resumed.json", saving, "4");
  EXPECT_EQ(resumed["resumed"], true);
  EXPECT_EQ(resumed["parameter_digest"], whole["parameter_digest"]);
  std::vector<double> all = step_losses("whole.json"), tail = step_losses("resumed.json");
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0], all[2]);
  EXPECT_EQ(tail[1], all[3]);
}

}  // namespace
}  // namespace braid::testing
