// Exact resume after killing the whole job (issue 21, item 6): for every kind of checkpoint
// braid-train writes (DDP's checkpoint.pt, ZeRO's shards and manifest at stages 2 and 3, the
// mesh's shard per (stage, TP rank) with its manifest, on pp, tp and dp x pp x tp layouts, also
// under --zero 1 and 3), a run with a checkpoint every 2 steps is SIGKILLed whole twice and resumed each time, and its
// final parameters equal, bit for bit, those of the run that never stopped:
//
//   1. killed in the middle of writing the checkpoint of a randomly chosen save (one rank
//      stopped half-way through a file, programs/torn_checkpoint_write.cc): the resume must
//      take the previous complete checkpoint, never the torn one (or start from step 0, with
//      --resume-if-present, when the torn save was the first);
//   2. killed at a randomly chosen step, as soon as rank 0 reports the step before it: the
//      kill lands inside a step (every rank between the last step's loss allreduce and the
//      next one's), mid-epoch or not; the resume takes the last checkpoint at or before it.
//
// The losses of every resumed step are the uninterrupted run's too (the data order and the
// dropout streams continue exactly). The steps are drawn from a seed printed by each case;
// BRAID_KILL_RESUME_SEED=N reruns a failure with the same steps.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "braid/base/atomic_file.h"
#include "killable_job.h"
#include "launch.h"
#include "train_fixture.h"

namespace braid::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kSteps = 8;
constexpr int kEvery = 2;  // --checkpoint-every: saves at steps 2, 4, 6, 8

struct Job {
  int ranks;
  std::vector<std::string> args;  // the model and layout, without length or checkpoints
  std::string torn_file;          // a substring of the temporary file to tear (written by one rank)
};

std::uint64_t seed_for(const std::string& name) {
  const char* given = std::getenv("BRAID_KILL_RESUME_SEED");
  if (given != nullptr && *given != '\0') return std::strtoull(given, nullptr, 10);
  return std::random_device{}() ^ std::hash<std::string>{}(name);
}

// The step a run resumed at: "resumed from ... at step N", or 0 after "--resume-if-present
// starts from step 0"; -1 when neither is in the output.
int resumed_step(const std::string& output) {
  std::size_t at = output.find("resumed from ");
  if (at != std::string::npos) {
    at = output.find(" at step ", at);
    return at == std::string::npos ? -1 : std::atoi(output.c_str() + at + 9);
  }
  return output.find("--resume-if-present starts from step 0") != std::string::npos ? 0 : -1;
}

// "step S/8" as rank 0's progress line prints it.
bool reports_step(const std::string& line, int step) {
  return line.starts_with("[0] ") && line.find(fmt::format(" step {}/{}", step, kSteps)) != std::string::npos;
}

class KillResumeTest : public TrainTest {
 protected:
  KillableJobResult run(const Job& job, std::vector<std::string> extra, std::map<std::string, std::string> env,
                        std::function<bool(const std::string&)> kill_when) {
    std::vector<std::string> args = plus(job.args, {"--steps", std::to_string(kSteps), "--test-samples", "64",
                                                    "--log-interval", "1e-9"});
    args = plus(args, extra);
    env["BRAID_TIMEOUT"] = "60";
    return run_killable_job({.ranks = job.ranks, .program = tool_path("braid-train"), .args = args, .env = env,
                             .kill_when = std::move(kill_when), .timeout_seconds = 120});
  }

  // A job with a stopped rank cannot end by itself; one killed from its progress lines could, in
  // principle, on a machine so loaded that the rest of the run outpaced the kill: that is said,
  // not failed (the timing must not decide), and the resume then starts at the end.
  void expect_killed(const KillableJobResult& r, const std::string& what, bool can_end_first = false) {
    ASSERT_TRUE(r.killed) << what << " was not killed:\n" << r.output;
    bool ended = r.output.find("optimizer steps; final parameters") != std::string::npos;
    if (can_end_first && (ended || r.ranks_killed == 0)) {
      std::printf("%s had ended before the kill landed\n", what.c_str());
      return;
    }
    EXPECT_GE(r.ranks_killed, 1) << r.output;
    EXPECT_FALSE(ended) << what << " finished:\n" << r.output;
    // The ranks unlink their segments once set up: a job killed while training leaves none.
    ASSERT_FALSE(r.job_id.empty()) << r.output;
    EXPECT_TRUE(shm_leftovers(r.job_id).empty()) << what;
  }

