// The tuner's precedence (explicit request > BRAID_ALGO_<OP> > tuning file > built-in table >
// first supporting algorithm), first with stand-in algorithms through the pure
// select_algorithm, then through choose_algorithm with the real registry, the environment and
// a tuning file cached on a world-of-one communicator.
#include "braid/collectives/tuner.h"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/tuning_file.h"

namespace braid {
namespace {

void run_nothing(const CollectiveArgs&) {}
bool below_100(const CollectiveArgs& args) { return args.count < 100; }
bool never(const CollectiveArgs&) { return false; }

// Stand-ins: "base" (any arguments, the default), "small" (count < 100), "picky" (never).
const AlgorithmEntry kBase{OpKind::kAllreduce, "base", run_nothing};
const AlgorithmEntry kSmall{OpKind::kAllreduce, "small", run_nothing, below_100};
const AlgorithmEntry kPicky{OpKind::kAllreduce, "picky", run_nothing, never};
const std::vector<const AlgorithmEntry*> kCandidates{&kBase, &kSmall, &kPicky};

// Sets an environment variable for one test and restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class TunerTest : public ::testing::Test {
 protected:
  // A world of one per test: the environment is read at a communicator's first tuned call.
  void SetUp() override { comm_ = fresh(); }
  static std::unique_ptr<Communicator> fresh() { return std::make_unique<Communicator>(Communicator::init()); }

  static CollectiveArgs args_on(Communicator& comm, std::int64_t count, OpKind op = OpKind::kAllreduce) {
    return {.comm = comm, .op = op, .seq = 0, .send = nullptr, .recv = nullptr, .count = count, .dtype = DType::kF32};
  }
  CollectiveArgs args(std::int64_t count, OpKind op = OpKind::kAllreduce) { return args_on(*comm_, count, op); }
  std::string_view select(std::int64_t count, const SelectionSources& sources, std::string_view requested = "") {
    return select_algorithm(args(count), kCandidates, requested, sources).name;
  }
  // What the built-in table alone picks for `count` elements of f32.
  std::string_view builtin_choice(OpKind op, std::int64_t count) {
    return select_algorithm(args(count, op), algorithms_for(op), "", {.builtin = &builtin_tuning_table()}).name;
  }
  // A one-rule allreduce table, owned by the test.
  const TuningTable* table_of(std::string algorithm, std::uint64_t max_bytes = kNoByteLimit) {
    tables_.push_back({{{.op = OpKind::kAllreduce, .algorithm = std::move(algorithm), .max_bytes = max_bytes}}});
    return &tables_.back();
  }

