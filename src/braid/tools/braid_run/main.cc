// braid-run: the local launcher (like torchrun / mpirun for one host). See docs/launcher.md.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/tools/braid_run/launcher.h"
#include "braid/tools/braid_run/launcher_options.h"
#include "braid/tools/braid_run/rank_process.h"
#include "braid/tools/common/tool_main.h"

namespace {

// A closed fd 0, 1 or 2 would be handed out by the next open()/pipe(), and a rank's output
// pipe could then land on the number it is about to be dup2'ed onto.
void ensure_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) ::open("/dev/null", O_RDWR);
  }
}

int fail(const std::string& message, int exit_code) {
  std::fprintf(stderr, "braid-run: %s\n", message.c_str());
  return exit_code;
}

// Its own parse outcome (launcher_options.h) already exits 2 on a usage error, and its
// InvalidArgument errors are its own failures (no free port: docs/launcher.md says 1); the
// shared guard adds that nothing, std::bad_alloc included, escapes main.
int launch(const std::vector<std::string>& args) {
  braid::launcher::ParseOutcome parsed = braid::launcher::parse_launcher_options(args);
  if (!parsed.options) {
    std::fputs(parsed.out.c_str(), stdout);
    std::fputs(parsed.err.c_str(), stderr);
    return parsed.exit_code;
  }
  try {
    return braid::launcher::run_job(*parsed.options);
  } catch (const braid::launcher::ExecError& e) {
    return fail(e.detail(), e.exit_code());
  } catch (const braid::Error& e) {
    return fail(e.detail(), 1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ensure_standard_fds_open();
  const std::vector<std::string> args(argv + 1, argv + argc);
  return braid::tools::run_guarded("braid-run", [&] { return launch(args); },
                                   {.invalid_argument_exit = braid::tools::kFailureExitCode});
}