  void kill_twice_and_resume(const Job& job) {
    std::uint64_t seed = seed_for(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::mt19937_64 random(seed);
    int torn_save = std::uniform_int_distribution<int>(1, kSteps / kEvery - 1)(random);  // of saves 1..3
    int resumed_at = (torn_save - 1) * kEvery;
    // A step that is no save's, after the resume: the kill lands in the step after it.
    std::vector<int> candidates;
    for (int s = resumed_at + 1; s < kSteps; ++s) {
      if (s % kEvery != 0) candidates.push_back(s);
    }
    int kill_after = candidates[std::uniform_int_distribution<std::size_t>(0, candidates.size() - 1)(random)];
    std::printf("seed %llu (BRAID_KILL_RESUME_SEED=%llu reruns it): save %d torn (step %d), then killed in step %d\n",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), torn_save,
                torn_save * kEvery, kill_after + 1);

    std::vector<std::string> ckpt = {"--checkpoint-dir", path("ckpt"), "--checkpoint-every", std::to_string(kEvery)};
    KillableJobResult whole = run(job, {"--json", path("whole.json")}, {}, {});
    ASSERT_FALSE(whole.timed_out) << whole.output;
    ASSERT_EQ(whole.exit_code, 0) << whole.output;

    // 1. Killed inside the write of save `torn_save`.
    std::string preload = std::string(BRAID_TORN_CHECKPOINT_WRITE);
    KillableJobResult torn = run(job, ckpt,
                                 {{"LD_PRELOAD", preload}, {"BRAID_TEST_TORN_WRITE", job.torn_file},
                                  {"BRAID_TEST_TORN_WRITE_SKIP", std::to_string(torn_save - 1)}},
                                 [](const std::string& line) { return line.find("braid-test: torn write of ") != std::string::npos; });
    ASSERT_NO_FATAL_FAILURE(expect_killed(torn, "the job torn in its save"));
    std::printf("killed at: %s\n", torn.kill_line.c_str());

    // 2. Resumed from the save before the torn one, and killed in step kill_after + 1.
    KillableJobResult mid_step = run(job, plus(ckpt, {"--resume-if-present"}), {},
                                     [&](const std::string& line) { return reports_step(line, kill_after); });
    ASSERT_EQ(resumed_step(mid_step.output), resumed_at) << "the torn save was taken for a complete one:\n"
                                                         << mid_step.output;
    ASSERT_NO_FATAL_FAILURE(expect_killed(mid_step, "the resumed job", /*can_end_first=*/true));
    bool next_reported = mid_step.output.find(fmt::format(" step {}/{}", kill_after + 1, kSteps)) != std::string::npos;
    std::printf("killed after rank 0 reported step %d; step %d %s\n", kill_after, kill_after + 1,
                next_reported ? "had ended too (the kill landed later)" : "never ended (the kill landed inside it)");

    // 3. Resumed from the last save at or before the kill, to the end.
    KillableJobResult last = run(job, plus(ckpt, {"--resume-if-present", "--json", path("resumed.json")}), {}, {});
    ASSERT_FALSE(last.timed_out) << last.output;
    ASSERT_EQ(last.exit_code, 0) << last.output;
    int restart = resumed_step(last.output);
    EXPECT_GE(restart, kill_after / kEvery * kEvery) << "a complete checkpoint was lost:\n" << last.output;
    EXPECT_EQ(restart % kEvery, 0) << last.output;
    std::printf("the last resume started at step %d\n", restart);
    // The saves after the kills removed what the killed ones left (temporary files, sets of
    // shards no manifest names).
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(path("ckpt"))) {
      EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
    }