  std::unique_ptr<Communicator> comm_;
  std::deque<TuningTable> tables_;  // stable addresses
};

TEST(SelectionBytesTest, MatchesBraidBenchSizeColumn) {
  // The whole message for allreduce, broadcast and reduce; the n-block buffer for the others.
  EXPECT_EQ(selection_bytes(OpKind::kAllreduce, 10, 4, 4), 40u);
  EXPECT_EQ(selection_bytes(OpKind::kBroadcast, 10, 8, 4), 80u);
  EXPECT_EQ(selection_bytes(OpKind::kReduce, 3, 2, 5), 6u);
  EXPECT_EQ(selection_bytes(OpKind::kAllgather, 10, 4, 4), 160u);
  EXPECT_EQ(selection_bytes(OpKind::kReduceScatter, 10, 2, 3), 60u);
  EXPECT_EQ(selection_bytes(OpKind::kAlltoall, 1, 1, 5), 5u);
  EXPECT_EQ(selection_bytes(OpKind::kGather, 7, 8, 2), 112u);
  EXPECT_EQ(selection_bytes(OpKind::kScatter, 0, 8, 2), 0u);
}

TEST_F(TunerTest, KeyOfACall) {
  TuningKey key = tuning_key(args(256));
  EXPECT_EQ(key.op, OpKind::kAllreduce);
  EXPECT_EQ(key.bytes, 1024u);
  EXPECT_EQ(key.world, 1);
  EXPECT_EQ(key.hosts, 1);
}

// alltoallv's key has 0 bytes whatever the counts (its per-rank totals differ, and the key must
// be the same on every rank), so its table rules match by world and hosts; a file's rule wins
// over the built-in one, and a rule whose algorithm refuses the call (shm_direct on one rank)
// is skipped.
TEST_F(TunerTest, AlltoallvIsChosenByWorldAndHostsFromTheTables) {
  EXPECT_EQ(tuning_key(args(0, OpKind::kAlltoallv)).bytes, 0u);
  const TuningTable builtin = builtin_tuning_table();
  TuningTable file{{{.op = OpKind::kAlltoallv, .algorithm = "shm_direct"},
                    {.op = OpKind::kAlltoallv, .algorithm = "pairwise", .min_world = 1, .max_world = 1}}};
  EXPECT_EQ(select_algorithm(args(0, OpKind::kAlltoallv), algorithms_for(OpKind::kAlltoallv), "",
                             {.file = &file, .builtin = &builtin}).name, "pairwise");
  TuningTable elsewhere{{{.op = OpKind::kAlltoallv, .algorithm = "hierarchical", .min_world = 2}}};
  EXPECT_EQ(select_algorithm(args(0, OpKind::kAlltoallv), algorithms_for(OpKind::kAlltoallv), "",
                             {.file = &elsewhere, .builtin = &builtin}).name, "pairwise");
}

TEST_F(TunerTest, ExplicitRequestWinsAndIsNeverSilentlyReplaced) {
  SelectionSources sources{.forced = "base", .forced_by = "BRAID_ALGO_ALLREDUCE", .file = table_of("base")};
  EXPECT_EQ(select(10, sources, "small"), "small");
  EXPECT_THROW(select(10, sources, "missing"), InvalidArgument);
  EXPECT_THROW(select(1000, sources, "small"), InvalidArgument);  // refuses: an error, not a fallback
}

TEST_F(TunerTest, ForcedByEnvironmentBeatsFileAndTable) {
  TuningTable builtin{{{.op = OpKind::kAllreduce, .algorithm = "base"}}};
  SelectionSources sources{.forced = "small", .forced_by = "BRAID_ALGO_ALLREDUCE", .file = table_of("base"),
                           .builtin = &builtin};
  EXPECT_EQ(select(10, sources), "small");
}

TEST_F(TunerTest, ForcedButUnsupportedFallsThroughToTheFile) {
  TuningTable builtin{{{.op = OpKind::kAllreduce, .algorithm = "small"}}};
  SelectionSources sources{.forced = "picky", .forced_by = "BRAID_ALGO_ALLREDUCE", .file = table_of("base"),
                           .builtin = &builtin};
  EXPECT_EQ(select(10, sources), "base");
}

TEST_F(TunerTest, UnknownForcedNameNamesTheVariableAndTheChoices) {
  SelectionSources sources{.forced = "fastest", .forced_by = "BRAID_ALGO_ALLREDUCE"};
  try {
    select(10, sources);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("BRAID_ALGO_ALLREDUCE='fastest'"), std::string::npos) << message;
    EXPECT_NE(message.find("base, small, picky"), std::string::npos) << message;
  }
}

TEST_F(TunerTest, FileBeatsBuiltinAndSkipsRulesThatDoNotApply) {
  TuningTable builtin{{{.op = OpKind::kAllreduce, .algorithm = "small"}}};
  EXPECT_EQ(select(10, {.file = table_of("base"), .builtin = &builtin}), "base");
  // The file's rule covers only up to 40 bytes (10 floats): beyond, the built-in table decides.
  EXPECT_EQ(select(10, {.file = table_of("base", 40), .builtin = &builtin}), "base");
  EXPECT_EQ(select(11, {.file = table_of("base", 40), .builtin = &builtin}), "small");
  // A file rule whose algorithm refuses the call is skipped.
  EXPECT_EQ(select(10, {.file = table_of("picky"), .builtin = &builtin}), "small");
}

TEST_F(TunerTest, BuiltinSkipsUnknownAndUnsupportedAlgorithms) {
  TuningTable builtin{{{.op = OpKind::kAllreduce, .algorithm = "not_in_this_build"},
                       {.op = OpKind::kAllreduce, .algorithm = "picky"},
                       {.op = OpKind::kAllreduce, .algorithm = "small"},
                       {.op = OpKind::kAllreduce, .algorithm = "base"}}};
  EXPECT_EQ(select(10, {.builtin = &builtin}), "small");
  EXPECT_EQ(select(1000, {.builtin = &builtin}), "base");  // "small" refuses 1000 elements
}

