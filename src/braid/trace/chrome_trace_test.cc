#include "braid/trace/chrome_trace.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "braid/base/atomic_file.h"
#include "braid/base/error.h"
#include "braid/trace/step_counters.h"
#include "braid/trace/trace_json.h"
#include "braid/trace/trace_reader.h"
#include "braid/trace/trace_recorder.h"
#include "braid/trace/trace_test_util.h"

namespace braid::trace {
namespace {

using nlohmann::json;
using testing::kMs;
using testing::TempDir;

json exported(const TraceData& d) { return json::parse(to_chrome_trace_json(d)); }

std::vector<json> events_where(const json& trace, const std::string& ph, const std::string& cat = "") {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == ph && (cat.empty() || e.value("cat", "") == cat)) out.push_back(e);
  }
  return out;
}

TEST(ChromeTraceTest, EveryEventHasTheFieldsViewersNeed) {
  json trace = exported(testing::two_step_trace(3, 0));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  ASSERT_GT(trace["traceEvents"].size(), 10u);
  std::set<std::string> phases;
  for (const json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e["ph"].is_string()) << e;
    ASSERT_TRUE(e["ts"].is_number()) << e;
    ASSERT_EQ(e["pid"], 3) << e;
    ASSERT_TRUE(e["tid"].is_number_integer()) << e;
    ASSERT_TRUE(e["name"].is_string()) << e;
    if (e["ph"] == "X") {
      ASSERT_GE(e["dur"].get<double>(), 0.0) << e;
    }
    phases.insert(e["ph"].get<std::string>());
  }
  EXPECT_EQ(phases, (std::set<std::string>{"M", "X", "i", "C"}));
}

TEST(ChromeTraceTest, MetadataNamesTheRankAndItsLanes) {
  TraceData d = testing::two_step_trace(3, 0);
  d.comm[0].lane = 4;
  d.lane_names.push_back({.lane = 4, .name = "tp comm"});
  json trace = exported(d);
  std::map<int, std::string> lanes;
  std::string process;
  for (const json& e : events_where(trace, "M")) {
    if (e["name"] == "process_name") process = e["args"]["name"];
    if (e["name"] == "thread_name") lanes[e["tid"].get<int>()] = e["args"]["name"];
  }
  EXPECT_EQ(process, "rank 3");
  EXPECT_EQ(lanes, (std::map<int, std::string>{{0, "compute"}, {1, "comm"}, {4, "tp comm"}}));
}

TEST(ChromeTraceTest, SpansAreCompleteEventsInMicrosecondsFromTheAnchor) {
  json trace = exported(testing::two_step_trace(0, 0));
  std::vector<json> compute = events_where(trace, "X", "compute");
  std::vector<json> comm = events_where(trace, "X", "comm");
  ASSERT_EQ(compute.size(), 2u);
  ASSERT_EQ(comm.size(), 2u);
  // Step 1's compute starts 10 ms after the anchor and lasts 6 ms.
  EXPECT_DOUBLE_EQ(compute[1]["ts"].get<double>(), 10'000.0);
  EXPECT_DOUBLE_EQ(compute[1]["dur"].get<double>(), 6'000.0);
  EXPECT_EQ(compute[1]["tid"], kComputeLane);
  EXPECT_EQ(compute[1]["args"]["step"], 1);
  const json& op = comm[0];
  EXPECT_DOUBLE_EQ(op["ts"].get<double>(), 4'000.0);
  EXPECT_DOUBLE_EQ(op["dur"].get<double>(), 4'000.0);
  EXPECT_EQ(op["tid"], kCommLane);
  EXPECT_EQ(op["args"]["bytes"], 4096);
  EXPECT_EQ(op["args"]["wire_bytes"], 2048);
  EXPECT_EQ(op["args"]["algorithm"], "ring");
  EXPECT_EQ(op["args"]["codec"], "fp16");
  EXPECT_EQ(op["args"]["step"], 0);
}

TEST(ChromeTraceTest, NanosecondTimesSurviveTheMicrosecondFormat) {
  TraceData d;
  d.anchor.steady_ns = 5;
  d.compute.push_back({.name = "c", .start_ns = 5 + 3'600'000'000'123LL, .end_ns = 5 + 3'600'000'000'124LL});
  json trace = exported(d);
  std::vector<json> x = events_where(trace, "X");
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(json_format::us_to_ns(x[0]["ts"].get<double>()), 3'600'000'000'123LL);
}

TEST(ChromeTraceTest, StepsMarksAndCountersAreExported) {
  json trace = exported(testing::two_step_trace(0, 0));
  std::vector<json> steps = events_where(trace, "i", "step");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1]["args"]["step"], 1);
  EXPECT_EQ(steps[1]["s"], "p");
  EXPECT_EQ(events_where(trace, "i", "mark").size(), 2u);
  std::vector<json> counters = events_where(trace, "C");
  ASSERT_EQ(counters.size(), 6u);  // three tracks, two steps
  bool found = false;
  for (const json& c : counters) {
    if (c["name"] == "comm time (ms)") {
      EXPECT_DOUBLE_EQ(c["args"]["comm"].get<double>(), 4.0);
      EXPECT_DOUBLE_EQ(c["args"]["exposed"].get<double>(), 2.0);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(ChromeTraceTest, OtherDataCarriesTheFormatRankAndClockAnchor) {
  json trace = exported(testing::two_step_trace(2, 1234567));
  const json& other = trace["otherData"];
  EXPECT_EQ(other["braid_trace"], 1);
  EXPECT_EQ(other["rank"], 2);
  EXPECT_EQ(other["clock_system_ns"], 1234567);
  EXPECT_EQ(other["clock_steady_ns"], 1000 * kMs);
  EXPECT_EQ(other["hostname"], "testhost");
}

TEST(ChromeTraceTest, WriteTraceFileCreatesTheDirectoryAndReadsBackTheSameCounters) {
  TempDir dir;
  TraceData d = testing::two_step_trace(5, 0);
  d.comm[1].failed = true;
  std::string path = write_trace_file(d, dir.file("sub/dir"));
  EXPECT_EQ(path, dir.file("sub/dir/braid-trace-rank5.json"));
  std::vector<TraceData> back = read_trace_file(path);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].rank, 5);
  EXPECT_EQ(back[0].comm.size(), 2u);
  EXPECT_TRUE(back[0].comm[1].failed);
  EXPECT_EQ(back[0].marks.size(), 2u);
  std::vector<StepCounters> want = step_counters(d), got = step_counters(back[0]);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].step, want[i].step);
    EXPECT_EQ(got[i].wall_ns, want[i].wall_ns);
    EXPECT_EQ(got[i].compute_ns, want[i].compute_ns);
    EXPECT_EQ(got[i].comm_ns, want[i].comm_ns);
    EXPECT_EQ(got[i].exposed_comm_ns, want[i].exposed_comm_ns);
    EXPECT_EQ(got[i].wire_bytes, want[i].wire_bytes);
  }
}

