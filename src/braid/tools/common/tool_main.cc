#include "braid/tools/common/tool_main.h"

#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "braid/base/error.h"

namespace braid::tools {

namespace {

void report(std::string_view tool, std::string_view message) {
  std::fputs(fmt::format("{}: {}\n", tool, message).c_str(), stderr);
}

// An error that happened on a rank, or between ranks, says where; a tool's own complaint
// about a file or a value reads better without the "braid::Corrupt [op ...]" prefix.
std::string message_of(const Error& e) {
  return e.context().rank >= 0 || e.context().peer >= 0 ? std::string(e.what()) : e.detail();
}

// The deepest subcommand that was selected (the app itself when none was).
const CLI::App& selected(const CLI::App& app) {
  const CLI::App* current = &app;
  while (!current->get_subcommands().empty()) current = current->get_subcommands().front();
  return *current;
}

// When `app` wanted a subcommand and got none: the word typed instead, by name, with the
// choices; "" when the error is about something else.
std::string missing_subcommand(const CLI::App& app) {
  if (app.get_require_subcommand_min() == 0 || !app.get_subcommands().empty()) return "";
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  const std::string choices = fmt::format("{}", fmt::join(names, ", "));
  for (const std::string& word : app.remaining()) {
    if (!word.starts_with('-')) return fmt::format("unknown subcommand '{}' (expected one of: {})", word, choices);
  }
  return fmt::format("a subcommand is required (one of: {})", choices);
}

}  // namespace

int run_guarded(std::string_view tool, const std::function<int()>& body, ToolPolicy policy) {
  try {
    return body();
  } catch (const InvalidArgument& e) {
    report(tool, e.detail());
    return policy.invalid_argument_exit;
  } catch (const Error& e) {
    report(tool, message_of(e));
    return kFailureExitCode;
  } catch (const std::bad_alloc&) {
    report(tool, "out of memory: the request needs more memory than this process could allocate");
    return kFailureExitCode;
  } catch (const std::exception& e) {
    report(tool, e.what());
    return kFailureExitCode;
  }
}

std::optional<int> parse_command_line(std::string_view tool, CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = missing_subcommand(selected(app));
    if (what.empty()) what = e.what();
    report(tool, fmt::format("{}\nRun with --help for more information.", what));
    return kUsageExitCode;
  }
}

int run_tool(std::string_view tool, CLI::App& app, int argc, char** argv, const std::function<int()>& body,
             ToolPolicy policy) {
  return run_guarded(
      tool,
      [&] {
        if (std::optional<int> code = parse_command_line(tool, app, argc, argv)) return *code;
        return body();
      },
      policy);
}

}  // namespace braid::tools