    EXPECT_EQ(digest("resumed.json"), digest("whole.json")) << "the final parameters differ";
    std::vector<double> all = step_losses("whole.json"), resumed = step_losses("resumed.json");
    ASSERT_GE(restart, 0);
    ASSERT_EQ(resumed.size(), all.size() - static_cast<std::size_t>(restart)) << last.output;
    for (std::size_t i = 0; i < resumed.size(); ++i) {
      EXPECT_EQ(resumed[i], all[static_cast<std::size_t>(restart) + i]) << "the loss of step " << restart + 1 + i;
    }
  }
};

// Data parallel (checkpoint.pt by rank 0): the MLP with momentum, 4 steps per epoch on 4 ranks,
// so kills and resumes fall mid-epoch and across the epoch's end.
TEST_F(KillResumeTest, DataParallel) {
  kill_twice_and_resume({4, {"--model", "mlp", "--batch", "24", "--train-samples", "96", "--lr", "0.1"},
                         "checkpoint.pt.tmp."});
}

// ZeRO stage 2 (a shard file per rank, then the manifest): torn in the manifest's write, when
// every shard of the new generation is on disk.
TEST_F(KillResumeTest, ZeroStageTwo) {
  kill_twice_and_resume({4, {"--model", "mlp", "--batch", "24", "--train-samples", "96", "--lr", "0.1", "--bucket-mb", "1",
                             "--zero", "2"},
                         "zero-checkpoint.json.tmp."});
}

// ZeRO stage 3 (a shard file per rank, per unit) with Adam: torn in rank 1's shard.
TEST_F(KillResumeTest, ZeroStageThree) {
  kill_twice_and_resume({4, {"--model", "gpt", "--context", "16", "--optimizer", "adam", "--batch", "24",
                             "--train-samples", "72", "--zero", "3"},
                         "rank1.pt.tmp."});
}

// Pipeline parallel, dp 2 x pp 2 with 1F1B: torn in the mesh's manifest, when the shards of every
// stage are on disk.
TEST_F(KillResumeTest, Pipeline) {
  kill_twice_and_resume({4, {"--model", "gpt", "--context", "16", "--optimizer", "adam", "--batch", "8", "--train-samples",
                             "48", "--pp", "2", "--microbatches", "2", "--schedule", "1f1b"},
                         "mesh.txt.tmp."});
}

// Tensor parallel with dropout, dp 2 x tp 2: torn in TP rank 1's shard; the dropout streams
// (saved with each shard) continue exactly.
TEST_F(KillResumeTest, TensorParallelWithDropout) {
  kill_twice_and_resume({4, {"--model", "gpt", "--context", "16", "--optimizer", "adam", "--batch", "8", "--train-samples",
                             "48", "--tp", "2", "--dropout", "0.1"},
                         "pp0-tp1/checkpoint.pt.tmp."});
}

// dp 2 x pp 2 x tp 2 on 8 ranks with ZeRO stage 1 over each data-parallel group (every shard a
// sharded ZeRO checkpoint): torn in the last shard's manifest.
TEST_F(KillResumeTest, DataPipelineTensorParallelWithZero) {
  kill_twice_and_resume({8, {"--model", "gpt", "--context", "16", "--optimizer", "adam", "--batch", "8", "--train-samples",
                             "48", "--tp", "2", "--pp", "2", "--microbatches", "2", "--dropout", "0.1", "--zero", "1"},
                         "pp1-tp1/zero-checkpoint.json.tmp."});
}

// ZeRO stage 3 on the mesh, dp 2 x pp 2 with dropout (each stage's shard a sharded ZeRO checkpoint of
// its units, the dropout streams among its buffers): torn in stage 1's rank-1 shard file.
TEST_F(KillResumeTest, MeshZeroStageThreeWithDropout) {
  kill_twice_and_resume({4, {"--model", "gpt", "--context", "16", "--optimizer", "adam", "--batch", "8", "--train-samples",
                             "48", "--pp", "2", "--microbatches", "2", "--dropout", "0.1", "--zero", "3"},
                         "pp1-tp0/zero-1-rank1.pt.tmp."});
}

