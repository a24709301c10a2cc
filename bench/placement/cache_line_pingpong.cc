// braid-cache-line-pingpong: how long one cache line takes to go from one CPU to another and
// back, measured over time inside one launch. Issue 25 item 4 asks why this VM's collectives
// land in a fast or a slow mode: a 2-rank 8-byte allreduce is a cache-line round trip, so if
// this bare round trip shows the same two modes, braid's code is not what decides them; if
// the mode is fixed for a launch it follows what a launch chooses (page placement), if it
// flips inside one launch it follows the host (where the hypervisor runs the vCPUs).
//
//   braid-cache-line-pingpong [--cpus 0,1] [--seconds 3] [--window-ms 100]
//
// Two processes (fork), each pinned to one CPU, share one anonymous page; they take turns
// incrementing a counter in one cache line (no syscalls, pause between polls). Prints one line
// per window: its start (s), round trips in it and the mean round trip (ns).
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <immintrin.h>
#include <new>
#include <vector>

#include <CLI/CLI.hpp>

namespace {

using Clock = std::chrono::steady_clock;

struct alignas(64) Shared {
  std::atomic<std::uint64_t> turn{0};  // even: the first process's turn, odd: the second's
  std::atomic<bool> stop{false};
};

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    std::perror("sched_setaffinity");
    _exit(2);
  }
}

// The second process: answers every ping until told to stop.
[[noreturn]] void answer(Shared& s, int cpu) {
  pin(cpu);
  std::uint64_t seen = 1;
  while (!s.stop.load(std::memory_order_relaxed)) {
    if (s.turn.load(std::memory_order_acquire) == seen) {
      s.turn.store(seen + 1, std::memory_order_release);
      seen += 2;
    } else {
      _mm_pause();
    }
  }
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A cache line's round trip between two pinned CPUs, window by window (issue 25 item 4)"};
  std::vector<int> cpus{0, 1};
  double seconds = 3;
  int window_ms = 100;
  app.add_option("--cpus", cpus, "the two CPUs")->delimiter(',')->expected(2);
  app.add_option("--seconds", seconds, "how long to measure")->check(CLI::PositiveNumber);
  app.add_option("--window-ms", window_ms, "the length of one printed window")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    std::perror("mmap");
    return 2;
  }
  auto* shared = new (page) Shared;
  const pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 2;
  }
  if (child == 0) answer(*shared, cpus[1]);
  pin(cpus[0]);

  std::printf("# cpus %d,%d, windows of %d ms: start_s round_trips mean_ns\n", cpus[0], cpus[1], window_ms);
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  std::uint64_t next = 0;  // the value this process waits for, then bumps
  while (Clock::now() < end) {
    const auto window_start = Clock::now();
    const auto window_end = window_start + std::chrono::milliseconds(window_ms);
    std::uint64_t trips = 0;
    while (Clock::now() < window_end) {
      for (int i = 0; i < 256; ++i, ++trips, next += 2) {
        shared->turn.store(next + 1, std::memory_order_release);
        while (shared->turn.load(std::memory_order_acquire) != next + 2) _mm_pause();
      }
    }
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - window_start).count();
    std::printf("%.2f %llu %.0f\n", std::chrono::duration<double>(window_start - start).count(),
                static_cast<unsigned long long>(trips), ns / static_cast<double>(trips));
  }
  shared->stop.store(true);
  waitpid(child, nullptr, 0);
  return 0;
}
