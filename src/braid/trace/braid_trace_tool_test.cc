// The braid-trace binary from the outside: exit codes and messages a user sees.
#include <stdio.h>
#include <sys/wait.h>

#include <string>

#include <gtest/gtest.h>

#include "launch.h"

#include "braid/trace/atomic_file.h"
#include "braid/trace/chrome_trace.h"
#include "braid/trace/trace_test_util.h"

namespace braid::trace {
namespace {

using testing::TempDir;

using braid::testing::ToolResult;

ToolResult run_tool(const std::string& args) { return braid::testing::run_tool("braid-trace", args); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(BraidTraceToolTest, HelpDescribesEverySubcommand) {
  ToolResult top = run_tool("--help");
  EXPECT_EQ(top.exit_code, 0) << top.output;
  EXPECT_TRUE(contains(top.output, "merge") && contains(top.output, "summary")) << top.output;
  ToolResult merge = run_tool("merge --help");
  EXPECT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_TRUE(contains(merge.output, "system-clock")) << merge.output;
  ToolResult summary = run_tool("summary --help");
  EXPECT_EQ(summary.exit_code, 0) << summary.output;
  EXPECT_TRUE(contains(summary.output, "exposed")) << summary.output;
  EXPECT_NE(run_tool("").exit_code, 0);  // a subcommand is required
}

TEST(BraidTraceToolTest, MergeAndSummaryOfRankFiles) {
  TempDir dir;
  write_trace_file(testing::two_step_trace(0, 1'000'000'000), dir.path());
  write_trace_file(testing::two_step_trace(1, 1'002'000'000), dir.path());
  std::string merged = dir.file("merged.json");
  ToolResult merge = run_tool("merge " + merged + " " + dir.path());
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_TRUE(contains(merge.output, "offset 2.000 ms")) << merge.output;
  EXPECT_TRUE(contains(merge.output, "2 ranks")) << merge.output;

  ToolResult summary = run_tool("summary " + merged);
  ASSERT_EQ(summary.exit_code, 0) << summary.output;
  EXPECT_TRUE(contains(summary.output, "exposed ms")) << summary.output;
  // rank 1, step 0: wall 10 ms, compute 6, comm 4, exposed 2, overlap 50 %, 2048 B on the wire.
  EXPECT_TRUE(contains(summary.output, "   1      0    10.000       6.000     4.000       2.000       50.0     0.002"))
      << summary.output;
}

TEST(BraidTraceToolTest, ErrorsNameTheFile) {
  TempDir dir;
  ToolResult missing = run_tool("summary " + dir.file("missing.json"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.output, "braid-trace: " + dir.file("missing.json"))) << missing.output;

  write_file_atomically(dir.file("broken.json"), "{\"traceEvents\": [");
  ToolResult broken = run_tool("summary " + dir.file("broken.json"));
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_TRUE(contains(broken.output, dir.file("broken.json") + ": not valid JSON")) << broken.output;

  write_file_atomically(dir.file("chrome.json"), R"({"traceEvents": [], "otherData": {}})");
  ToolResult foreign = run_tool("merge " + dir.file("out.json") + " " + dir.file("chrome.json"));
  EXPECT_EQ(foreign.exit_code, 1);
  EXPECT_TRUE(contains(foreign.output, dir.file("chrome.json") + ": not a braid trace")) << foreign.output;

  ToolResult no_inputs = run_tool("merge " + dir.file("out.json"));
  EXPECT_NE(no_inputs.exit_code, 0);
  EXPECT_NE(no_inputs.exit_code, 1) << "a usage error, not a processing error: " << no_inputs.output;
}

}  // namespace
}  // namespace braid::trace