// The mesh manifest's generations, from the files up: a checkpoint in the layout before them
// (<dir>/mesh-pp<s>-tp<t>/ and a manifest of the fingerprint alone) still resumes, bit for bit;
// a set whose shards come from two saves (what a kill between two shards' renames left before
// generations) is Corrupt on every rank naming both steps, never a hang nor a mixed model; a
// checkpoint of the run's last step resumes into its final parameters.
TEST_F(KillResumeTest, MeshShardsOfOneSaveResumeAndShardsOfTwoSavesAreRefused) {
  std::vector<std::string> common = {"--model", "gpt", "--context", "16", "--optimizer", "adam", "--batch", "8",
                                     "--train-samples", "48", "--tp", "2", "--dropout", "0.1", "--checkpoint-every", "2"};
  expect_success(train(2, plus(common, {"--steps", "2", "--checkpoint-dir", path("early")})));
  expect_success(train(2, plus(common, {"--steps", "4", "--checkpoint-dir", path("late"), "--json", path("late.json")})));
  std::string manifest = read_whole_file(path("early/mesh.txt"));
  ASSERT_EQ(manifest.find("\ngeneration 1\n"), manifest.size() - 14) << manifest;
  ASSERT_TRUE(fs::is_directory(path("late/mesh-2"))) << "the committed set";
  EXPECT_FALSE(fs::exists(path("late/mesh-1"))) << "a set older than the committed one is removed";
  std::string fingerprint = manifest.substr(0, manifest.size() - 13);

  fs::create_directories(path("legacy"));
  for (const char* shard : {"pp0-tp0", "pp0-tp1"}) {
    fs::copy(path(std::string("early/mesh-1/") + shard), path(std::string("legacy/mesh-") + shard));
  }
  write_file_atomically(path("legacy/mesh.txt"), fingerprint);
  LaunchResult legacy = train(2, plus(common, {"--steps", "4", "--checkpoint-dir", path("legacy"), "--resume", "--json",
                                                path("legacy.json")}));
  expect_success(legacy);
  EXPECT_EQ(resumed_step(legacy.output), 2) << legacy.output;
  EXPECT_EQ(digest("legacy.json"), digest("late.json"));
  EXPECT_FALSE(fs::exists(path("legacy/mesh-pp0-tp0"))) << "the old layout is removed once a set is committed";

  fs::create_directories(path("mixed/mesh-7"));
  fs::copy(path("early/mesh-1/pp0-tp0"), path("mixed/mesh-7/pp0-tp0"));
  fs::copy(path("late/mesh-2/pp0-tp1"), path("mixed/mesh-7/pp0-tp1"));
  write_file_atomically(path("mixed/mesh.txt"), fingerprint + "generation 7\n");
  LaunchResult mixed = train(2, plus(common, {"--steps", "4", "--checkpoint-dir", path("mixed"), "--resume"}));
  EXPECT_FALSE(mixed.timed_out) << mixed.output;
  EXPECT_NE(mixed.exit_code, 0) << mixed.output;
  EXPECT_EQ(mixed.count("braid::Corrupt"), 2) << mixed.output;
  for (const std::string& line : mixed.lines_with("braid::Corrupt")) std::printf("%s\n", line.c_str());
  EXPECT_EQ(mixed.count("are not one save's: world rank 0's is at step 2, rank 1's at step 4"), 2) << mixed.output;

  // Resumed from the save of its last step, a run trains nothing and reports the parameters it
  // loaded (what a kill after the last save and before the end resumes into).
  LaunchResult done = train(2, plus(common, {"--steps", "4", "--checkpoint-dir", path("late"), "--resume", "--json",
                                              path("done.json")}));
  expect_success(done);
  EXPECT_EQ(resumed_step(done.output), 4) << done.output;
  EXPECT_EQ(digest("done.json"), digest("late.json"));
}

}  // namespace
}  // namespace braid::testing
