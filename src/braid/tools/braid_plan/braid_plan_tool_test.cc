// The braid-plan binary from the outside: what a user sees, --json and --explain, the
// calibration round trip through files, and the exit codes and messages for bad input.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "launch.h"
#include "temp_dir.h"
#include "usage_error.h"
#include <nlohmann/json.hpp>

namespace braid::plan::cli {
namespace {

using braid::testing::ToolResult;

ToolResult run_tool(const std::string& args) { return braid::testing::run_tool("braid-plan", args); }

nlohmann::json run_json(const std::string& args) {
  ToolResult r = run_tool(args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output, nullptr, false);
}

double result_value(const nlohmann::json& doc, const std::string& name) {
  for (const auto& section : doc["sections"]) {
    for (const auto& item : section["results"]) {
      if (item["name"] == name) return item["value"].get<double>();
    }
  }
  ADD_FAILURE() << "no result " << name << " in " << doc.dump();
  return NAN;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

using braid::testing::TempDir;

TEST(BraidPlanToolTest, HelpListsEverySubcommand) {
  ToolResult help = run_tool("--help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  for (const char* sub : {"volume", "memory", "kv", "bubble", "collective", "step", "advise", "calibrate", "traffic"}) {
    EXPECT_TRUE(contains(help.output, sub)) << sub << "\n" << help.output;
  }
  EXPECT_NE(run_tool("").exit_code, 0);  // a subcommand is required
  EXPECT_EQ(run_tool("step --help").exit_code, 0);
}

TEST(BraidPlanToolTest, VolumeReproducesTheSeedsDataParallelNumber) {
  nlohmann::json doc = run_json("volume --params 70B --dtype fp16 --dp 1024");
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_NEAR(result_value(doc, "dp_allreduce_bytes_per_rank"), 280e9, 0.3e9);  // seeds/004 2.2: ~280 GB
  ToolResult text = run_tool("volume --params 70B --dtype fp16 --dp 1024");
  EXPECT_TRUE(contains(text.output, "279.73 GB")) << text.output;
}

// --optimizer-bytes' default is Adam's: 12 bytes in mixed precision (an fp32 master copy + m + v),
// 8 with --dtype fp32, where the fp32 weights are the master (docs/zero.md, ZeroOptimizer's flat
// parameters); an explicit value wins either way.
TEST(BraidPlanToolTest, Fp32AdamHasNoMasterCopy) {
  EXPECT_DOUBLE_EQ(result_value(run_json("memory --params 1M --dp 2 --zero 1"), "optimizer_bytes"), 6e6);
  EXPECT_DOUBLE_EQ(result_value(run_json("memory --params 1M --dtype fp32 --dp 2 --zero 1"), "optimizer_bytes"), 4e6);
  EXPECT_DOUBLE_EQ(result_value(run_json("memory --params 1M --dtype fp32 --dp 2 --zero 1"), "model_state_bytes"), 12e6);
  EXPECT_DOUBLE_EQ(
      result_value(run_json("memory --params 1M --dtype fp32 --optimizer-bytes 12 --dp 2 --zero 1"), "optimizer_bytes"),
      6e6);
}

// --grad-dtype: 16-bit weights with fp32 gradient buffers (braid-train's ZeRO-1/2 under
// --precision bf16): the gradients count 4 bytes, the weights still 2.
TEST(BraidPlanToolTest, GradDtypeSetsTheGradientBytesOnly) {
  const char* args = "memory --params 1M --dtype bf16 --grad-dtype fp32 --optimizer-bytes 8 --dp 2 --zero 1";
  EXPECT_DOUBLE_EQ(result_value(run_json(args), "gradient_bytes"), 4e6);
  EXPECT_DOUBLE_EQ(result_value(run_json(args), "weight_bytes"), 2e6);
  EXPECT_DOUBLE_EQ(result_value(run_json(args), "model_state_bytes"), 10e6);
  EXPECT_DOUBLE_EQ(result_value(run_json("memory --params 1M --dtype bf16 --dp 2 --zero 1"), "gradient_bytes"), 2e6);
}

TEST(BraidPlanToolTest, ExplainSubstitutesTheNumbers) {
  ToolResult kv = run_tool("kv --model llama-70b --tokens 2048 --explain");
  ASSERT_EQ(kv.exit_code, 0) << kv.output;
  EXPECT_TRUE(contains(kv.output, "= 2 x L x n_kv_heads x d_head x bytes")) << kv.output;
  EXPECT_TRUE(contains(kv.output, "= 2 x 80 x 8 x 128 x 2 B")) << kv.output;
  EXPECT_TRUE(contains(kv.output, "671.09 MB")) << kv.output;
  // The prefill/decode transfer of the same request: whole blocks (2048 = 128 x 16: no waste).
  ToolResult split = run_tool("kv --model llama-70b --tokens 2048 --prefill-tp 2 --decode-tp 1 --explain");
  ASSERT_EQ(split.exit_code, 0) << split.output;
  EXPECT_TRUE(contains(split.output, "= 80 x 128 x 65536 B")) << split.output;
  EXPECT_TRUE(contains(split.output, "= 2 + 1 - 1")) << split.output;
  ToolResult bubble = run_tool("bubble --pp 4 -m 8 --schedule 1f1b --explain");
  EXPECT_TRUE(contains(bubble.output, "27.27%")) << bubble.output;
  EXPECT_TRUE(contains(bubble.output, "(4-1) / (8 + 4 - 1)")) << bubble.output;
}

TEST(BraidPlanToolTest, EverySubcommandRunsWithDefaultsAndJson) {
  for (const char* args : {"volume --dp 8 --tp 2 --pp 2 -m 4 --experts 8", "memory --zero 3 --dp 8", "kv", "bubble",
                           "collective", "step", "advise --top 3", "quant --params 7B", "kernel",
                           "traffic --preset gpt-small --tp 2 -m 4 --micro-batch 4 --sp"}) {
    ToolResult text = run_tool(args);
    EXPECT_EQ(text.exit_code, 0) << args << "\n" << text.output;
    nlohmann::json doc = run_json(args);
    EXPECT_FALSE(doc.is_discarded()) << args;
  }
}

TEST(BraidPlanToolTest, AdviseRanksLayouts) {
  nlohmann::json doc = run_json("advise --model llama-70b --nodes 4 --global-batch 256 --top 5");
  ASSERT_FALSE(doc.is_discarded());
  const auto& rows = doc["tables"][0]["rows"];
  ASSERT_GE(rows.size(), 1u);
  EXPECT_TRUE(rows[0]["fits"].get<bool>());
  EXPECT_LE(rows[0]["tp"].get<int>(), 8);
}

TEST(BraidPlanToolTest, StepFlagsBrokenRules) {
  ToolResult r = run_tool("step --model llama-70b --nodes 2 --tp 16 -m 4");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "tp-inside-node")) << r.output;
}

// A braid-bench --json file timed by a known ring model, each time multiplied by 1 + noise(i)
// for the i-th size (64 KiB .. 256 MiB by factors of 4): calibrate must give alpha and beta back.
double no_noise(int) { return 0; }

void write_bench_file(const std::string& path, int ranks, double alpha, double beta,
                      double (*noise)(int) = no_noise, const std::string& algorithm = "ring") {
  nlohmann::json rows = nlohmann::json::array();
  int i = 0;
  for (double bytes = 65536; bytes <= 256.0 * 1024 * 1024; bytes *= 4, ++i) {
    const double model = 2 * (ranks - 1) * alpha + 2.0 * (ranks - 1) / ranks * bytes * beta;
    const double seconds = model * (1 + noise(i));
    rows.push_back({{"size", bytes}, {"count", bytes / 4}, {"type", "f32"}, {"redop", "sum"}, {"time(us)", seconds * 1e6},
                    {"algbw(GB/s)", bytes / seconds / 1e9}, {"busbw(GB/s)", 0}, {"#wrong", 0}});
  }
  nlohmann::json doc = {{"benchmark", "allreduce"},
                        {"meta", {{"ranks", ranks}, {"algorithm", algorithm}, {"memcpy_gbs", 10}}},
                        {"rows", rows}};
  std::ofstream(path) << doc.dump();
}

TEST(BraidPlanToolTest, CalibrateRecoversAlphaBetaAndFeedsCollective) {
  TempDir dir;
  write_bench_file(dir.file("two.json"), 2, 4e-6, 1 / 5e9);
  write_bench_file(dir.file("four.json"), 4, 4e-6, 1 / 5e9);
  nlohmann::json doc = run_json("calibrate " + dir.file("two.json") + " " + dir.file("four.json") + " -o " +
                                dir.file("fit.json"));
  ASSERT_FALSE(doc.is_discarded());
  // Exact data: the fit is exact up to rounding (and the JSON's 17 significant digits).
  EXPECT_NEAR(result_value(doc, "alpha[0]"), 4e-6, 4e-6 * 1e-6);
  EXPECT_NEAR(result_value(doc, "bandwidth[0]"), 5e9, 5e9 * 1e-6);
  EXPECT_LT(result_value(doc, "max_relative_error"), 1e-6);
  EXPECT_EQ(doc["tables"][0]["rows"].size(), 14u);
  ToolResult text = run_tool("calibrate " + dir.file("two.json"));
  EXPECT_TRUE(contains(text.output, "predicted(us)")) << text.output;
  ToolResult predicted = run_tool("collective --bytes 1M --ranks 8 --calibration " + dir.file("fit.json"));
  EXPECT_EQ(predicted.exit_code, 0) << predicted.output;
  EXPECT_TRUE(contains(predicted.output, "calibrated_ring")) << predicted.output;
}

// --model: a model fitted on one run (file A, exact) predicts a later run of the same machine
// (file B: the same alpha and beta, +8% at even sizes and -4% at odd ones). Each error is then
// 1 / (1 + noise) - 1, whatever the size; the report has the fitting report's shape.
double later_run_noise(int i) { return i % 2 == 0 ? 0.08 : -0.04; }

TEST(BraidPlanToolTest, CalibrateModelPredictsAnotherRun) {
  TempDir dir;
  const double alpha = 9e-6, beta = 1 / 3e9;
  write_bench_file(dir.file("a.json"), 4, alpha, beta);
  write_bench_file(dir.file("b.json"), 4, alpha, beta, later_run_noise);
  ASSERT_EQ(run_tool("calibrate " + dir.file("a.json") + " -o " + dir.file("fit.json")).exit_code, 0);
  nlohmann::json doc = run_json("calibrate --model " + dir.file("fit.json") + " " + dir.file("b.json"));
  ASSERT_FALSE(doc.is_discarded());
  ASSERT_EQ(doc["tables"].size(), 1u);
  const auto& rows = doc["tables"][0]["rows"];
  ASSERT_EQ(rows.size(), 7u);
  double sum = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double expected = 1 / (1 + later_run_noise(i)) - 1;
    // The fit of exact data is exact up to rounding and the JSON's 17 significant digits.
    EXPECT_NEAR(rows[i]["relative_error"].get<double>(), expected, 1e-6) << rows[i].dump();
    EXPECT_EQ(rows[i]["ranks"], 4);
    sum += expected * expected;
  }
  EXPECT_NEAR(result_value(doc, "rms_relative_error"), std::sqrt(sum / 7), 1e-6);
  EXPECT_NEAR(result_value(doc, "max_relative_error"), 0.08 / 1.08, 1e-6);
  EXPECT_NEAR(result_value(doc, "alpha[0]"), alpha, alpha * 1e-6);  // the model's, not refitted on B
  EXPECT_TRUE(contains(doc["sections"][0]["heading"].get<std::string>(), "fitted as 'ring'")) << doc.dump();
  ToolResult text = run_tool("calibrate --model " + dir.file("fit.json") + " " + dir.file("b.json"));
  EXPECT_TRUE(contains(text.output, "predicted(us)")) << text.output;
  EXPECT_TRUE(contains(text.output, "-7.4")) << text.output;  // 1 / 1.08 - 1
  EXPECT_TRUE(contains(text.output, "+4.2")) << text.output;  // 1 / 0.96 - 1
}

