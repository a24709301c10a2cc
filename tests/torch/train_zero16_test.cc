// braid-train --precision bf16 --zero 1|2|3 with ZeRO's parameters stored in 16 bits
// (--param-storage compute, the default: ZeroOptions::parameter_dtype and
// FullyShardedOptions::parameter_dtype bf16) against the fp32 storage of the same values
// (--param-storage fp32), through real rank processes (braid-run): the arithmetic, the model
// states braid-plan predicts, and the checkpoints, which save the fp32 master either way.
//
// What differs arithmetically. Both storages compute with the same bf16 weights: fp32 storage
// allgathers the master shards in bf16 and holds the decoded (bf16-valued) floats, and autocast
// rounds its Linear weights and biases to bf16 for each matmul, to nearest even, as the
// 16-bit storage's own rounding of the master does; the initial weights, exact floats in fp32
// storage until the first gather, are rounded by autocast the same way. A Linear's weight
// gradient is computed in bf16 either way, and lands in an fp32 .grad exactly (autocast's cast
// backward, or AccumulateGrad adding a bf16 gradient into DDP's fp32 buffer); the reduce-scatter
// and the master step are the same code. So a model of Linears (the MLP) trains bit for bit
// alike. What autocast leaves in fp32 does differ: with bf16 storage an Embedding returns bf16
// rows, so the GPT's residual stream and its LayerNorms run on bf16 inputs (8 significant bits,
// ~0.4% per value) where fp32 storage feeds them fp32 sums of bf16-valued rows.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "train_fixture.h"

namespace braid::testing {
namespace {

class Zero16Test : public TrainTest {
 protected:
  const std::vector<std::string> mlp_ = {"--model", "mlp", "--batch", "48", "--train-samples", "480", "--lr", "0.05",
                                         "--bucket-mb", "1", "--check-replicas", "--precision", "bf16"};

