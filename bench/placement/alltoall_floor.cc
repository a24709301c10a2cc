// braid-alltoall-floor: the least time an alltoall of one host can take when its ranks
// outnumber the cores, with no library around it. Issue 22 asks braid's alltoallv for 1.2x
// Open MPI's on 4 ranks; on a 2-core machine both libraries take about the same time at 1 MiB.
// This asks whether any implementation could do better: every rank copies each of its blocks
// once (its own with memcpy, its peers' straight into their recv with process_vm_writev, as
// braid's and Open MPI's single-copy paths do), and then, as a collective must before it
// returns, knows that its recv is complete. How it learns that is the variable:
//
//   none     no synchronisation at all: the copying alone (the slowest rank's batch; the ranks
//            take turns on the cores, so this is about ranks / cores times one rank's copying);
//   yield    a barrier whose waiters call sched_yield (braid's shared-memory wait), after the
//            copies: not enough for a real collective, whose ranks must not write into a
//            peer's recv before that peer has entered the call (it may still be using it);
//   yield2   that barrier before the copies too: the least a real collective synchronises;
//   futex    a barrier whose waiters sleep in the kernel, woken by the last to arrive;
//   claimed  no barrier: each block is copied by whichever of its two ends gets to it first
//            (pushed by its sender or pulled by its receiver), and a rank returns once every
//            block it sends or receives is done, so the ranks that run do the copying of
//            those that wait for a core.
//
//   braid-alltoall-floor [--ranks 4] [--bytes 1M] [--iterations 2000] [--batch 100] [--rounds 3]
//
// --bytes is what each rank sends in all (its own block included), as braid-bench's alltoall
// size. --bytes 0 copies nothing: what is left is the synchronisation alone, the floor of any
// one-host collective of a few bytes (an 8-byte allreduce needs one barrier per call: yield). Every round runs each mode once, in turn (fresh processes each time). Timed as
// braid-bench times a collective: batches of --batch calls, a batch's time that of its slowest
// rank, divided by the calls; printed per mode, the median and 10th percentile over the rounds'
// batches.
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace {

constexpr int kMaxRanks = 16;
enum class Mode { kNone, kYield, kYield2, kFutex, kClaimed };
constexpr const char* kModeNames[] = {"none", "yield", "yield2", "futex", "claimed"};
constexpr int kModes = 5;

// One page shared by the ranks of a run.
struct Shared {
  std::atomic<int> started{0}, finished{0};
  pid_t pid[kMaxRanks];
  std::byte* send[kMaxRanks];
  std::byte* recv[kMaxRanks];
  std::atomic<long> arrived{0};        // yield, yield2: the barrier's count
  std::atomic<int> generation{0}, waiting{0};  // futex
  std::atomic<long> entered[kMaxRanks];        // claimed: the last call each rank has entered
  std::atomic<long> claimed[kMaxRanks][kMaxRanks], copied[kMaxRanks][kMaxRanks];  // [sender][receiver]
};

void futex(std::atomic<int>* word, int op, int value) {
  ::syscall(SYS_futex, reinterpret_cast<int*>(word), op, value, nullptr, nullptr, 0);
}

void wait_for(const std::atomic<int>& counter, int target) {
  while (counter.load() < target) ::sched_yield();
}

// Copies block (from -> to) from rank `me`'s side: pushed when `me` sends it, else pulled.
void copy_block(Shared& s, int me, int from, int to, std::size_t block) {
  if (block == 0) return;
  const bool push = from == me;
  const int peer = push ? to : from;
  iovec local{push ? s.send[me] + block * static_cast<std::size_t>(to) : s.recv[me] + block * static_cast<std::size_t>(from), block};
  iovec remote{push ? s.recv[peer] + block * static_cast<std::size_t>(me) : s.send[peer] + block * static_cast<std::size_t>(me), block};
  ssize_t done = push ? ::process_vm_writev(s.pid[peer], &local, 1, &remote, 1, 0)
                      : ::process_vm_readv(s.pid[peer], &local, 1, &remote, 1, 0);
  if (done != static_cast<ssize_t>(block)) {
    std::perror("process_vm_writev/readv");
    std::_Exit(1);
  }
}

// Every block that has `me` at one end, each copied by whichever end claims it first.
void claimed_call(Shared& s, int n, int me, long call, std::size_t block) {
  s.entered[me].store(call);
  std::vector<char> done(2 * static_cast<std::size_t>(n), 0);
  int left = 2 * (n - 1);
  while (left > 0) {
    bool progressed = false;
    for (int k = 1; k < n; ++k) {
      const int q = (me + k) % n;
      if (s.entered[q].load() < call) continue;  // its buffers for this call are not posted yet
      for (int out = 0; out < 2; ++out) {
        char& mine = done[static_cast<std::size_t>(out * n + q)];
        if (mine) continue;
        const int from = out ? me : q, to = out ? q : me;
        long expected = call - 1;
        if (s.claimed[from][to].compare_exchange_strong(expected, call)) {
          copy_block(s, me, from, to, block);
          s.copied[from][to].store(call);
        }
        if (s.copied[from][to].load() >= call) mine = 1, --left, progressed = true;
      }
    }
    if (!progressed) ::sched_yield();
  }
}

// Runs `iterations` calls in batches of `batch`; batch b's seconds per call into seconds[b].
void rank_main(Shared& s, Mode mode, int n, int me, std::size_t bytes, int iterations, int batch, double* seconds) {
  const std::size_t block = bytes / static_cast<std::size_t>(n);
  const std::size_t allocated = std::max<std::size_t>(bytes, 4096);
  auto* send = static_cast<std::byte*>(std::aligned_alloc(4096, allocated));
  auto* recv = static_cast<std::byte*>(std::aligned_alloc(4096, allocated));
  std::memset(send, me + 1, bytes);
  std::memset(recv, 0, bytes);
  s.pid[me] = ::getpid();
  s.send[me] = send;
  s.recv[me] = recv;
  s.started.fetch_add(1);
  wait_for(s.started, n);
  auto yield_barrier = [&s, n](long& passed) {
    ++passed;
    s.arrived.fetch_add(1);
    while (s.arrived.load() < static_cast<long>(n) * passed) ::sched_yield();
  };
  long barriers = 0;
  auto start = std::chrono::steady_clock::now();
  for (int it = 0; it < iterations; ++it) {
    const long call = it + 1;
    if (mode == Mode::kYield2) yield_barrier(barriers);
    std::memcpy(recv + block * static_cast<std::size_t>(me), send + block * static_cast<std::size_t>(me), block);
    if (mode == Mode::kClaimed) {
      claimed_call(s, n, me, call, block);
    } else {
      for (int k = 1; k < n; ++k) copy_block(s, me, me, (me + k) % n, block);
    }
    if (mode == Mode::kYield || mode == Mode::kYield2) {
      yield_barrier(barriers);
    } else if (mode == Mode::kFutex) {
      const int generation = s.generation.load();
      if (s.waiting.fetch_add(1) == n - 1) {
        s.waiting.store(0);
        s.generation.fetch_add(1);
        futex(&s.generation, FUTEX_WAKE, kMaxRanks);
      } else {
        while (s.generation.load() == generation) futex(&s.generation, FUTEX_WAIT, generation);
      }
    }
    if (call % batch == 0) {
      const auto now = std::chrono::steady_clock::now();
      seconds[it / batch] = std::chrono::duration<double>(now - start).count() / batch;
      start = now;
    }
  }
  s.finished.fetch_add(1);
  wait_for(s.finished, n);  // no rank's buffers go away while a peer may still copy
}

// One run of `mode`: n fresh processes; each batch's time per call (its slowest rank's)
// appended to `times`.
void run(Mode mode, int n, std::size_t bytes, int iterations, int batch, std::vector<double>& times) {
  const int batches = iterations / batch;
  const std::size_t table = sizeof(double) * static_cast<std::size_t>(n * batches);
  void* page = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  auto* seconds = static_cast<double*>(::mmap(nullptr, table, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (page == MAP_FAILED || seconds == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  Shared& s = *new (page) Shared{};
  for (int r = 0; r < n; ++r) {
    if (::fork() == 0) {
      rank_main(s, mode, n, r, bytes, iterations, batch, seconds + static_cast<std::ptrdiff_t>(r * batches));
      std::_Exit(0);
    }
  }
  int failed = 0;
  for (int r = 0; r < n; ++r) {
    int status = 0;
    ::wait(&status);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  if (failed > 0) {
    std::fprintf(stderr, "braid-alltoall-floor: %d rank(s) of a %s run failed\n", failed, kModeNames[static_cast<int>(mode)]);
    std::exit(1);
  }
  for (int b = 0; b < batches; ++b) {
    double slowest = 0;
    for (int r = 0; r < n; ++r) slowest = std::max(slowest, seconds[r * batches + b]);
    times.push_back(slowest * 1e6);
  }
  ::munmap(page, sizeof(Shared));
  ::munmap(seconds, table);
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The least time a one-host alltoall can take: copying only, or with barriers of four kinds"};
  int ranks = 4, iterations = 2000, batch = 100, rounds = 3;
  std::string bytes_text = "1M";
  app.add_option("--ranks", ranks, "processes")->check(CLI::Range(2, kMaxRanks));
  app.add_option("--bytes", bytes_text, "bytes each rank sends in all, own block included (K, M suffixes); 0: the synchronisation alone");
  app.add_option("--iterations", iterations, "calls per run")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "calls per timed batch")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "runs of each mode, in turn")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  std::size_t bytes = 0;
  try {
    std::size_t used = 0;
    bytes = std::stoull(bytes_text, &used);
    const std::string suffix = bytes_text.substr(used);
    if (suffix == "K") bytes <<= 10;
    else if (suffix == "M") bytes <<= 20;
    else if (!suffix.empty()) throw std::invalid_argument(suffix);
  } catch (const std::exception&) {
    std::fprintf(stderr, "braid-alltoall-floor: --bytes '%s' is not a size (e.g. 4096, 64K, 1M)\n", bytes_text.c_str());
    return 2;
  }
  if (iterations < batch) {
    std::fprintf(stderr, "braid-alltoall-floor: --iterations must be at least --batch\n");
    return 2;
  }
  if (bytes % (static_cast<std::size_t>(ranks) * 4096) != 0) {
    std::fprintf(stderr, "braid-alltoall-floor: --bytes must be 0 or a multiple of ranks x 4096\n");
    return 2;
  }
  std::vector<std::vector<double>> times(kModes);
  for (int round = 0; round < rounds; ++round) {
    for (int m = 0; m < kModes; ++m) run(static_cast<Mode>(m), ranks, bytes, iterations, batch, times[static_cast<std::size_t>(m)]);
  }
  std::printf("# %d ranks, %zu bytes per rank, %d rounds x %d calls; time per call (us), batches of %d, slowest rank\n",
              ranks, bytes, rounds, iterations, batch);
  std::printf("%-8s %10s %10s\n", "mode", "median", "p10");
  for (int m = 0; m < kModes; ++m) {
    std::printf("%-8s %10.2f %10.2f\n", kModeNames[m], percentile(times[static_cast<std::size_t>(m)], 0.5),
                percentile(times[static_cast<std::size_t>(m)], 0.1));
  }
  return 0;
}