// A --per-file model of two world sizes: each held-out run is predicted by the fit of its world
// size (here 2 ranks: alpha 5 us; 4 ranks: alpha 20 us), and a world size the model has no fit of
// its own for is refused as ambiguous.
TEST(BraidPlanToolTest, CalibrateModelMatchesTheWorldSize) {
  TempDir dir;
  write_bench_file(dir.file("fit2.json"), 2, 5e-6, 1 / 6e9);
  write_bench_file(dir.file("fit4.json"), 4, 20e-6, 1 / 2e9);
  ASSERT_EQ(run_tool("calibrate --per-file " + dir.file("fit2.json") + " " + dir.file("fit4.json") + " -o " +
                     dir.file("model.json"))
                .exit_code,
            0);
  write_bench_file(dir.file("later2.json"), 2, 5e-6, 1 / 6e9);
  write_bench_file(dir.file("later4.json"), 4, 20e-6, 1 / 2e9);
  nlohmann::json doc = run_json("calibrate --model " + dir.file("model.json") + " " + dir.file("later2.json") + " " +
                                dir.file("later4.json"));
  ASSERT_FALSE(doc.is_discarded());
  ASSERT_EQ(doc["tables"].size(), 2u);
  for (const auto& table : doc["tables"]) {
    for (const auto& row : table["rows"]) EXPECT_LT(std::fabs(row["relative_error"].get<double>()), 1e-6) << table.dump();
  }
  write_bench_file(dir.file("later8.json"), 8, 5e-6, 1 / 6e9);
  ToolResult r = run_tool("calibrate --model " + dir.file("model.json") + " " + dir.file("later8.json"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "has 2 fits for allreduce 'ring', 0 of them on 8 ranks")) << r.output;
}

