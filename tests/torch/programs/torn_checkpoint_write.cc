// LD_PRELOADed by train_kill_resume_test into braid-run and every rank: stops a rank in the
// middle of writing a checkpoint, so that the test can kill the whole job there and prove that
// a half-written checkpoint is never taken for a complete one. Timing could not promise that:
// a save writes its few megabytes in milliseconds, and a kill aimed at it from outside lands
// before or after as often as inside.
//
// BRAID_TEST_TORN_WRITE=SUBSTRING names the file: the first write() of at least 64 bytes to a
// temporary file (".tmp." in its path: braid's write_file_atomically) whose path contains
// SUBSTRING, after BRAID_TEST_TORN_WRITE_SKIP (default 0) such writes in this process, writes
// only half of its bytes, prints "braid-test: torn write of PATH (H of N bytes); stopped" to
// stderr and stops the process (SIGSTOP). write_file_atomically writes a file's content in one
// call, so the Nth matching write is the file's Nth save. Unset, every write passes through.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using WriteFn = ssize_t (*)(int, const void*, size_t);

WriteFn real_write() {
  static WriteFn fn = reinterpret_cast<WriteFn>(dlsym(RTLD_NEXT, "write"));
  return fn;
}

std::string path_of(int fd) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char target[4096];
  ssize_t n = ::readlink(link, target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string();
}

// Whether this write is the one to tear (counts the matching writes it lets through).
bool tears(int fd, size_t count) {
  static const char* wanted = std::getenv("BRAID_TEST_TORN_WRITE");
  static long skip = std::getenv("BRAID_TEST_TORN_WRITE_SKIP") ? std::atol(std::getenv("BRAID_TEST_TORN_WRITE_SKIP")) : 0;
  if (wanted == nullptr || *wanted == '\0' || count < 64) return false;
  std::string path = path_of(fd);
  if (path.find(".tmp.") == std::string::npos || path.find(wanted) == std::string::npos) return false;
  return skip-- == 0;
}

thread_local bool inside = false;  // fprintf below writes too

}  // namespace

extern "C" ssize_t write(int fd, const void* buffer, size_t count) {
  if (inside || !tears(fd, count)) return real_write()(fd, buffer, count);
  inside = true;
  size_t half = count / 2;
  ssize_t written = real_write()(fd, buffer, half);
  std::fprintf(stderr, "braid-test: torn write of %s (%zu of %zu bytes); stopped\n", path_of(fd).c_str(), half, count);
  std::fflush(stderr);
  ::raise(SIGSTOP);  // the test kills the job now; nothing below runs in it
  inside = false;
  return written;
}
