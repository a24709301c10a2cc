// The check every tool test makes of a command line the tool must refuse: exit status 2 (a
// usage error, docs/errors.md "Exit codes of the tools") and a message naming the problem.
// Header-only, for GoogleTest files (the harness library itself does not link GoogleTest).
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "launch.h"

namespace braid::testing {

inline void expect_usage_error(const std::string& tool, const std::string& args, const std::string& message) {
  ToolResult r = run_tool(tool, args);
  EXPECT_EQ(r.exit_code, 2) << tool << " " << args << "\n" << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << tool << " " << args << "\n" << r.output;
}

}  // namespace braid::testing