// The algorithm sweep's form: one "<algorithm>(us)" column each, "-" where one did not run.
TEST(BraidPlanToolTest, CalibrateReadsTheAlgorithmSweep) {
  TempDir dir;
  nlohmann::json rows = nlohmann::json::array();
  for (double bytes = 65536; bytes <= 64.0 * 1024 * 1024; bytes *= 4) {
    const double ring = 2 * 3 * 5e-6 + 1.5 * bytes / 4e9;
    const double tree = 2 * 2 * (3e-6 + bytes / 8e9);
    rows.push_back({{"size", bytes}, {"count", bytes / 4}, {"ring(us)", ring * 1e6}, {"tree(us)", tree * 1e6},
                    {"hierarchical(us)", "-"}, {"winner", "ring"}});
  }
  std::ofstream(dir.file("sweep.json")) << nlohmann::json{{"benchmark", "allreduce algorithms"},
                                                          {"meta", {{"ranks", 4}, {"dtype", "f32"}}},
                                                          {"rows", rows}}
                                               .dump();
  nlohmann::json doc = run_json("calibrate --segments 1 " + dir.file("sweep.json"));
  ASSERT_FALSE(doc.is_discarded());
  ASSERT_EQ(doc["sections"].size(), 2u);  // ring and tree; hierarchical never ran
  for (const auto& section : doc["sections"]) {
    const std::string heading = section["heading"];
    const double alpha = section["results"][0]["value"];
    const double bandwidth = section["results"][1]["value"];
    if (heading.find("ring") != std::string::npos) {
      EXPECT_NEAR(alpha, 5e-6, 5e-12) << heading;
      EXPECT_NEAR(bandwidth, 4e9, 4e9 * 1e-6) << heading;
    } else {
      EXPECT_NEAR(alpha, 3e-6, 3e-12) << heading;
      EXPECT_NEAR(bandwidth, 8e9, 8e9 * 1e-6) << heading;
    }
  }
}