TEST(ChromeTraceTest, ARecordersFileIsValidJson) {
  TempDir dir;
  TraceRecorder t(TraceOptions{.rank = 0, .output_dir = dir.path()});
  t.step(0);
  { ComputeScope c(t, "name with \"quotes\" and \\ and \n newline"); }
  std::string path = t.flush();
  std::vector<TraceData> back = read_trace_file(path);
  ASSERT_EQ(back.size(), 1u);
  ASSERT_EQ(back[0].compute.size(), 1u);
  EXPECT_EQ(back[0].compute[0].name, "name with \"quotes\" and \\ and \n newline");
}

// Writes `text` to a file in `dir` and returns the message read_trace_file throws for it.
template <typename E>
std::string read_error(const TempDir& dir, const std::string& text) {
  std::string path = dir.file("input.json");
  write_file_atomically(path, text);
  try {
    read_trace_file(path);
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << text;
  return "";
}

TEST(TraceReaderTest, BadFilesAreReportedWithTheirName) {
  TempDir dir;
  EXPECT_THROW(read_trace_file(dir.file("missing.json")), InvalidArgument);
  EXPECT_NE(read_error<Corrupt>(dir, "{\"traceEvents\": [").find("not valid JSON"), std::string::npos);
  // A number past a double made nlohmann throw out_of_range, not Corrupt (trace_reader_fuzz).
  EXPECT_NE(read_error<Corrupt>(dir, "9E99999").find("not valid JSON"), std::string::npos);
  EXPECT_NE(read_error<Corrupt>(dir, R"({"traceEvents": [], "otherData": {"braid_trace": 4294967297, "rank": 0}})")
                .find("braid trace format 4294967297"),
            std::string::npos);  // not wrapped to version 1
  EXPECT_NE(read_error<Corrupt>(dir, "[1, 2]").find("no \"traceEvents\""), std::string::npos);
  EXPECT_NE(read_error<Corrupt>(dir, "{\"traceEvents\": []}").find("not a braid trace"), std::string::npos);
  EXPECT_NE(read_error<Corrupt>(dir, R"({"traceEvents": [], "otherData": {"braid_trace": 99, "rank": 0}})")
                .find("format 99"),
            std::string::npos);
  const char* no_ts = R"({"traceEvents": [{"ph": "X", "pid": 0, "tid": 0, "dur": 1}],
                          "otherData": {"braid_trace": 1, "rank": 0}})";
  EXPECT_NE(read_error<Corrupt>(dir, no_ts).find("traceEvents[0] has no numeric \"ts\""), std::string::npos);
  const char* negative = R"({"traceEvents": [{"ph": "X", "pid": 0, "tid": 0, "ts": 0, "dur": -1}],
                             "otherData": {"braid_trace": 1, "rank": 0}})";
  EXPECT_NE(read_error<Corrupt>(dir, negative).find("dur"), std::string::npos);
  const char* stranger = R"({"traceEvents": [{"ph": "i", "pid": 9, "tid": 0, "ts": 0}],
                             "otherData": {"braid_trace": 1, "rank": 0}})";
  EXPECT_NE(read_error<Corrupt>(dir, stranger).find("pid 9"), std::string::npos);
  const char* wrong_type = R"({"traceEvents": [{"ph": "X", "cat": "comm", "pid": 0, "tid": 1, "ts": 0, "dur": 1,
                               "args": {"bytes": "many"}}], "otherData": {"braid_trace": 1, "rank": 0}})";
  EXPECT_NE(read_error<Corrupt>(dir, wrong_type).find(R"(traceEvents[0] args field "bytes" is not an integer)"),
            std::string::npos);
}

// Names are any bytes the program passed (and the hostname what the system said): one that is
// not UTF-8 is written with U+FFFD in its place, not thrown as nlohmann's type_error.
TEST(ChromeTraceTest, NamesThatAreNotUtf8AreWrittenWithReplacementCharacters) {
  TraceData d = testing::two_step_trace(0, 0);
  d.compute[0].name = "fc\xff\xfe" "1";
  d.hostname = "host\x80";
  TempDir dir;
  std::string path;
  ASSERT_NO_THROW(path = write_trace_file(d, dir.path()));
  std::vector<TraceData> back = read_trace_file(path);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].compute[0].name, "fc\xef\xbf\xbd\xef\xbf\xbd" "1");
  EXPECT_EQ(back[0].hostname, "host\xef\xbf\xbd");
}

}  // namespace
}  // namespace braid::trace
