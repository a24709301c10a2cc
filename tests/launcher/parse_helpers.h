// Parsing braid-run command lines in the unit tests: one that must parse, one that must fail.
#pragma once

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "braid/tools/braid_run/launcher_options.h"

namespace braid::launcher {

inline ParseOutcome parse(std::vector<std::string> args) { return parse_launcher_options(args); }

// The options of a command line that must parse.
inline LauncherOptions parse_ok(std::vector<std::string> args) {
  ParseOutcome outcome = parse(std::move(args));
  EXPECT_TRUE(outcome.options.has_value()) << outcome.err;
  return outcome.options.value_or(LauncherOptions{});
}

// The message of a command line that must be rejected as a usage error.
inline std::string parse_error(std::vector<std::string> args) {
  ParseOutcome outcome = parse(std::move(args));
  EXPECT_FALSE(outcome.options.has_value());
  EXPECT_EQ(outcome.exit_code, kUsageExitCode);
  EXPECT_THAT(outcome.err, ::testing::HasSubstr("braid-run: "));
  return outcome.err;
}

}  // namespace braid::launcher