// Bad input: non-zero exit, and a message that names the field and what it accepts.
void expect_rejected(const std::string& args, const std::string& message) {
  ToolResult r = run_tool(args);
  EXPECT_NE(r.exit_code, 0) << args << "\n" << r.output;
  EXPECT_TRUE(contains(r.output, message)) << args << "\n" << r.output;
}

// A usage error, of CLI11's or of braid's, exits 2 (docs/planner.md), never CLI11's own codes.
void expect_usage_error(const std::string& args, const std::string& message) {
  braid::testing::expect_usage_error("braid-plan", args, message);
}

// The small GPT of plan/training_traffic_test.cc (V = 50 padded to 52, h = 16, L = 2, t = 8,
// b = 2, M = 4, dp 2 x tp 4 x pp 2): the same hand-computed bytes through the command line.
TEST(BraidPlanToolTest, TrafficGivesTheBytesPerStepOnEachAxis) {
  const std::string small = "traffic --vocab 50 --width 16 --layers 2 --heads 4 --context 8 --dp 2 --tp 4 --pp 2 -m 4 "
                            "--micro-batch 2";
  nlohmann::json off = run_json(small);
  ASSERT_FALSE(off.is_discarded());
  EXPECT_DOUBLE_EQ(result_value(off, "dp_bytes_per_step"), 4746);
  EXPECT_DOUBLE_EQ(result_value(off, "tp_bytes_per_step"), 31296);
  EXPECT_DOUBLE_EQ(result_value(off, "pp_bytes_per_step"), 4096);
  EXPECT_DOUBLE_EQ(result_value(off, "padded_vocab"), 52);
  nlohmann::json on = run_json(small + " --sp");
  EXPECT_DOUBLE_EQ(result_value(on, "tp_bytes_per_step"), 31296 + 1056);
  EXPECT_DOUBLE_EQ(result_value(on, "pp_bytes_per_step"), 1024);
  EXPECT_EQ(on["inputs"]["layout"]["sequence_parallel"], true);
  // The preset is braid-train's gpt-small (about 25 M parameters); a flag overrides one field.
  nlohmann::json preset = run_json("traffic --preset gpt-small --vocab 96 --tp 2 -m 4 --micro-batch 4");
  EXPECT_NEAR(result_value(preset, "total_params"), 25.4e6, 0.1e6);
  EXPECT_EQ(preset["inputs"]["model"]["width"], 512);
  EXPECT_EQ(run_json("traffic --preset gpt-small --layers 4")["inputs"]["model"]["layers"], 4);
  ToolResult text = run_tool(small + " --explain");
  EXPECT_TRUE(contains(text.output, "= 2 x (2-1)/2 x 1186.5 x 4 B")) << text.output;
}

