// braid-bench's algorithm comparisons, run for real through braid-run: `--tune` writes a
// tuning file that loads back with load_tuning_file and is accepted by a job through
// BRAID_TUNING_FILE; `braid-bench tune` writes rules for several operations; `--plot` leaves
// a PNG with its data and script (skipped where gnuplot is not installed), and says how to
// install gnuplot when it is missing. Sizes and repetitions are tiny: these check plumbing,
// not performance.
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "braid/collectives/algorithm_registry.h"
#include "braid/collectives/tuning_file.h"
#include "launch.h"
#include "usage_error.h"

namespace braid::testing {
namespace {

class BraidBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/braid_bench_test_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (!HasFailure()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  LaunchResult bench(int ranks, std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    LaunchOptions options;
    options.ranks = ranks;
    options.program = tool_path("braid-bench");
    options.args = std::move(args);
    options.env = std::move(env);
    options.env.emplace("BRAID_TIMEOUT", "60");
    options.timeout_seconds = 180;
    return launch(options);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // One tiny allreduce on 2 ranks with BRAID_TUNING_FILE=file.
  LaunchResult bench_with_tuning_file(const std::string& file) {
    return bench(2, {"allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "--repeats", "1"},
                 {{"BRAID_TUNING_FILE", file}});
  }

  std::string dir_;
};

// The rules of one operation cover every size exactly once, in ascending order, on exactly
// this world size and host count, and name registered algorithms.
void expect_complete_ranges(const TuningTable& table, OpKind op, int world) {
  std::uint64_t next = 0;
  int rules = 0;
  for (const TuningRule& rule : table.rules) {
    if (rule.op != op) continue;
    ++rules;
    EXPECT_EQ(rule.min_bytes, next) << rule.algorithm;
    EXPECT_EQ(rule.min_world, world);
    EXPECT_EQ(rule.max_world, world);
    EXPECT_EQ(rule.min_hosts, 1);
    EXPECT_EQ(rule.max_hosts, 1);
    EXPECT_NE(find_algorithm(op, rule.algorithm), nullptr) << rule.algorithm;
    next = rule.max_bytes == kNoByteLimit ? kNoByteLimit : rule.max_bytes + 1;
  }
  EXPECT_GT(rules, 0) << op_kind_name(op);
  EXPECT_EQ(next, kNoByteLimit) << op_kind_name(op) << ": the last range must be open-ended";
}

TEST_F(BraidBenchTest, TuneWritesAFileThatLoadsBackAndSteersAJob) {
  const std::string file = path("t.json");
  LaunchResult r = bench(2, {"allreduce", "-b", "1K", "-e", "64K", "-f", "4", "-n", "3", "-w", "1", "--repeats", "1",
                             "--tune", file});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.count("winner"), 1) << r.output;                          // the table's header
  EXPECT_EQ(r.count("tuning file " + file), 1) << r.output;
  EXPECT_GE(r.count("braid-bench: allreduce size 4/4"), 1) << r.output;  // progress on stderr
  TuningTable table = load_tuning_file(file);
  expect_complete_ranges(table, OpKind::kAllreduce, 2);

  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* key : {"\"date\"", "\"hostname\"", "\"world\": 2", "\"hosts\": 1", "\"measurements\"", "\"ring\""}) {
    EXPECT_NE(text.find(key), std::string::npos) << key << " missing from\n" << text;
  }

  LaunchResult steered = bench(2, {"allreduce", "-b", "1K", "-e", "64K", "-f", "4", "-n", "2", "-w", "1", "--repeats",
                                   "1"},
                               {{"BRAID_TUNING_FILE", file}});
  EXPECT_EQ(steered.exit_code, 0) << steered.output;
  EXPECT_EQ(steered.count("Out of bounds values : 0 OK"), 1) << steered.output;
}

TEST_F(BraidBenchTest, TuneSubcommandCoversSeveralOperations) {
  const std::string file = path("several.json");
  LaunchResult r = bench(3, {"tune", "-o", file, "--ops", "allreduce,allgather,broadcast", "-b", "1K", "-e", "16K",
                             "-f", "16", "-n", "2", "-w", "1", "--repeats", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  TuningTable table = load_tuning_file(file);
  for (OpKind op : {OpKind::kAllreduce, OpKind::kAllgather, OpKind::kBroadcast}) expect_complete_ranges(table, op, 3);
  for (const TuningRule& rule : table.rules) EXPECT_NE(rule.op, OpKind::kAlltoall);
}

// alltoallv at MoE counts: every element checked (#wrong 0 on every size), the counts'
// generator named with its digest, and --tune writing the one rule its size convention allows
// (every size, this world and host count), which a job then accepts.
TEST_F(BraidBenchTest, AlltoallvTunesOneRuleAtMoeCounts) {
  const std::string file = path("a2av.json");
  LaunchResult r = bench(3, {"alltoallv", "-b", "4K", "-e", "256K", "-f", "8", "-n", "2", "-w", "1", "--repeats", "1",
                             "--tune", file});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  TuningTable table = load_tuning_file(file);
  ASSERT_EQ(table.rules.size(), 1u);
  EXPECT_EQ(table.rules[0].op, OpKind::kAlltoallv);
  EXPECT_EQ(table.rules[0].min_bytes, 0u);
  EXPECT_EQ(table.rules[0].max_bytes, kNoByteLimit);
  EXPECT_EQ(table.rules[0].min_world, 3);
  EXPECT_EQ(table.rules[0].max_world, 3);
  LaunchResult steered = bench(3, {"alltoallv", "-b", "4K", "-e", "256K", "-f", "8", "-n", "2", "-w", "1", "--repeats", "1"},
                               {{"BRAID_TUNING_FILE", file}});
  EXPECT_EQ(steered.exit_code, 0) << steered.output;
  EXPECT_EQ(steered.count("token matrix digest at the largest size"), 1) << steered.output;
  EXPECT_EQ(steered.count("Out of bounds values : 0 OK"), 1) << steered.output;
}

TEST_F(BraidBenchTest, MalformedTuningFileFailsEveryRankNamingTheFile) {
  const std::string file = path("bad.json");
  std::ofstream(file) << R"({"rules": [{"op": "allreduce", "algorithm": "warp_drive"}]})";
  LaunchResult r = bench_with_tuning_file(file);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_GE(r.count("tuning file '" + file + "'"), 1) << r.output;
  EXPECT_GE(r.count("unknown allreduce algorithm 'warp_drive'"), 1) << r.output;
}

// A directory opens like a file and reads as nothing: it used to be reported as "not valid JSON".
TEST_F(BraidBenchTest, TuningFileThatIsADirectoryIsNamedAsOne) {
  LaunchResult r = bench_with_tuning_file(dir_);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_GE(r.count("cannot read tuning file '" + dir_ + "': it is a directory"), 1) << r.output;
  EXPECT_EQ(r.count("not valid JSON"), 0) << r.output;
}

// Sizes are refused before the job starts (no launcher needed): every form that overflows
// 64 bits used to abort (std::out_of_range), wrap to 1 MiB or run 0 bytes.
TEST(BraidBenchCommandLineTest, OverflowingSizesAreUsageErrors) {
  for (const std::string size : {"99999999999999999999", "17592186044417M", "17179869184G", "16777216T"}) {
    for (const std::string flag : {"-b", "-e"}) {
      expect_usage_error("braid-bench", "allreduce " + flag + " " + size,
                         "braid-bench: " + flag + ": '" + size + "' is too large");
    }
  }
  expect_usage_error("braid-bench", "sendrecv -b 12parsecs", "-b: cannot read '12parsecs'");
  expect_usage_error("braid-bench", "overlap --params 17179869184G", "--params: '17179869184G' is too large");
}

// CLI11's own codes (106 for a missing subcommand, 109 for an extra argument) are not what
// docs/benchmarks.md promises; and the unknown word is named.
TEST(BraidBenchCommandLineTest, UsageErrorsExitTwoNamingWhatWasTyped) {
  expect_usage_error("braid-bench", "allreduc -b 8", "unknown subcommand 'allreduc'");
  expect_usage_error("braid-bench", "allreduce --bogus", "--bogus");
  expect_usage_error("braid-bench", "allreduce -n x", "--iters");
  expect_usage_error("braid-bench", "", "a subcommand is required");
  EXPECT_EQ(run_tool("braid-bench", "allreduce --help").exit_code, 0);
}

bool gnuplot_installed() { return std::system("gnuplot --version > /dev/null 2>&1") == 0; }

std::uintmax_t file_size(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? static_cast<std::uintmax_t>(info.st_size) : 0;
}

TEST_F(BraidBenchTest, PlotDrawsAPngWithItsDataAndScript) {
  if (!gnuplot_installed()) GTEST_SKIP() << "gnuplot is not installed (Debian: gnuplot-nox)";
  const std::string png = path("allreduce.png");
  LaunchResult r = bench(2, {"allreduce", "-b", "1K", "-e", "16K", "-f", "4", "-n", "2", "-w", "1", "--repeats", "1",
                             "--algo", "ring,recursive_doubling", "--plot", png});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_GT(file_size(png), 0u);
  std::ifstream image(png, std::ios::binary);
  char magic[8] = {};
  image.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  std::ifstream data(path("allreduce.dat"));
  std::string header, columns;
  std::getline(data, header);
  std::getline(data, columns);
  EXPECT_EQ(columns, "# bytes ring recursive_doubling");
  EXPECT_GT(file_size(path("allreduce.gp")), 0u);
}

TEST_F(BraidBenchTest, PlotWithoutGnuplotSaysWhatToInstall) {
  const std::string empty_bin = path("bin");
  ASSERT_EQ(::mkdir(empty_bin.c_str(), 0755), 0);
  LaunchResult r = bench(2, {"allreduce", "-b", "8", "-e", "8", "--plot", path("x.png")}, {{"PATH", empty_bin}});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_GE(r.count("gnuplot-nox"), 1) << r.output;
  EXPECT_EQ(file_size(path("x.png")), 0u);
}

}  // namespace
}  // namespace braid::testing

namespace braid::testing {
namespace {

// A collective's header names both memory references measured in the run: one thread's memcpy
// and each rank's share when every rank copies at once (the ceiling of large messages); the
// JSON carries both. Ranks that share two cores get less each than one thread alone.
TEST_F(BraidBenchTest, HeaderNamesOneThreadAndEveryRankMemcpy) {
  LaunchResult r = bench(3, {"allreduce", "-b", "64K", "-e", "64K", "-n", "2", "-w", "1", "--repeats", "1", "--json",
                             path("m.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.lines_with("memcpy (one thread, 64 MiB").size(), 1u) << r.output;
  EXPECT_EQ(r.lines_with("memcpy (every rank at once, 64 MiB each").size(), 1u) << r.output;
  std::ifstream in(path("m.json"));
  nlohmann::json doc = nlohmann::json::parse(in);
  const double one = doc["meta"]["memcpy_gbs"].get<double>();
  const double every = doc["meta"]["memcpy_every_rank_gbs"].get<double>();
  EXPECT_GT(one, 0.0) << doc.dump();
  EXPECT_GT(every, 0.0) << doc.dump();
}

// `allreduce --compress` prints one row per codec and size with the wire columns, and its JSON
// carries them; int8 sends about a quarter of the fp32 ring's bytes, and its error is small.
TEST_F(BraidBenchTest, CompressPrintsWireBytesAndErrorPerCodec) {
  LaunchResult r = bench(2, {"allreduce", "--compress", "none,int8,topk:0.01,powersgd:2", "-b", "64K", "-e", "256K",
                             "-f", "4", "-n", "2", "-w", "1", "--repeats", "1", "--json", path("c.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.lines_with("wire/ring").size(), 2u) << r.output;  // the legend and the column header
  std::ifstream in(path("c.json"));
  nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc["rows"].size(), 8u) << doc.dump();
  for (const auto& row : doc["rows"]) {
    if (row["codec"] == "int8") {
      EXPECT_NEAR(row["wire/ring"].get<double>(), 0.25, 0.01) << row.dump();
      EXPECT_LT(row["relerr"].get<double>(), 0.02) << row.dump();
    }
    if (row["codec"] == "none") {
      EXPECT_EQ(row["relerr"].get<double>(), 0.0) << row.dump();
    }
  }
}

TEST_F(BraidBenchTest, CompressRefusesABadCodecBeforeJoiningTheJob) {
  LaunchResult r = bench(2, {"allreduce", "--compress", "int8,topk:2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_GE(r.lines_with("outside (0, 1]").size(), 1u) << r.output;
}

}  // namespace
}  // namespace braid::testing

namespace braid::testing {
namespace {

// `overlap` runs the synthetic model with overlap off and on and reports hidden communication.
TEST_F(BraidBenchTest, OverlapComparesOffAndOnPerBucketSize) {
  LaunchResult r = bench(2, {"overlap", "--layers", "3", "--params", "16K", "--steps", "1", "--buckets", "1,auto",
                             "--compute-ms", "2", "--json", path("o.json")});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(path("o.json"));
  nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_EQ(doc["rows"].size(), 4u) << doc.dump();
  for (const auto& row : doc["rows"]) {
    EXPECT_GE(row["hidden(%)"].get<double>(), 0.0) << row.dump();
    EXPECT_LE(row["hidden(%)"].get<double>(), 100.0) << row.dump();
    EXPECT_GT(row["wire(MB)"].get<double>(), 0.0) << row.dump();
  }
}

TEST_F(BraidBenchTest, OverlapRefusesABadModeBeforeJoiningTheJob) {
  LaunchResult r = bench(2, {"overlap", "--overlap", "maybe"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_GE(r.lines_with("use on, off").size(), 1u) << r.output;
}

}  // namespace
}  // namespace braid::testing