TEST_F(TunerTest, WithoutRulesTheFirstSupportingAlgorithmRuns) {
  const std::vector<const AlgorithmEntry*> picky_first{&kPicky, &kSmall, &kBase};
  EXPECT_EQ(select_algorithm(args(10), picky_first, "", {}).name, "small");
  EXPECT_EQ(select_algorithm(args(1000), picky_first, "", {}).name, "base");
  const std::vector<const AlgorithmEntry*> only_picky{&kPicky};
  EXPECT_THROW(select_algorithm(args(10), only_picky, "", {}), InvalidArgument);
  EXPECT_THROW(select_algorithm(args(10), {}, "", {}), InvalidArgument);
}

// Every tunable operation has, for any key, a built-in rule naming a registered algorithm
// that accepts any arguments: the table alone always decides, whatever the world.
TEST(BuiltinTableTest, CoversEveryOperationSizeAndWorld) {
  for (OpKind op : tunable_ops()) {
    for (int world = 1; world <= 9; ++world) {
      for (int hosts = 1; hosts <= world; hosts += 2) {
        for (std::uint64_t bytes : {0ull, 1ull, 4096ull, 65535ull, 65536ull, 1ull << 20, 1ull << 34}) {
          bool decided = false;
          for (std::string_view name : builtin_tuning_table().matching({op, bytes, world, hosts})) {
            const AlgorithmEntry* entry = find_algorithm(op, name);
            decided = decided || (entry != nullptr && entry->supports == nullptr);
          }
          EXPECT_TRUE(decided) << op_kind_name(op) << " " << bytes << " bytes, world " << world << ", hosts " << hosts;
        }
      }
    }
  }
}

TEST(BuiltinTableTest, NamesTheMeasuredWinners) {
  auto first = [](OpKind op, std::uint64_t bytes, int world, int hosts) {
    auto names = builtin_tuning_table().matching({op, bytes, world, hosts});
    return names.empty() ? std::string_view() : names.front();
  };
  EXPECT_EQ(first(OpKind::kAllreduce, 8, 4, 1), "one_shot");
  EXPECT_EQ(first(OpKind::kAllreduce, 8, 2, 1), "one_shot");
  EXPECT_EQ(first(OpKind::kAllreduce, 16 << 10, 4, 1), "two_shot");
  EXPECT_EQ(first(OpKind::kAllreduce, 64 << 10, 4, 1), "shm_direct");
  EXPECT_EQ(first(OpKind::kAllreduce, 128 << 10, 4, 1), "single_copy");
  EXPECT_EQ(first(OpKind::kAllreduce, 16 << 20, 4, 1), "single_copy");
  EXPECT_EQ(first(OpKind::kAllreduce, 32 << 20, 4, 1), "shm_direct");
  EXPECT_EQ(first(OpKind::kAllreduce, (16 << 10) - 1, 2, 1), "one_shot");
  EXPECT_EQ(first(OpKind::kAllreduce, 16 << 10, 2, 1), "single_copy");
  EXPECT_EQ(first(OpKind::kAllreduce, 32 << 20, 2, 1), "single_copy");
  EXPECT_EQ(first(OpKind::kAllreduce, 64 << 20, 2, 1), "shm_direct");
  EXPECT_EQ(first(OpKind::kAllreduce, 8, 4, 2), "hierarchical");
  EXPECT_EQ(first(OpKind::kAllreduce, (512 << 10) - 1, 4, 2), "hierarchical");
  EXPECT_EQ(first(OpKind::kAllreduce, 512 << 10, 4, 2), "host_striped");
  EXPECT_EQ(first(OpKind::kAllreduce, 64 << 20, 6, 3), "host_striped");
  // Where host_striped refuses (hosts of different sizes), the leader variant is next.
  const auto across_hosts = builtin_tuning_table().matching({OpKind::kAllreduce, 8 << 20, 3, 2});
  ASSERT_GE(across_hosts.size(), 2u);
  EXPECT_EQ(across_hosts[1], "hierarchical");
  EXPECT_EQ(first(OpKind::kAllgather, 64 << 20, 4, 1), "shm_direct");
  EXPECT_EQ(first(OpKind::kAllgather, 64 << 20, 4, 2), "ring");
  EXPECT_EQ(first(OpKind::kAlltoall, 8, 4, 1), "shm_direct");
  EXPECT_EQ(first(OpKind::kAlltoall, 8, 4, 2), "scattered");  // measured at 4 ranks on 2 hosts
  EXPECT_EQ(first(OpKind::kAlltoall, 8, 5, 2), "pairwise");
  EXPECT_EQ(first(OpKind::kBroadcast, 8, 4, 1), "binomial");
  EXPECT_EQ(first(OpKind::kBroadcast, 64 << 20, 4, 1), "shm_direct");
  EXPECT_EQ(first(OpKind::kBroadcast, 64 << 20, 4, 2), "chain");
  EXPECT_EQ(first(OpKind::kReduceScatter, 8, 4, 1), "shm_direct");
  EXPECT_EQ(first(OpKind::kReduceScatter, 64 << 20, 2, 1), "shm_direct");
  // Across hosts (and where shm_direct refuses: TCP), the message-based rules as before.
  EXPECT_EQ(first(OpKind::kReduceScatter, 8, 4, 2), "recursive_halving");
  EXPECT_EQ(first(OpKind::kReduceScatter, 64 << 20, 4, 2), "ring");
  const auto one_host = builtin_tuning_table().matching({OpKind::kReduceScatter, 64 << 20, 4, 1});
  ASSERT_GE(one_host.size(), 2u);
  EXPECT_EQ(one_host[1], "ring");
}

