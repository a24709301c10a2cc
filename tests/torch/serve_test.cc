// braid-serve through real rank processes (braid-run): KV-cached greedy generation, with TP 1
// (seeded) and TP 2 (from a braid-train --export), against the reference without any cache (the single-process GPT over the whole sequence
// for every token); the cache's block accounting; the allreduces the decoder issues and the
// algorithm the tuner gave them; bad input. A tiny GPT (width 32, 4 heads, 2 layers) keeps each
// run about a second of CPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "temp_dir.h"

namespace braid::testing {
namespace {

constexpr std::int64_t kWidth = 32, kLayers = 2, kNewTokens = 16;
// 11 characters: neither block size below divides it, so prefill ends inside a block.
const std::string kPrompt = "The cat sat";

std::vector<std::string> tiny_gpt(std::vector<std::string> more) {
  std::vector<std::string> args{"--width", "32", "--heads", "4", "--layers", "2", "--context", "48",
                                "--max-new-tokens", std::to_string(kNewTokens)};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

LaunchResult serve(int ranks, std::vector<std::string> args) {
  return launch({.ranks = ranks, .program = tool_path("braid-serve"), .args = tiny_gpt(std::move(args)),
                 .env = {{"BRAID_TIMEOUT", "60"}}, .timeout_seconds = 120});
}

nlohmann::json serve_json(int ranks, const TempDir& dir, const std::string& name, std::vector<std::string> args) {
  std::string json = dir.file(name);
  args.insert(args.end(), {"--prompt", kPrompt, "--json", json});
  LaunchResult r = serve(ranks, args);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(json);
  return nlohmann::json::parse(in);
}

std::int64_t blocks_for(std::int64_t tokens, std::int64_t block_tokens) { return (tokens + block_tokens - 1) / block_tokens; }

// The cache holds the prompt and every generated token but the last, in whole blocks:
// KvBlockLayout::blocks_for of that length.
void expect_block_accounting(const nlohmann::json& run, std::int64_t block_tokens, std::int64_t local_heads) {
  std::int64_t cached = static_cast<std::int64_t>(kPrompt.size()) + kNewTokens - 1;
  EXPECT_EQ(run["cache"]["cached_tokens"].get<std::int64_t>(), cached);
  EXPECT_EQ(run["cache"]["blocks_used"].get<std::int64_t>(), blocks_for(cached, block_tokens));
  EXPECT_EQ(run["cache"]["local_heads"].get<std::int64_t>(), local_heads);
}

// Exact token equality: the cached path computes the same logits as the reference up to float
// rounding (a different summation order in attention), far below the gap between the top two
// logits of these greedy choices; an argmax flipped by rounding would fail this test, and a cache
// that returned wrong keys or values (a wrong slot, block or head range) changes the logits by
// orders of magnitude more. The reference is checked to vary, so a constant output cannot pass
// by accident.
// braid-train --export of the tiny GPT after a few Adam steps (the same shape and corpus).
std::string trained_export(const TempDir& dir) {
  std::string path = dir.file("model.pt");
  LaunchResult r = launch({.ranks = 1, .program = tool_path("braid-train"),
                           .args = {"--model", "gpt", "--width", "32", "--heads", "4", "--layers", "2", "--context", "48",
                                    "--steps", "4", "--batch", "8", "--train-samples", "64", "--test-samples", "16",
                                    "--optimizer", "adam", "--quiet", "--export", path},
                           .env = {{"BRAID_TIMEOUT", "60"}}, .timeout_seconds = 120});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return path;
}

std::vector<std::int64_t> tokens_of(const nlohmann::json& run) { return run["tokens"].get<std::vector<std::int64_t>>(); }

// TP 1 from --seed, TP 2 from a trained --checkpoint, each against the reference of the same
// parameters. The two references differ (training moved the parameters), so the checkpoint was
// really loaded.
TEST(ServeTest, CachedGenerationWithTp1AndTp2IsTheRecomputeReference) {
  TempDir dir("braid-serve-test");
  nlohmann::json reference = serve_json(1, dir, "reference.json", {"--recompute"});
  std::vector<std::int64_t> want = tokens_of(reference);
  ASSERT_EQ(static_cast<std::int64_t>(want.size()), kNewTokens);
  EXPECT_GE(std::set<std::int64_t>(want.begin(), want.end()).size(), 4u) << "a degenerate reference";

  nlohmann::json tp1 = serve_json(1, dir, "tp1.json", {"--block-tokens", "3"});
  EXPECT_EQ(tokens_of(tp1), want);
  EXPECT_EQ(tp1["text"], reference["text"]);
  expect_block_accounting(tp1, 3, 4);
  EXPECT_TRUE(tp1["collectives"].empty()) << "tp 1 communicates nothing";

  std::string model = trained_export(dir);
  nlohmann::json trained = serve_json(1, dir, "trained.json", {"--recompute", "--checkpoint", model});
  EXPECT_NE(tokens_of(trained), want) << "the checkpoint's model generates what the seeded one does";
  nlohmann::json tp2 = serve_json(2, dir, "tp2.json", {"--tp", "2", "--block-tokens", "4", "--checkpoint", model});
  EXPECT_EQ(tokens_of(tp2), tokens_of(trained));
  expect_block_accounting(tp2, 4, 2);
  // Two allreduces (attention output, MLP down) per layer and forward; the decode steps' [1, 1,
  // width] f32 messages on the one-shot fast path, the prompt's [1, 11, width] too (1408 B).
  const nlohmann::json& calls = tp2["collectives"];
  EXPECT_EQ(calls.value("allreduce one_shot " + std::to_string(kWidth * 4) + " B", 0), 2 * kLayers * (kNewTokens - 1))
      << calls.dump();
  EXPECT_EQ(calls.value("allreduce one_shot " + std::to_string(kPrompt.size() * kWidth * 4) + " B", 0), 2 * kLayers)
      << calls.dump();
  EXPECT_EQ(calls.size(), 2u) << calls.dump();

  // A file of another shape is refused naming the parameter, not loaded into a wrong model.
  LaunchResult wrong = launch({.ranks = 1, .program = tool_path("braid-serve"),
                               .args = {"--width", "64", "--heads", "4", "--layers", "2", "--context", "48", "--prompt",
                                        kPrompt, "--checkpoint", model}});
  EXPECT_EQ(wrong.exit_code, 2) << wrong.output;
  EXPECT_NE(wrong.output.find("is not a braid-train --export of a GPT of width 64"), std::string::npos) << wrong.output;
}

void expect_refused(int ranks, std::vector<std::string> args, const std::string& message) {
  LaunchResult r = serve(ranks, std::move(args));
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 2) << "InvalidArgument is exit code 2 (docs/errors.md):\n" << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << "expected \"" << message << "\" in:\n" << r.output;
}

// Prefill/decode disaggregation (--prefill-ranks, docs/serving.md): the prefill ranks compute
// the prompt's cache and stream it layer by layer into the decode ranks' paged caches, resharding
// the heads when the TP sizes differ; the decode side's tokens are the no-cache reference's,
// exactly (the same argument as above: a wrong block, slot or head range would change the logits
// far beyond rounding). 1 -> 1 and 2 -> 1 layer by layer, 1 -> 2 with the transfer after the
// prefill; rank 0's bytes are its share of the planner's paged bytes (whole 4-token blocks).
TEST(ServeTest, DisaggregatedPrefillAndDecodeReproduceTheReference) {
  TempDir dir;
  const std::vector<std::int64_t> want =
      serve_json(1, dir, "reference.json", {"--recompute"})["tokens"].get<std::vector<std::int64_t>>();
  struct Split {
    int prefill, decode;
    bool after_prefill;
  };
  for (const Split s : {Split{1, 1, false}, Split{2, 1, false}, Split{1, 2, true}}) {
    std::vector<std::string> args{"--prefill-ranks", std::to_string(s.prefill), "--tp", std::to_string(s.decode),
                                  "--block-tokens", "4"};
    if (s.after_prefill) args.push_back("--kv-after-prefill");
    const std::string name = "split" + std::to_string(s.prefill) + std::to_string(s.decode) + ".json";
    const nlohmann::json run = serve_json(s.prefill + s.decode, dir, name, args);
    SCOPED_TRACE(name);
    EXPECT_EQ(run["mode"], "disaggregated");
    EXPECT_EQ(run["tokens"].get<std::vector<std::int64_t>>(), want);
    const std::int64_t head_dim = kWidth / 4, heads = 4 / s.prefill;
    const std::int64_t bytes = kLayers * blocks_for(static_cast<std::int64_t>(kPrompt.size()), 4) * 2 * heads * 4 * head_dim * 4;
    EXPECT_EQ(run["disaggregation"]["kv_bytes_sent_by_rank0"].get<std::int64_t>(), bytes);
    EXPECT_GT(run["disaggregation"]["ttft_ms"].get<double>(), 0);
  }
}

// The refusals themselves are unit-tested without a rank (serve_config_test.cc); here, that they
// reach the command line as exit code 2 with the message, from the flags, the prompt's
// characters and the cache pool (in the decoder, after the model is built).
TEST(ServeTest, BadInputIsAClearErrorNamingWhat) {
  TempDir dir("braid-serve-test");
  std::string odd = dir.file("odd.txt");
  std::ofstream(odd) << "ab\x01";
  expect_refused(1, {"--prompt-file", odd}, "byte 0x01 at position 2 is not in the model's vocabulary");
  // 11 + 15 tokens need 7 blocks of 4; a pool of 5 runs out during decoding, on both TP ranks at
  // the same step (their block tables are the same), so neither waits for the other in vain.
  expect_refused(2, {"--tp", "2", "--prompt", kPrompt, "--block-tokens", "4", "--cache-blocks", "5"},
                 "sequence 0 needs 1 more blocks");
}

}  // namespace
}  // namespace braid::testing
