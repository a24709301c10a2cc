// braid-soak: hours of mixed collectives, every result checked, memory watched (issue 21's
// soak; docs/reliability.md). A rank program:
//
//   braid-run -n 4 build/bin/braid-soak --seconds 1800 --csv soak.csv
//
// Each step issues a batch of 1 to --batch calls drawn alike on every rank (soak_call.h): any
// collective, barrier or ring send/recv, any dtype and reduction, sizes log-uniform up to
// --max-bytes, an explicitly named algorithm or the tuner's choice, blocking or async; then
// waits for them and compares every result element with its exact value. Every --split-every
// steps a communicator is split off, used and destroyed (what leaks if anything does). Every
// --report-every seconds rank 0 prints, and appends to --csv, each rank's resident memory and
// open descriptors; the summary gives their growth after --warmup seconds and its least-squares
// slope. Exits 1 if any element was wrong, 2 on a braid::Error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "braid/base/byte_size.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/comm/communicator.h"
#include "soak_call.h"

namespace braid::soak {
namespace {

struct Flags {
  double seconds = 1800;
  std::uint64_t seed = 1;
  std::string max_bytes = "4M";
  int batch = 3;
  double report_every = 30;
  double warmup = 60;
  int split_every = 200;
  std::string csv;
};

struct Sample {  // one report: per rank
  double t = 0;
  std::vector<std::int64_t> rss_kib, fds;
};

std::int64_t resident_kib() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

std::int64_t open_fds() {
  std::int64_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Least-squares slope of y over t, per minute.
double slope_per_minute(const std::vector<Sample>& samples, int rank, double from) {
  double n = 0, st = 0, sy = 0, stt = 0, sty = 0;
  for (const Sample& s : samples) {
    if (s.t < from) continue;
    const double y = static_cast<double>(s.rss_kib[rank]);
    n += 1, st += s.t, sy += y, stt += s.t * s.t, sty += s.t * y;
  }
  const double denominator = n * stt - st * st;
  return n < 2 || denominator == 0 ? 0 : 60 * (n * sty - st * sy) / denominator;
}

class Soak {
 public:
  Soak(Communicator& comm, const Flags& flags)
      : comm_(comm), flags_(flags), rng_(flags.seed),
        max_bytes_(parse_byte_size(flags.max_bytes, "--max-bytes", {.zero = false})) {}

  int run();

 private:
  void run_batch(std::int64_t step);
  void split_and_use(std::int64_t step);
  std::array<std::int32_t, 2> control(double elapsed);
  void report(double elapsed);
  void summarize();
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  using Clock = std::chrono::steady_clock;
  Communicator& comm_;
  const Flags& flags_;
  SplitMix64 rng_;
  std::size_t max_bytes_;
  Clock::time_point start_ = Clock::now();
  double next_report_ = 0;
  std::int64_t calls_ = 0, wrong_ = 0, steps_ = 0, splits_ = 0;
  std::map<std::string, std::int64_t> calls_by_op_;
  std::vector<Sample> samples_;
  std::int64_t job_wrong_ = 0, job_calls_ = 0;
};

void Soak::run_batch(std::int64_t step) {
  const int k = 1 + static_cast<int>(rng_.next() % static_cast<std::uint64_t>(flags_.batch));
  std::vector<std::unique_ptr<SoakCallRun>> runs;
  std::vector<Work> works;
  for (int i = 0; i < k; ++i) {
    runs.push_back(std::make_unique<SoakCallRun>(comm_, draw_call(rng_, comm_, max_bytes_, step * 8 + i)));
    works.push_back(runs.back()->run());
  }
  for (Work& w : works) w.wait();
  for (const auto& r : runs) {
    ++calls_;
    ++calls_by_op_[std::string(op_kind_name(r->call().op))];
    const std::int64_t wrong = r->wrong_elements();
    if (wrong == 0) continue;
    if (wrong_ < 10) {
      fmt::print(stderr, "soak: rank {}: step {}: {}: {} wrong elements\n", comm_.rank(), step, r->call().describe(),
                 wrong);
    }
    wrong_ += wrong;
  }
}

// A sub-communicator of the even and the odd ranks, one checked allreduce on it, destroyed.
void Soak::split_and_use(std::int64_t step) {
  std::optional<Communicator> half = comm_.split(comm_.rank() % 2, comm_.rank());
  std::int64_t value = comm_.rank(), total = 0;
  allreduce(*half, &value, &total, 1, DType::kI64, ReduceOp::kSum);
  std::int64_t expected = 0;
  for (int r = comm_.rank() % 2; r < comm_.size(); r += 2) expected += r;
  if (total != expected) {
    fmt::print(stderr, "soak: rank {}: step {}: split allreduce gave {}, not {}\n", comm_.rank(), step, total,
               expected);
    ++wrong_;
  }
  ++splits_;
}

// {stop, report}: each the maximum over ranks, so every rank takes the same decision.
std::array<std::int32_t, 2> Soak::control(double t) {
  std::array<std::int32_t, 2> want{t >= flags_.seconds ? 1 : 0, t >= next_report_ ? 1 : 0};
  allreduce(comm_, want.data(), want.data(), 2, DType::kI32, ReduceOp::kMax);
  return want;
}

void Soak::report(double t) {
  next_report_ = t + flags_.report_every;
  const int n = comm_.size();
  std::array<std::int64_t, 4> mine{resident_kib(), open_fds(), wrong_, calls_};
  std::vector<std::int64_t> all(4 * static_cast<std::size_t>(n));
  allgather(comm_, mine.data(), all.data(), 4, DType::kI64);
  if (comm_.rank() != 0) return;
  Sample s{.t = t};
  job_wrong_ = job_calls_ = 0;
  for (int r = 0; r < n; ++r) {
    s.rss_kib.push_back(all[4 * r]);
    s.fds.push_back(all[4 * r + 1]);
    job_wrong_ += all[4 * r + 2];
    job_calls_ += all[4 * r + 3];
  }
  samples_.push_back(s);
  std::string rss, fds;
  for (int r = 0; r < n; ++r) {
    rss += fmt::format(" {:.1f}", static_cast<double>(s.rss_kib[r]) / 1024);
    fds += fmt::format(" {}", s.fds[r]);
  }
  fmt::print("soak: t {:6.0f} s  steps {:8}  calls {:9}  wrong {}  rss MiB{}  fds{}\n", t, steps_, job_calls_ / n,
             job_wrong_, rss, fds);
  std::fflush(stdout);
  if (flags_.csv.empty()) return;
  const bool fresh = !std::filesystem::exists(flags_.csv);
  std::ofstream csv(flags_.csv, std::ios::app);
  if (fresh) {
    csv << "seconds,steps,calls_per_rank,wrong";
    for (int r = 0; r < n; ++r) csv << ",rss_kib_" << r;
    for (int r = 0; r < n; ++r) csv << ",fds_" << r;
    csv << "\n";
  }
  csv << fmt::format("{:.1f},{},{},{}", t, steps_, job_calls_ / n, job_wrong_);
  for (int r = 0; r < n; ++r) csv << "," << s.rss_kib[r];
  for (int r = 0; r < n; ++r) csv << "," << s.fds[r];
  csv << "\n";
}

void Soak::summarize() {
  if (comm_.rank() != 0 || samples_.empty()) return;
  std::string mix;
  for (const auto& [op, n] : calls_by_op_) mix += fmt::format(" {} {}", op, n);
  fmt::print("soak: {} ranks, {:.0f} s, {} steps, {} calls per rank ({} splits), {} wrong elements\n", comm_.size(),
             samples_.back().t, steps_, job_calls_ / comm_.size(), splits_, job_wrong_);
  fmt::print("soak: rank 0's calls:{}\n", mix);
  // Growth from the first sample after the warm-up (allocator pools and the shm workspace
  // reach their size in the first minute) to the last.
  std::size_t first = 0;
  while (first + 1 < samples_.size() && samples_[first].t < flags_.warmup) ++first;
  const Sample &a = samples_[first], &b = samples_.back();
  for (int r = 0; r < comm_.size(); ++r) {
    fmt::print("soak: rank {}: rss {:.1f} -> {:.1f} MiB after {:.0f} s ({:+.1f} MiB, slope {:+.1f} KiB/min), "
               "fds {} -> {}\n",
               r, static_cast<double>(a.rss_kib[r]) / 1024, static_cast<double>(b.rss_kib[r]) / 1024, a.t,
               static_cast<double>(b.rss_kib[r] - a.rss_kib[r]) / 1024, slope_per_minute(samples_, r, a.t), a.fds[r],
               b.fds[r]);
  }
}

int Soak::run() {
  for (std::int64_t step = 0;; ++step) {
    run_batch(step);
    steps_ = step + 1;
    if (flags_.split_every > 0 && step % flags_.split_every == flags_.split_every - 1) split_and_use(step);
    if (step % 16 != 0) continue;
    const auto [stop, want_report] = control(elapsed());
    if (want_report != 0 || stop != 0) report(elapsed());
    if (stop != 0) break;
  }
  summarize();
  std::int64_t wrong = wrong_;
  allreduce(comm_, &wrong, &wrong, 1, DType::kI64, ReduceOp::kSum);
  return wrong == 0 ? 0 : 1;
}

}  // namespace
}  // namespace braid::soak

int main(int argc, char** argv) {
  braid::soak::Flags flags;
  CLI::App app{"braid-soak: mixed collectives with random sizes, dtypes and algorithms, every result checked, "
               "resident memory and descriptors reported. Run under braid-run."};
  app.add_option("--seconds", flags.seconds, "how long to run")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--seed", flags.seed, "the draw's seed (the same on every rank)")->capture_default_str();
  app.add_option("--max-bytes", flags.max_bytes, "the largest buffer of a call (4M, 64K, ...)")->capture_default_str();
  app.add_option("--batch", flags.batch, "at most this many calls issued before waiting")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  app.add_option("--report-every", flags.report_every, "seconds between memory reports")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", flags.warmup, "seconds before the growth baseline")->capture_default_str();
  app.add_option("--split-every", flags.split_every, "steps between sub-communicator splits (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--csv", flags.csv, "rank 0 appends each report here");
  CLI11_PARSE(app, argc, argv);
  try {
    braid::Communicator comm = braid::Communicator::init();
    return braid::soak::Soak(comm, flags).run();
  } catch (const braid::Error& e) {
    fmt::print(stderr, "braid-soak: {}\n", e.what());
    return 2;
  }
}