// The sizes of the grid: 0 and every power of two up to 1 GiB, each with the size just below
// it, so that a boundary moved off a power of two shows.
std::vector<std::uint64_t> grid_sizes() {
  std::vector<std::uint64_t> sizes{0};
  for (int exponent = 1; exponent <= 30; ++exponent) {
    sizes.push_back((std::uint64_t{1} << exponent) - 1);
    sizes.push_back(std::uint64_t{1} << exponent);
  }
  return sizes;  // 1 = 2^1 - 1 stands for 2^0
}

// "64K" for a whole number of KiB, MiB or GiB, else the bytes ("65535").
std::string size_name(std::uint64_t bytes) {
  constexpr std::string_view kUnits[] = {"", "K", "M", "G"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{}{}", bytes, kUnits[unit]);
}

// The table's whole answer at one (op, world, hosts) over grid_sizes(): each run of sizes with
// the same matching algorithms, in table order, as "<first size> a>b>c" ("-" where nothing
// matches). Which one runs is the first of them that is usable, so pinning these lists pins
// the choice whatever supports() answers.
std::string size_runs(const TuningTable& table, OpKind op, int world, int hosts) {
  std::string runs, previous;
  for (std::uint64_t bytes : grid_sizes()) {
    std::string names;
    for (std::string_view name : table.matching({op, bytes, world, hosts})) {
      if (!names.empty()) names += '>';
      names += name;
    }
    if (names.empty()) names.push_back('-');
    if (!runs.empty() && names == previous) continue;
    runs += fmt::format("{}{} {}", runs.empty() ? "" : " | ", size_name(bytes), names);
    previous = names;
  }
  return runs;
}

// size_runs for every tunable op, host count 1..3 and world 1..9, consecutive worlds with
// the same runs on one line: "<op> hosts=<h> world=<a>-<b>: <runs>".
std::string grid_summary(const TuningTable& table) {
  std::string summary;
  for (OpKind op : tunable_ops()) {
    for (int hosts = 1; hosts <= 3; ++hosts) {
      int first_world = 1;
      std::string previous = size_runs(table, op, 1, hosts);
      for (int world = 2; world <= 10; ++world) {
        const std::string runs = world <= 9 ? size_runs(table, op, world, hosts) : "";
        if (runs == previous) continue;
        summary += fmt::format("{} hosts={} world={}-{}: {}\n", op_kind_name(op), hosts, first_world, world - 1, previous);
        first_world = world;
        previous = runs;
      }
    }
  }
  return summary;
}

// The built-in table's regression test: what it answers on the whole grid, pinned. A change
// of the table that moves any choice shows here as a diff; when the move is meant (new
// measurements, docs/collectives.md updated), paste the new summary.
TEST(BuiltinTableTest, PinsEveryChoiceOnTheGrid) {
  const std::string expected = R"(allreduce hosts=1 world=1-2: 0 one_shot>one_shot>shm_direct>recursive_doubling | 16K single_copy>one_shot>shm_direct>recursive_doubling | 64K single_copy>one_shot>shm_direct>ring | 128K single_copy>single_copy>one_shot>shm_direct>ring | 256K single_copy>single_copy>shm_direct>ring | 32M single_copy>shm_direct>ring | 64M shm_direct>ring
allreduce hosts=1 world=3-9: 0 one_shot>two_shot>shm_direct>recursive_doubling | 16K two_shot>shm_direct>recursive_doubling | 64K shm_direct>ring | 128K single_copy>shm_direct>ring | 32M shm_direct>ring
allreduce hosts=2 world=1-9: 0 hierarchical>recursive_doubling | 64K hierarchical>ring | 512K host_striped>hierarchical>ring
allreduce hosts=3 world=1-9: 0 hierarchical>recursive_doubling | 64K hierarchical>ring | 512K host_striped>hierarchical>ring
allgather hosts=1 world=1-9: 0 recursive_doubling>bruck | 4K shm_direct>recursive_doubling>bruck | 32K shm_direct>ring
allgather hosts=2 world=1-9: 0 recursive_doubling>bruck | 32K ring
allgather hosts=3 world=1-9: 0 recursive_doubling>bruck | 32K ring
reduce_scatter hosts=1 world=1-9: 0 shm_direct>recursive_halving>ring | 512K shm_direct>ring
reduce_scatter hosts=2 world=1-9: 0 recursive_halving>ring | 512K ring
reduce_scatter hosts=3 world=1-9: 0 recursive_halving>ring | 512K ring
broadcast hosts=1 world=1-2: 0 binomial | 16K shm_direct>binomial
broadcast hosts=1 world=3-9: 0 binomial | 16K shm_direct>binomial | 512K shm_direct>chain>binomial
broadcast hosts=2 world=1-2: 0 binomial
broadcast hosts=2 world=3-9: 0 binomial | 512K chain>binomial
broadcast hosts=3 world=1-2: 0 binomial
broadcast hosts=3 world=3-9: 0 binomial | 512K chain>binomial
reduce hosts=1 world=1-9: 0 binomial
reduce hosts=2 world=1-9: 0 binomial
reduce hosts=3 world=1-9: 0 binomial
gather hosts=1 world=1-2: 0 linear
gather hosts=1 world=3-9: 0 binomial>linear | 64K linear
gather hosts=2 world=1-2: 0 linear
gather hosts=2 world=3-9: 0 binomial>linear | 64K linear
gather hosts=3 world=1-2: 0 linear
gather hosts=3 world=3-9: 0 binomial>linear | 64K linear
scatter hosts=1 world=1-2: 0 linear
scatter hosts=1 world=3-9: 0 binomial>linear | 64K linear
scatter hosts=2 world=1-2: 0 linear
scatter hosts=2 world=3-9: 0 binomial>linear | 64K linear
scatter hosts=3 world=1-2: 0 linear
scatter hosts=3 world=3-9: 0 binomial>linear | 64K linear
alltoall hosts=1 world=1-9: 0 shm_direct>pairwise
alltoall hosts=2 world=1-4: 0 scattered>pairwise
alltoall hosts=2 world=5-9: 0 pairwise
alltoall hosts=3 world=1-4: 0 scattered>pairwise
alltoall hosts=3 world=5-9: 0 pairwise
alltoallv hosts=1 world=1-9: 0 shm_direct>pairwise
alltoallv hosts=2 world=1-9: 0 hierarchical>pairwise
alltoallv hosts=3 world=1-9: 0 hierarchical>pairwise
)";
  EXPECT_EQ(grid_summary(builtin_tuning_table()), expected);
}