  // braid-plan memory's model states per rank for run `name` (its parameters, world and stage)
  // under the precision flags `dtypes` (--dtype bf16, and --grad-dtype fp32 where braid's
  // ZeRO-1/2 accumulate and reduce-scatter into fp32 gradients) and `optimizer_bytes` per
  // parameter (the fp32 master's 4 + the optimizer's state).
  double planned(const std::string& name, const std::string& dtypes, int optimizer_bytes) const {
    nlohmann::json run = json(name);
    return plan_memory(fmt::format("--params {} {} --optimizer-bytes {} --dp {} --zero {}",
                                   run["parameters"].get<std::int64_t>(), dtypes, optimizer_bytes,
                                   run["world"].get<int>(), run["zero_stage"].get<int>()));
  }
  // Within 2% of braid-plan (bytes are deterministic: the padding and alignment are the gap).
  void expect_planned(const std::string& name, const std::string& dtypes, int optimizer_bytes) const {
    double measured = static_cast<double>(json(name)["model_state_bytes"].get<std::int64_t>());
    double plan = planned(name, dtypes, optimizer_bytes);
    std::printf("%s: model states %.0f bytes on rank 0, braid-plan memory %s %.0f (%+.3f%%)\n", name.c_str(), measured,
                dtypes.c_str(), plan, 100 * (measured - plan) / plan);
    EXPECT_NEAR(measured, plan, 0.02 * plan) << name;
  }
};

// The MLP on 3 ranks (odd: the shards are padded), six runs sharing their references.
//  - Stage 1, 16-bit against fp32 storage: every step's loss bit for bit (file comment); the
//    full parameters in exactly half the bytes (bf16 flat tensors, padding included) beside the
//    same fp32 master shard and fp32 gradients; the parameter allgather 2 bytes per element
//    (half of what fp32 would send); braid-plan's model states (--dtype bf16 --grad-dtype fp32,
//    K = 4 master + 4 momentum) within 2%.
//  - Checkpoints save the fp32 master whatever the storage: a 16-bit stage-2 run saved at step 2
//    resumes under 16-bit storage to the uninterrupted run's digest (stage 2's arithmetic is
//    stage 1's: ZeroTrainTest), and the same checkpoint loads into stage 3 with fp32 storage,
//    whose steps 3 and 4 have the uninterrupted run's losses bit for bit.
//  - Stage 3 with bf16 units: the same losses bit for bit; each gathered unit in half the bytes
//    (the peak gathered, against the fp32-storage stage-3 run), nothing gathered after a step; at
//    rest the rank holds its fp32 shard (weight and master at once: no separate 16-bit shard),
//    its fp32 gradient shard and the momentum, which braid-plan's bf16 ZeRO-3 counts as 2 + 2 +
//    K = 4 + 4 bytes per parameter over 3: within 2%.
TEST_F(Zero16Test, MlpTrainsBitForBitLikeFp32StorageAtEveryStageAndCheckpointsTheMaster) {
  std::vector<std::string> stage1 = plus(mlp_, {"--steps", "4", "--zero", "1"});
  expect_success(train(3, plus(stage1, {"--json", path("bf16.json")})));
  expect_success(train(3, plus(stage1, {"--param-storage", "fp32", "--json", path("fp32.json")})));
  std::vector<double> whole = step_losses("bf16.json");
  EXPECT_EQ(whole, step_losses("fp32.json"));
  EXPECT_EQ(json("bf16.json")["parameter_dtype"], "bf16");
  EXPECT_EQ(json("fp32.json")["parameter_dtype"], "fp32");
  EXPECT_EQ(2 * state("bf16.json", "parameters"), state("fp32.json", "parameters"));
  EXPECT_EQ(state("bf16.json", "master"), state("fp32.json", "master"));
  EXPECT_EQ(state("bf16.json", "gradients"), state("fp32.json", "gradients"));
  nlohmann::json wire = json("bf16.json")["epochs"].back()["zero_wire"];
  EXPECT_EQ(2 * wire["parameters"].get<std::int64_t>(), wire["fp32_each"].get<std::int64_t>());
  expect_planned("bf16.json", "--dtype bf16 --grad-dtype fp32", 8);

  std::vector<std::string> saved = plus(mlp_, {"--checkpoint-dir", path("ckpt"), "--checkpoint-every", "2"});
  expect_success(train(3, plus(saved, {"--zero", "2", "--steps", "2"})));
  // A copy for the second resume: each resumed run saves again at step 4.
  std::filesystem::copy(path("ckpt"), path("ckpt-copy"), std::filesystem::copy_options::recursive);
  expect_success(train(3, plus(saved, {"--zero", "2", "--steps", "4", "--resume", "--json", path("resumed.json")})));
  EXPECT_TRUE(json("resumed.json")["resumed"].get<bool>());
  EXPECT_EQ(digest("resumed.json"), digest("bf16.json"));
  expect_success(train(3, plus(mlp_, {"--checkpoint-dir", path("ckpt-copy"), "--checkpoint-every", "2", "--zero", "3",
                                      "--param-storage", "fp32", "--steps", "4", "--resume", "--json",
                                      path("fp32-3.json")})));
  std::vector<double> resumed = step_losses("fp32-3.json");
  ASSERT_EQ(resumed.size(), 2u);
  EXPECT_EQ(resumed[0], whole[2]);
  EXPECT_EQ(resumed[1], whole[3]);

  expect_success(train(3, plus(mlp_, {"--steps", "4", "--zero", "3", "--json", path("bf16-3.json")})));
  EXPECT_EQ(step_losses("bf16-3.json"), whole);
  nlohmann::json gathers = json("bf16-3.json")["gathers"];
  EXPECT_EQ(2 * gathers["peak_gathered_bytes"].get<std::int64_t>(),
            json("fp32-3.json")["gathers"]["peak_gathered_bytes"].get<std::int64_t>());
  EXPECT_EQ(gathers["storage_bytes_after_step"].get<std::int64_t>(), 0);
  EXPECT_EQ(json("bf16-3.json")["model_state_bytes"], json("fp32-3.json")["model_state_bytes"]);
  expect_planned("bf16-3.json", "--dtype bf16", 8);
}

// The GPT with Adam on 2 ranks, stage 2: 16-bit storage trains like fp32 storage within 0.5%
// of the loss per step (the Embedding's bf16 rows, file comment: measured 3.1e-4; a wrong weight
// or a lost gradient moves the loss by > 5%), and its model states are braid-plan's within 2%
// (K = 4 master + 8 Adam moments). fp32 storage holds twice the parameter bytes.
TEST_F(Zero16Test, TheTransformerTrainsLikeFp32StorageWithBraidPlansModelStates) {
  std::vector<std::string> common = {"--model", "gpt", "--steps", "3", "--batch", "8", "--train-samples", "96",
                                     "--context", "16", "--optimizer", "adam", "--lr", "0.003", "--zero", "2",
                                     "--precision", "bf16", "--check-replicas"};
  expect_success(train(2, plus(common, {"--json", path("bf16.json")})));
  expect_success(train(2, plus(common, {"--param-storage", "fp32", "--json", path("fp32.json")})));
  expect_same_curve(step_losses("bf16.json"), step_losses("fp32.json"), 5e-3, "gpt bf16 vs fp32 storage");
  EXPECT_EQ(2 * state("bf16.json", "parameters"), state("fp32.json", "parameters"));
  expect_planned("bf16.json", "--dtype bf16 --grad-dtype fp32", 12);
}

}  // namespace
}  // namespace braid::testing
