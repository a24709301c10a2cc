#include "braid/trace/trace_merge.h"

#include <filesystem>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "braid/base/atomic_file.h"
#include "braid/base/error.h"
#include "braid/trace/chrome_trace.h"
#include "braid/trace/step_counters.h"
#include "braid/trace/trace_reader.h"
#include "braid/trace/trace_test_util.h"

namespace braid::trace {
namespace {

using nlohmann::json;
using testing::kMs;
using testing::TempDir;

constexpr std::int64_t kSystem0 = 1'700'000'000'000'000'000LL;

// Rank 0 anchored at kSystem0, rank 1 created 5 ms later (by the system clock) with an
// unrelated steady clock: in the merge, rank 1's events must land 5 ms after rank 0's.
struct TwoRanks {
  TempDir dir;
  std::string rank0, rank1;
  TwoRanks() {
    TraceData r1 = testing::two_step_trace(1, kSystem0 + 5 * kMs);
    r1.anchor.steady_ns = 777 * kMs;
    for (auto& s : r1.steps) s.start_ns += (777 - 1000) * kMs;
    for (auto& c : r1.compute) c.start_ns += (777 - 1000) * kMs, c.end_ns += (777 - 1000) * kMs;
    for (auto& c : r1.comm) c.start_ns += (777 - 1000) * kMs, c.end_ns += (777 - 1000) * kMs;
    for (auto& m : r1.marks) m.at_ns += (777 - 1000) * kMs;
    rank1 = write_trace_file(r1, dir.path());
    rank0 = write_trace_file(testing::two_step_trace(0, kSystem0), dir.path());
  }
};

json load(const std::string& path) { return json::parse(read_whole_file(path)); }

TEST(TraceMergeTest, RanksBecomeProcessesShiftedByTheirClockAnchors) {
  TwoRanks in;
  TempDir out;
  MergeSummary summary = merge_trace_files({in.rank1, in.rank0}, out.file("merged.json"));
  ASSERT_EQ(summary.ranks.size(), 2u);
  EXPECT_EQ(summary.ranks[0].rank, 0);
  EXPECT_DOUBLE_EQ(summary.ranks[0].offset_us, 0.0);
  EXPECT_DOUBLE_EQ(summary.ranks[1].offset_us, 5000.0);
  EXPECT_FALSE(summary.several_hosts);

  json merged = load(out.file("merged.json"));
  json r0 = load(in.rank0), r1 = load(in.rank1);
  EXPECT_EQ(merged["traceEvents"].size(), r0["traceEvents"].size() + r1["traceEvents"].size());
  EXPECT_EQ(summary.events, merged["traceEvents"].size());
  std::map<int, std::vector<double>> compute_ts;  // by pid
  std::map<int, int> names;
  for (const json& e : merged["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "compute") compute_ts[e["pid"].get<int>()].push_back(e["ts"].get<double>());
    if (e["ph"] == "M" && e["name"] == "process_name") names[e["pid"].get<int>()]++;
  }
  EXPECT_EQ(compute_ts[0], (std::vector<double>{0.0, 10'000.0}));
  EXPECT_EQ(compute_ts[1], (std::vector<double>{5'000.0, 15'000.0}));
  EXPECT_EQ(names, (std::map<int, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(merged["otherData"]["merged"], true);
  EXPECT_EQ(merged["otherData"]["ranks"].size(), 2u);
}

TEST(TraceMergeTest, AMergedFileReadsBackAsOneTracePerRankWithTheSameCounters) {
  TwoRanks in;
  merge_trace_files({in.dir.path()}, in.dir.file("merged.json"));  // a directory as input
  std::vector<TraceData> ranks = read_trace_file(in.dir.file("merged.json"));
  ASSERT_EQ(ranks.size(), 2u);
  for (const TraceData& r : ranks) {
    std::vector<StepCounters> c = step_counters(r);
    ASSERT_EQ(c.size(), 2u) << "rank " << r.rank;
    EXPECT_EQ(c[0].comm_ns, 4 * kMs);
    EXPECT_EQ(c[0].exposed_comm_ns, 2 * kMs);
    EXPECT_EQ(c[1].wall_ns, 8 * kMs);
  }
  EXPECT_EQ(ranks[1].steps[0].start_ns - ranks[0].steps[0].start_ns, 5 * kMs);
}

template <typename E>
std::string merge_error(const std::vector<std::string>& inputs, const std::string& output) {
  try {
    merge_trace_files(inputs, output);
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "the merge did not throw the expected error";
  return "";
}

TEST(TraceMergeTest, BadInputsAreClearErrors) {
  TwoRanks in;
  TempDir out;
  std::string merged = out.file("merged.json");
  EXPECT_NE(merge_error<InvalidArgument>({in.rank0, in.rank0}, merged).find("rank 0 appears in both"),
            std::string::npos);
  EXPECT_NE(merge_error<InvalidArgument>({out.file("nope.json")}, merged).find("nope.json: no such file"),
            std::string::npos);
  EXPECT_NE(merge_error<InvalidArgument>({out.path()}, merged).find("no braid-trace-rank<R>.json"), std::string::npos);
  EXPECT_NE(merge_error<InvalidArgument>({}, merged).find("no input"), std::string::npos);
  merge_trace_files({in.rank0, in.rank1}, merged);
  EXPECT_NE(merge_error<InvalidArgument>({merged}, out.file("again.json")).find("already a merged trace"),
            std::string::npos);
  write_file_atomically(out.file("other.json"), R"({"traceEvents": []})");
  EXPECT_NE(merge_error<Corrupt>({out.file("other.json")}, out.file("x.json")).find("other.json: not a braid trace"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out.file("x.json")));
}

// Fields the merge copies but the format checks leave alone, of another type than braid
// writes: a Corrupt naming the file (it used to escape as nlohmann::json::type_error).
TEST(TraceMergeTest, AFieldOfTheWrongTypeIsCorruptNotAJsonException) {
  TwoRanks in;
  TempDir out;
  for (const char* field : {"hostname", "clock_steady_ns"}) {
    json trace = load(in.rank1);
    trace["otherData"][field] = json::array({1, 2});
    const std::string bad = out.file(std::string("bad-") + field + ".json");
    write_file_atomically(bad, trace.dump());
    EXPECT_NE(merge_error<Corrupt>({in.rank0, bad}, out.file("x.json")).find(bad + ": malformed braid trace"),
              std::string::npos)
        << field;
  }
  EXPECT_FALSE(std::filesystem::exists(out.file("x.json")));
}

}  // namespace
}  // namespace braid::trace