TEST(BraidPlanToolTest, TrafficRefusesLayoutsBraidTrainCannotRun) {
  expect_usage_error("traffic --tp 3", "tp = 3 must divide heads = 4");
  expect_usage_error("traffic --width 0", "--width = 0 is out of range [1, ");
  expect_usage_error("traffic --preset gpt-huge", "unknown GPT preset 'gpt-huge' (accepted: gpt-tiny, gpt-small)");
  expect_usage_error("traffic --pp 1 --chunks 2", "chunks = 2 needs pp > 1");
  expect_usage_error("traffic --pp 5 --chunks 2", "pp x chunks = 5 x 2 virtual stages exceed the 9 layers");
}

// 0 used to mean "the preset's value" silently: --seq 0 planned llama-7b's 4096 tokens.
TEST(BraidPlanToolTest, ZeroShapeValuesAreRefusedNotReplacedByThePreset) {
  expect_usage_error("memory --seq 0", "--seq = 0 is out of range [1, ");
  expect_usage_error("volume --heads 0", "--heads = 0 is out of range [1, ");
  expect_usage_error("kv --tokens 2048 --head-dim 0", "--head-dim = 0 is out of range [1, ");
  expect_usage_error("memory --layers -3", "--layers = -3 is out of range [1, ");
  EXPECT_EQ(run_tool("memory --seq 2048").exit_code, 0);
}

TEST(BraidPlanToolTest, ZeroForADerivedDefaultIsRefusedNotReadAsTheDefault) {
  expect_usage_error("volume --experts 8 --tokens 0", "--tokens = 0 is out of range [1, ");
  expect_usage_error("volume --experts 8 --ep 0", "--ep = 0 is out of range [1, ");
  expect_usage_error("collective --ranks 16 --ranks-per-node 0", "--ranks-per-node = 0 is out of range [1, 16]");
  expect_usage_error("collective --ranks 16 --ranks-per-node 32", "--ranks-per-node = 32 is out of range [1, 16]");
  EXPECT_EQ(run_tool("volume --experts 8 --tokens 4096 --ep 4").exit_code, 0);
  EXPECT_EQ(run_tool("collective --ranks 16 --ranks-per-node 8").exit_code, 0);
}

// The MoE layer's per-layer lines, and a capacity factor bounding the kept copies.
TEST(BraidPlanToolTest, MoeCapacityFactorBoundsTheLayerBytes) {
  ToolResult dropless = run_tool("volume --experts 8 --tokens 4096 --ep 4 --hidden 1024");
  EXPECT_EQ(dropless.exit_code, 0) << dropless.output;
  EXPECT_NE(dropless.output.find("moe_layer_train_wire_bytes"), std::string::npos) << dropless.output;
  ToolResult capped = run_tool("volume --experts 8 --tokens 4096 --ep 4 --capacity-factor 0.5 --explain");
  EXPECT_EQ(capped.exit_code, 0) << capped.output;
  EXPECT_NE(capped.output.find("min(4096 x 2, 8 x 512)"), std::string::npos) << capped.output;
  expect_usage_error("volume --experts 8 --capacity-factor -1", "--capacity-factor = -1 is out of range [0, ");
}

TEST(BraidPlanToolTest, UsageErrorsExitTwoNamingWhatWasTyped) {
  expect_usage_error("volum --dp 4", "unknown subcommand 'volum' (expected one of: volume, memory,");
  expect_usage_error("", "a subcommand is required");
  expect_usage_error("volume --bogus", "--bogus");
  expect_usage_error("step --tp abc", "--tp");
  expect_usage_error("collective --bytes 17179869184G --ranks 8", "--bytes: '17179869184G' is too large");
  expect_usage_error("memory --device-memory 99999999999999999999", "is too large");
}