TEST_F(TunerTest, EnvironmentForcesAnAlgorithmThroughChooseAlgorithm) {
  ScopedEnv forced("BRAID_ALGO_ALLREDUCE", "tree");
  EXPECT_EQ(choose_algorithm(args(10), "").name, "tree");
  EXPECT_EQ(choose_algorithm(args(10), "ring").name, "ring");  // an explicit request still wins
  EXPECT_EQ(choose_algorithm(args(10, OpKind::kAllgather), "").name, builtin_choice(OpKind::kAllgather, 10));
}

TEST_F(TunerTest, UnknownNameInTheEnvironmentIsAnError) {
  ScopedEnv forced("BRAID_ALGO_BROADCAST", "ring");
  try {
    choose_algorithm(args(10, OpKind::kBroadcast), "");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("BRAID_ALGO_BROADCAST='ring'"), std::string::npos) << message;
    EXPECT_NE(message.find("binomial"), std::string::npos) << message;
  }
  // A real call fails the same way and leaves the communicator usable.
  float value = 1;
  EXPECT_THROW(broadcast(*comm_, &value, 1, DType::kF32, 0), InvalidArgument);
  EXPECT_NO_THROW(broadcast(*comm_, &value, 1, DType::kF32, 0, {.algorithm = "binomial"}));
}

