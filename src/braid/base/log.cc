#include "braid/base/log.h"

#include <unistd.h>

#include "braid/base/env.h"

namespace braid::log {

namespace {

// Logging cannot throw (it runs on error paths), so an unknown level is reported on stderr,
// once, and warn is used; Communicator::init refuses it outright (env::check_all).
Level parse_level() {
  std::string text = env::get_or_default(env::kLogLevel);
  if (std::string problem = env::problem(env::kLogLevel, text); !problem.empty()) {
    std::string line = fmt::format("braid warn: {}='{}' {}; using warn\n", env::kLogLevel.name, text, problem);
    ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
    return Level::kWarn;
  }
  if (text == "error") return Level::kError;
  if (text == "info") return Level::kInfo;
  if (text == "debug") return Level::kDebug;
  return Level::kWarn;
}

// Read once: logging must not depend on call order, and the level does not change mid-run.
Level configured_level() {
  static const Level level = parse_level();
  return level;
}

const char* level_name(Level level) {
  switch (level) {
    case Level::kError: return "error";
    case Level::kWarn: return "warn";
    case Level::kInfo: return "info";
    case Level::kDebug: return "debug";
  }
  return "?";
}

}  // namespace

bool enabled(Level level) { return level <= configured_level(); }

void write(Level level, const std::string& message) {
  std::string line = fmt::format("braid {}: {}\n", level_name(level), message);
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace braid::log
