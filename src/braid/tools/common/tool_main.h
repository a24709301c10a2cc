// What every braid tool's main() does around its own work: parse the command line with CLI11,
// run the body, and turn whatever escapes into one line on stderr and a documented exit code,
// so that no tool aborts with an uncaught exception or returns CLI11's private codes (104,
// 105, 106, 109, 114) where its docs promise 2.
//
// Exit codes (docs/errors.md, "Exit codes of the tools"):
//   0  --help / --help-all, or the body returned 0
//   2  a usage error: CLI11 refused the command line (unknown flag or subcommand, a missing or
//      malformed value) or the body threw braid::InvalidArgument (a value braid refuses)
//   1  any other failure: braid::Error (printed with its rank/peer context when it has one),
//      std::bad_alloc ("out of memory"), any other std::exception
// A tool whose InvalidArgument errors are about its input files rather than its command line
// (braid-trace, braid-run's own failures) maps them to 1 with ToolPolicy.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include <CLI/CLI.hpp>

namespace braid::tools {

inline constexpr int kUsageExitCode = 2;
inline constexpr int kFailureExitCode = 1;

struct ToolPolicy {
  int invalid_argument_exit = kUsageExitCode;
};

// Runs `body` and returns its exit code; an exception leaving it is printed as
// "<tool>: <message>" on stderr and mapped to an exit code as above.
int run_guarded(std::string_view tool, const std::function<int()>& body, ToolPolicy policy = {});

// Parses argv with `app`. Returns the exit code to leave with at once (0 after --help, 2 after
// a usage error, printed as "<tool>: <what CLI11 said>"), or nullopt to go on. A word that is not
// one of the app's subcommands is reported by name: "unknown subcommand 'foo' (expected: ...)".
// Exceptions other than CLI::ParseError (a flag callback's InvalidArgument) propagate.
std::optional<int> parse_command_line(std::string_view tool, CLI::App& app, int argc, char** argv);

// The whole main(): parse_command_line, then `body`, both under run_guarded.
int run_tool(std::string_view tool, CLI::App& app, int argc, char** argv, const std::function<int()>& body,
             ToolPolicy policy = {});

}  // namespace braid::tools