TEST(BraidPlanToolTest, BadInputIsExplained) {
  expect_rejected("memory --device-memory '80 gigs'", "--device-memory: cannot read '80 gigs'");
  expect_rejected("volume --params 7X", "--params: cannot read '7X'");
  expect_rejected("volume --bytes 0 --ranks 4", "--bytes: '0' must be greater than zero");
  expect_rejected("volume --bytes=-5M --ranks 4", "must be greater than zero");
  expect_rejected("step --gpus-per-node 6 --tp 3", "tp = 3 must divide heads = 32");
  expect_rejected("volume --tp 3", "tp = 3 must divide heads = 32");
  expect_rejected("memory --model llama-70b --pp 81", "pp = 81 is out of range [1, 80]");
  expect_rejected("step --model llama-7b --nodes 8 --pp 64", "pp = 64 is out of range [1, 32]");
  expect_rejected("step --model llama-8b", "--model: unknown preset 'llama-8b'");
  expect_rejected("step --zero 5", "--zero = 5 is out of range [0, 3]");
  expect_rejected("step --dp 3", "must equal the cluster's 8 devices");
  expect_rejected("collective --link carrier-pigeon", "--link: unknown link 'carrier-pigeon'");
  expect_rejected("collective --bandwidth 25GB", "--bandwidth: cannot read '25GB'");
  expect_rejected("bubble --pp 0", "pp = 0 is out of range");
  expect_rejected("kv --tp 3", "tp = 3 must divide kv-heads = 8");
  expect_rejected("kv --prefill-tp 2", "--prefill-tp and --decode-tp go together");
  expect_rejected("kv --prefill-tp 3 --decode-tp 1", "prefill-tp = 3 must divide kv-heads = 8");
  expect_rejected("kv --prefill-tp 2 --decode-tp 1 --block-size 0", "it needs --block-size > 0");
  expect_rejected("step --compression topk:2", "--compression: 'topk:2' needs a ratio R in (0, 1]");
  expect_rejected("step --tp abc", "--tp");  // CLI11's own error for a non-number
  expect_rejected("calibrate /nonexistent/bench.json", "/nonexistent/bench.json: cannot open it");
  TempDir dir;
  std::ofstream(dir.file("bad.json")) << "{\"hello\": 1}";
  expect_rejected("calibrate " + dir.file("bad.json"), "not braid-bench --json output");
}

TEST(BraidPlanToolTest, CalibrateModelBadInputIsExplained) {
  TempDir dir;
  write_bench_file(dir.file("ring.json"), 2, 5e-6, 1 / 6e9);
  write_bench_file(dir.file("tree.json"), 2, 5e-6, 1 / 6e9, no_noise, "tree");
  ASSERT_EQ(run_tool("calibrate " + dir.file("ring.json") + " -o " + dir.file("fit.json")).exit_code, 0);
  const std::string fit = " --model " + dir.file("fit.json") + " ";
  expect_rejected("calibrate --model /nonexistent/fit.json " + dir.file("ring.json"),
                  "--model: cannot open '/nonexistent/fit.json'");
  expect_rejected("calibrate" + fit + "/nonexistent/bench.json", "/nonexistent/bench.json: cannot open it");
  // A braid-bench file where the model belongs, and a model whose fit lacks its segments.
  expect_rejected("calibrate --model " + dir.file("ring.json") + " " + dir.file("ring.json"),
                  "--model: '" + dir.file("ring.json") + "' is not a braid-plan calibrate -o file (no \"fits\" array)");
  std::ofstream(dir.file("broken.json")) << R"({"fits": [{"op": "allreduce", "algorithm": "ring"}]})";
  expect_rejected("calibrate --model " + dir.file("broken.json") + " " + dir.file("ring.json"),
                  "fits[0].segments is missing or empty");
  expect_rejected("calibrate" + fit + dir.file("tree.json"),
                  "--model: '" + dir.file("fit.json") + "' has no fit for allreduce 'tree'");
  expect_rejected("calibrate" + fit + dir.file("tree.json"), "it has allreduce 'ring' on 2 ranks");
  // Fitting options do not mix with evaluating a fitted model.
  expect_rejected("calibrate" + fit + "--segments 2 " + dir.file("ring.json"), "excludes");
  expect_rejected("calibrate" + fit + "-o " + dir.file("other.json") + " " + dir.file("ring.json"), "excludes");
}

}  // namespace
}  // namespace braid::plan::cli