// alltoallv is forced like the others (its tables match world size and host count only).
TEST_F(TunerTest, EnvironmentForcesAnAlltoallvAlgorithm) {
  ScopedEnv forced("BRAID_ALGO_ALLTOALLV", "pairwise");
  EXPECT_EQ(choose_algorithm(args(0, OpKind::kAlltoallv), "").name, "pairwise");
  const std::int64_t counts[] = {2}, displs[] = {0};
  const float send[2] = {1, 2};
  float recv[2] = {};
  alltoallv(*comm_, send, counts, displs, recv, counts, displs, DType::kF32);
  EXPECT_EQ(recv[0], 1);
  EXPECT_EQ(recv[1], 2);
}

TEST_F(TunerTest, UnknownAlltoallvNameInTheEnvironmentListsTheChoices) {
  ScopedEnv forced("BRAID_ALGO_ALLTOALLV", "ring");
  const std::int64_t counts[] = {1}, displs[] = {0};
  const float send = 1;
  float recv = 0;
  try {
    alltoallv(*comm_, &send, counts, displs, &recv, counts, displs, DType::kF32);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("BRAID_ALGO_ALLTOALLV='ring' is not an algorithm of alltoallv"), std::string::npos)
        << message;
    EXPECT_NE(message.find("(available: pairwise, shm_direct, hierarchical)"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(alltoallv(*comm_, &send, counts, displs, &recv, counts, displs, DType::kF32, {.algorithm = "pairwise"}));
  EXPECT_EQ(recv, 1);
  EXPECT_THROW(alltoallv(*comm_, &send, counts, displs, &recv, counts, displs, DType::kF32, {.algorithm = "ring"}),
               InvalidArgument);
}

TEST_F(TunerTest, EnvironmentIsReadOncePerCommunicator) {
  EXPECT_EQ(choose_algorithm(args(10), "").name, builtin_choice(OpKind::kAllreduce, 10));
  ScopedEnv forced("BRAID_ALGO_ALLREDUCE", "tree");
  EXPECT_EQ(choose_algorithm(args(10), "").name, builtin_choice(OpKind::kAllreduce, 10));  // already read
  auto later = fresh();
  EXPECT_EQ(choose_algorithm(args_on(*later, 10), "").name, "tree");
}

TEST_F(TunerTest, TuningFileIsLoadedOncePerCommunicator) {
  const std::string dir = ::testing::TempDir();
  const std::string tree_file = dir + "/braid_tuner_test_tree.json";
  const std::string bad_file = dir + "/braid_tuner_test_bad.json";
  std::ofstream(tree_file) << tuning_json({{{.op = OpKind::kAllreduce, .algorithm = "tree", .max_bytes = 400}}});
  std::ofstream(bad_file) << R"({"rules": [{"op": "allreduce", "algorithm": "tree", "min_bytes": 9, "max_bytes": 1}]})";
  {
    ScopedEnv file("BRAID_TUNING_FILE", tree_file);
    EXPECT_EQ(choose_algorithm(args(100), "").name, "tree");  // 400 bytes: the file's rule
    EXPECT_EQ(choose_algorithm(args(101), "").name, builtin_choice(OpKind::kAllreduce, 101));
    {
      ScopedEnv forced("BRAID_ALGO_ALLREDUCE", "ring");  // the environment beats the file
      auto other = fresh();
      EXPECT_EQ(choose_algorithm(args_on(*other, 100), "").name, "ring");
    }
    std::ofstream(tree_file) << "not json";  // loaded already: this communicator keeps its rules
    EXPECT_EQ(choose_algorithm(args(100), "").name, "tree");
    auto other = fresh();
    EXPECT_THROW(choose_algorithm(args_on(*other, 100), ""), InvalidArgument);
  }
  {
    ScopedEnv file("BRAID_TUNING_FILE", bad_file);
    auto other = fresh();
    for (int attempt = 0; attempt < 2; ++attempt) {  // a failed load is not cached
      try {
        choose_algorithm(args_on(*other, 100), "");
        ADD_FAILURE() << "no error";
      } catch (const InvalidArgument& e) {
        std::string message = e.what();
        EXPECT_NE(message.find(bad_file), std::string::npos) << message;
        EXPECT_NE(message.find("min_bytes 9 is larger than max_bytes 1"), std::string::npos) << message;
      }
    }
    EXPECT_EQ(choose_algorithm(args_on(*other, 100), "ring").name, "ring");  // explicit requests never read it
  }
  std::remove(tree_file.c_str());
  std::remove(bad_file.c_str());
}

}  // namespace
}  // namespace braid
