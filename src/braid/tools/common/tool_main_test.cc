// The exit codes and messages every tool's main() gets from tool_main.h.
#include "braid/tools/common/tool_main.h"

#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::tools {
namespace {

// Runs `body` under run_guarded and returns (exit code, stderr).
std::pair<int, std::string> guarded(const std::function<int()>& body, ToolPolicy policy = {}) {
  ::testing::internal::CaptureStderr();
  const int code = run_guarded("tool", body, policy);
  return {code, ::testing::internal::GetCapturedStderr()};
}

TEST(ToolMainTest, ExceptionsBecomeOneLineAndAnExitCode) {
  EXPECT_EQ(guarded([] { return 3; }).first, 3);
  auto [usage, usage_text] = guarded([]() -> int { throw InvalidArgument({.op = "x"}, "--seq 0 must be >= 1"); });
  EXPECT_EQ(usage, 2);
  EXPECT_EQ(usage_text, "tool: --seq 0 must be >= 1\n");
  auto [memory, memory_text] = guarded([]() -> int { throw std::bad_alloc(); });
  EXPECT_EQ(memory, 1);
  EXPECT_NE(memory_text.find("tool: out of memory"), std::string::npos) << memory_text;
  auto [other, other_text] = guarded([]() -> int { throw std::out_of_range("stoull"); });
  EXPECT_EQ(other, 1);
  EXPECT_EQ(other_text, "tool: stoull\n");
  auto [rank, rank_text] = guarded([]() -> int { throw Timeout({.rank = 1, .peer = 0, .op = "recv"}, "waited 2 s"); });
  EXPECT_EQ(rank, 1);
  EXPECT_NE(rank_text.find("rank 1, peer 0"), std::string::npos) << rank_text;  // where it happened
}

TEST(ToolMainTest, PolicyMapsInvalidArgumentForFileTools) {
  EXPECT_EQ(guarded([]() -> int { throw InvalidArgument({}, "a.json: no such file"); }, {.invalid_argument_exit = 1})
                .first,
            1);
}

// Parses `args` with an app of two subcommands, one with a flag; returns (exit code or -1, stderr).
std::pair<int, std::string> parse(std::vector<std::string> args) {
  CLI::App app{"test"};
  app.require_subcommand(1);
  int n = 0;
  app.add_subcommand("merge", "")->add_option("-n", n);
  app.add_subcommand("summary", "");
  std::vector<char*> argv{const_cast<char*>("tool")};
  for (std::string& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::optional<int> code = parse_command_line("tool", app, static_cast<int>(argv.size()), argv.data());
  ::testing::internal::GetCapturedStdout();
  return {code.value_or(-1), ::testing::internal::GetCapturedStderr()};
}

TEST(ToolMainTest, UsageErrorsExitTwoAndNameWhatWasTyped) {
  EXPECT_EQ(parse({"merge", "-n", "3"}).first, -1);
  EXPECT_EQ(parse({"--help"}).first, 0);
  EXPECT_EQ(parse({"merge", "--help"}).first, 0);
  auto [unknown, unknown_text] = parse({"mrege"});
  EXPECT_EQ(unknown, 2);
  EXPECT_NE(unknown_text.find("tool: unknown subcommand 'mrege' (expected one of: merge, summary)"), std::string::npos)
      << unknown_text;
  auto [none, none_text] = parse({});
  EXPECT_EQ(none, 2);
  EXPECT_NE(none_text.find("a subcommand is required (one of: merge, summary)"), std::string::npos) << none_text;
  auto [flag, flag_text] = parse({"merge", "--bogus"});
  EXPECT_EQ(flag, 2);
  EXPECT_NE(flag_text.find("--bogus"), std::string::npos) << flag_text;
  EXPECT_EQ(parse({"merge", "-n", "x"}).first, 2);  // CLI11's ConversionError (its own code: 106)
  EXPECT_EQ(parse({"merge", "-n"}).first, 2);
}

}  // namespace
}  // namespace braid::tools
