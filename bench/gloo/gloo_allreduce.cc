// braid-gloo-allreduce: the Gloo peer for braid-bench's allreduce numbers (DESIGN.md, "How
// performance is judged"). Gloo is what PyTorch's gloo backend runs on CPU tensors.
//
//   braid-run -n 4 build/bin/braid-gloo-allreduce ring -b 8 -e 64M -f 4
//   braid-run -n 4 build/bin/braid-gloo-allreduce halving_doubling -b 8 -e 64M -f 4
//
// The algorithm is the first argument: `ring` (gloo::AllreduceRing) or `halving_doubling`
// (gloo::AllreduceHalvingDoubling), f32 sum, in place (Gloo's allreduce has no separate output).
// Rank and world size come from BRAID_RANK / BRAID_WORLD_SIZE, so braid-run starts it like any
// braid program. Gloo connects its ranks through a rendezvous store: a gloo::rendezvous::
// FileStore in <store>/braid-gloo-<BRAID_JOB_ID>, where <store> is --store, else
// $BRAID_GLOO_STORE, else /tmp; rank 0 removes that directory at the end. Data moves over
// Gloo's TCP transport on 127.0.0.1 (the only Gloo transport for one host: it has no shared
// memory one).
//
// Timing, columns and defaults are braid-bench's (docs/benchmarks.md): per size, a warm-up of
// max(1, iters / 5) calls, then --repeats (5) batches of iters = clamp(256 MiB / size, 5, 1000)
// back-to-back calls; a batch's time is the per-call time of the slowest rank (a MAX allreduce of
// the per-rank averages) and the row reports the median batch. algbw = size / time, busbw =
// algbw * 2(n-1)/n. The timed calls keep reducing the buffer into itself, so its values grow by
// a factor n per call up to +inf; they never become subnormal, so no call runs slower for it.
// #wrong: the buffer is then refilled with the input ((rank + 1) * (i % 7 + 1), small integers,
// exact in f32), reduced once more and compared element by element with n(n+1)/2 * (i % 7 + 1);
// the count is summed over all ranks. A non-zero #wrong makes the exit status 1.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/common/error.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "braid/base/byte_size.h"
#include "braid/base/error.h"

namespace {

using Clock = std::chrono::steady_clock;

// braid-bench's defaults (src/braid/tools/braid_bench).
constexpr std::uint64_t kBytesPerBatch = std::uint64_t{256} << 20;
constexpr long kMinIters = 5;
constexpr long kMaxIters = 1000;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

enum class Algorithm { kRing, kHalvingDoubling };

struct Options {
  Algorithm algorithm = Algorithm::kRing;
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = std::uint64_t{256} << 20;
  std::uint64_t factor = 2;
  long iters = 0;    // 0: by size
  long warmup = -1;  // -1: by iters
  int repeats = 5;
  bool check = true;
  std::string json_path;
  std::string store;
};

struct Row {
  std::uint64_t size;
  std::uint64_t count;
  double time_us;
  double algbw;
  double busbw;
  std::int64_t wrong;
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: braid-gloo-allreduce ALGORITHM [options]   (run with braid-run -n N)\n"
               "  ALGORITHM: ring (gloo::AllreduceRing) | halving_doubling "
               "(gloo::AllreduceHalvingDoubling)\n"
               "  -b, --minbytes SIZE   smallest size (default 8); suffixes K, M, G (x1024)\n"
               "  -e, --maxbytes SIZE   largest size (default 256M), at most 2G-1\n"
               "  -f, --stepfactor N    multiply the size by N each step (default 2)\n"
               "  -n, --iters N         timed calls per batch (default: clamp(256MiB / size, %ld, "
               "%ld))\n"
               "  -w, --warmup N        untimed calls per size (default: max(1, iters / 5))\n"
               "      --repeats N       timed batches per size; the median is reported (default 5)\n"
               "  -c, --check 0|1       check the results (#wrong column; default 1)\n"
               "  -d, --datatype f32    element type (only f32)\n"
               "  -o, --op sum          reduction (only sum)\n"
               "  -j, --json FILE       also write the rows as JSON (braid-bench's layout)\n"
               "      --store DIR       rendezvous directory (default $BRAID_GLOO_STORE, else /tmp)\n"
               "  -h, --help\n"
               "Environment: BRAID_RANK, BRAID_WORLD_SIZE (set by braid-run), BRAID_JOB_ID "
               "(names the rendezvous files), BRAID_GLOO_ADDR (the address to bind; default 127.0.0.1).\n",
               kMinIters, kMaxIters);
}

// braid's own size parser (base/byte_size.h), so -b/-e mean what they mean to braid-bench and a
// size that overflows 64 bits is refused (the shifts that stood here wrapped it silently).
std::optional<std::uint64_t> parse_size(std::string_view text) {
  try {
    return braid::parse_byte_size(text, "size");
  } catch (const braid::InvalidArgument&) {
    return std::nullopt;
  }
}

std::optional<long> parse_count(std::string_view text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// 0: run; 1: --help; -1: usage error (reported when `report`).
int parse_options(int argc, char** argv, bool report, Options& opt) {
  auto fail = [report](const std::string& message) {
    if (report) std::fprintf(stderr, "braid-gloo-allreduce: %s\n", message.c_str());
    return -1;
  };
  if (argc < 2) return fail("missing algorithm (ring or halving_doubling)");
  std::string_view algorithm = argv[1];
  if (algorithm == "-h" || algorithm == "--help") return 1;
  if (algorithm == "ring") {
    opt.algorithm = Algorithm::kRing;
  } else if (algorithm == "halving_doubling" || algorithm == "hd") {
    opt.algorithm = Algorithm::kHalvingDoubling;
  } else {
    return fail("unknown algorithm " + std::string(algorithm) + " (ring or halving_doubling)");
  }
  if (const char* store = std::getenv("BRAID_GLOO_STORE"); store != nullptr && *store != '\0') {
    opt.store = store;
  }
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") return 1;
    if (i + 1 >= argc) return fail("unknown option or missing value: " + std::string(arg));
    std::string_view value = argv[++i];
    bool bad = false;
    if (arg == "-b" || arg == "--minbytes") {
      auto size = parse_size(value);
      bad = !size || *size == 0;
      opt.min_bytes = size.value_or(0);
    } else if (arg == "-e" || arg == "--maxbytes") {
      auto size = parse_size(value);
      bad = !size || *size == 0 || *size > 0x7fffffffu;
      opt.max_bytes = size.value_or(0);
    } else if (arg == "-f" || arg == "--stepfactor") {
      auto count = parse_count(value);
      bad = !count || *count < 2;
      opt.factor = static_cast<std::uint64_t>(count.value_or(2));
    } else if (arg == "-n" || arg == "--iters") {
      auto count = parse_count(value);
      bad = !count || *count < 1;
      opt.iters = count.value_or(0);
    } else if (arg == "-w" || arg == "--warmup") {
      auto count = parse_count(value);
      bad = !count;
      opt.warmup = count.value_or(-1);
    } else if (arg == "--repeats") {
      auto count = parse_count(value);
      bad = !count || *count < 1 || *count > 1000;
      opt.repeats = static_cast<int>(count.value_or(5));
    } else if (arg == "-c" || arg == "--check") {
      bad = value != "0" && value != "1";
      opt.check = value == "1";
    } else if (arg == "-d" || arg == "--datatype") {
      bad = value != "f32" && value != "float";
    } else if (arg == "-o" || arg == "--op") {
      bad = value != "sum";
    } else if (arg == "-j" || arg == "--json") {
      opt.json_path = value;
    } else if (arg == "--store") {
      opt.store = value;
    } else {
      return fail("unknown option " + std::string(arg));
    }
    if (bad) return fail("bad value for " + std::string(arg) + ": " + std::string(value));
  }
  if (opt.min_bytes > opt.max_bytes) return fail("-b is larger than -e");
  if (opt.store.empty()) opt.store = "/tmp";
  return 0;
}

std::optional<int> env_int(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  auto value = parse_count(text);
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

long iters_for(const Options& opt, std::uint64_t size) {
  if (opt.iters > 0) return opt.iters;
  return static_cast<long>(std::clamp<std::uint64_t>(kBytesPerBatch / size, kMinIters, kMaxIters));
}

long warmup_for(const Options& opt, long iters) {
  if (opt.warmup >= 0) return opt.warmup;
  return std::max(1L, iters / 5);
}

// 2 MiB-aligned, THP-advised and written once, so no timed call takes a page fault.
struct TouchedBuffer {
  explicit TouchedBuffer(std::size_t bytes) {
    std::size_t rounded = std::max(kHugePage, (bytes + kHugePage - 1) / kHugePage * kHugePage);
    data = static_cast<float*>(std::aligned_alloc(kHugePage, rounded));
    if (data == nullptr) throw std::bad_alloc();
    (void)madvise(data, rounded, MADV_HUGEPAGE);  // a hint: fine to be refused
    std::memset(data, 0, rounded);
  }
  ~TouchedBuffer() { std::free(data); }
  TouchedBuffer(const TouchedBuffer&) = delete;
  TouchedBuffer& operator=(const TouchedBuffer&) = delete;
  float* data = nullptr;
};

float input_value(int rank, std::uint64_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 7 + 1)); }

std::unique_ptr<gloo::Algorithm> make_allreduce(Algorithm algorithm, const std::shared_ptr<gloo::Context>& context,
                                                float* data, int count) {
  std::vector<float*> ptrs{data};
  if (algorithm == Algorithm::kRing) return std::make_unique<gloo::AllreduceRing<float>>(context, ptrs, count);
  return std::make_unique<gloo::AllreduceHalvingDoubling<float>>(context, ptrs, count);
}

// Small collectives for the harness itself: a barrier, the slowest rank's time, #wrong.
class Control {
 public:
  explicit Control(const std::shared_ptr<gloo::Context>& context)
      : barrier_(context),
        max_(context, std::vector<double*>{&max_value_}, 1, gloo::ReductionFunction<double>::max),
        sum_(context, std::vector<double*>{&sum_value_}, 1, gloo::ReductionFunction<double>::sum) {}
  void barrier() { barrier_.run(); }
  double max(double value) {
    max_value_ = value;
    max_.run();
    return max_value_;
  }
  double sum(double value) {
    sum_value_ = value;
    sum_.run();
    return sum_value_;
  }

 private:
  double max_value_ = 0;
  double sum_value_ = 0;
  gloo::BarrierAllToAll barrier_;
  gloo::AllreduceRing<double> max_;
  gloo::AllreduceRing<double> sum_;
};

void write_json(const std::string& path, const Options& opt, int n, const std::vector<Row>& rows) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  const char* call = opt.algorithm == Algorithm::kRing ? "gloo::AllreduceRing" : "gloo::AllreduceHalvingDoubling";
  char line[512];
  std::snprintf(line, sizeof line,
                "{\n  \"benchmark\": \"allreduce\",\n  \"meta\": {\"ranks\": %d, \"peer\": \"gloo\", "
                "\"call\": \"%s\", \"library\": \"Gloo %d.%d.%d\", \"transport\": \"tcp 127.0.0.1\", "
                "\"repeats\": %d},\n  \"rows\": [\n",
                n, call, GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH, opt.repeats);
  out << line;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::snprintf(line, sizeof line,
                  "    {\"size\": %" PRIu64 ", \"count\": %" PRIu64
                  ", \"type\": \"f32\", \"redop\": \"sum\", \"time(us)\": %.3f, \"algbw(GB/s)\": %.4f, "
                  "\"busbw(GB/s)\": %.4f, \"#wrong\": %" PRId64 "}%s\n",
                  r.size, r.count, r.time_us, r.algbw, r.busbw, r.wrong, i + 1 < rows.size() ? "," : "");
    out << line;
  }
  out << "  ]\n}\n";
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

int run(const Options& opt, int rank, int n) {
  const char* job = std::getenv("BRAID_JOB_ID");
  const std::filesystem::path store_dir =
      std::filesystem::path(opt.store) / ("braid-gloo-" + std::string(job != nullptr && *job != '\0' ? job : "nojob"));
  std::filesystem::create_directories(store_dir);

  gloo::transport::tcp::attr attr;
  // BRAID_GLOO_ADDR: the address this rank's pairs bind and advertise (an emulated host's,
  // bench/tcp_striping.sh); 127.0.0.1 otherwise, the one host of compare_collectives.sh.
  const char* addr = std::getenv("BRAID_GLOO_ADDR");
  attr.hostname = addr != nullptr && *addr != '\0' ? addr : "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(store_dir.string());
  auto rendezvous = std::make_shared<gloo::rendezvous::Context>(rank, n);
  rendezvous->connectFullMesh(store, device);
  std::shared_ptr<gloo::Context> context = rendezvous;
  Control control(context);
  control.barrier();
  // Everyone has read everyone's address: the rendezvous files are no longer needed.
  if (rank == 0) {
    std::error_code ignored;
    std::filesystem::remove_all(store_dir, ignored);
  }

  const bool ring = opt.algorithm == Algorithm::kRing;
  if (rank == 0) {
    std::printf("# braid-gloo-allreduce %s: %d ranks, %s, in-place, TCP %s\n", ring ? "ring" : "halving_doubling", n,
                ring ? "gloo::AllreduceRing" : "gloo::AllreduceHalvingDoubling", attr.hostname.c_str());
    std::printf("# Gloo %d.%d.%d\n", GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH);
    std::printf("# time = slowest rank, median of %d batches; busbw = algbw * 2(n-1)/n\n", opt.repeats);
    std::printf("# %12s %11s %5s %6s %11s %12s %12s %7s\n", "size", "count", "type", "redop", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)", "#wrong");
    std::fflush(stdout);
  }

  // As in nccl-tests: min, min*f, ... up to and including max if it is hit, rounded down to
  // whole elements (zeros and repeats dropped).
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = opt.min_bytes; s <= opt.max_bytes; s *= opt.factor) {
    std::uint64_t rounded = s / sizeof(float) * sizeof(float);
    if (rounded != 0 && (sizes.empty() || sizes.back() != rounded)) sizes.push_back(rounded);
    if (s > opt.max_bytes / opt.factor) break;
  }
  TouchedBuffer buffer(sizes.empty() ? sizeof(float) : sizes.back());
  float* data = buffer.data;

  std::vector<Row> rows;
  std::int64_t total_wrong = 0;
  for (std::uint64_t size : sizes) {
    const auto count = static_cast<int>(size / sizeof(float));
    for (int i = 0; i < count; ++i) data[i] = input_value(rank, static_cast<std::uint64_t>(i));
    auto allreduce = make_allreduce(opt.algorithm, context, data, count);
    const long iters = iters_for(opt, size);
    for (long i = 0, w = warmup_for(opt, iters); i < w; ++i) allreduce->run();
    std::vector<double> batches;
    for (int r = 0; r < opt.repeats; ++r) {
      control.barrier();
      auto start = Clock::now();
      for (long i = 0; i < iters; ++i) allreduce->run();
      double mine = std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(iters);
      batches.push_back(control.max(mine));
    }
    std::nth_element(batches.begin(), batches.begin() + static_cast<std::ptrdiff_t>(batches.size() / 2), batches.end());
    const double seconds = batches[batches.size() / 2];

    std::int64_t wrong = 0;
    if (opt.check) {
      for (int i = 0; i < count; ++i) data[i] = input_value(rank, static_cast<std::uint64_t>(i));
      allreduce->run();
      const float ranks_sum = static_cast<float>(n * (n + 1) / 2);
      std::int64_t mine = 0;
      for (int i = 0; i < count; ++i) mine += data[i] != ranks_sum * static_cast<float>(i % 7 + 1);
      wrong = static_cast<std::int64_t>(control.sum(static_cast<double>(mine)));
    }
    total_wrong += wrong;
    const double algbw = static_cast<double>(size) / seconds / 1e9;
    rows.push_back({size, size / sizeof(float), seconds * 1e6, algbw, algbw * 2.0 * (n - 1) / n, wrong});
    if (rank == 0) {
      std::printf("  %12" PRIu64 " %11" PRIu64 " %5s %6s %11.1f %12.2f %12.2f %7" PRId64 "\n", size,
                  size / sizeof(float), "f32", "sum", seconds * 1e6, algbw, rows.back().busbw, wrong);
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %" PRId64 " %s\n", total_wrong, total_wrong == 0 ? "OK" : "FAILED");
    std::fflush(stdout);
    if (!opt.json_path.empty()) write_json(opt.json_path, opt, n, rows);
  }
  // No rank closes its connections while another still waits on them. Gloo's TCP buffers check
  // the pair's error before their completion count (tcp/buffer.cc, waitRecv), so a peer that
  // leaves right after this barrier can make a rank's own, already satisfied, wait throw
  // "Connection closed by peer". Every result is in by now, so that is not an error.
  try {
    control.barrier();
  } catch (const gloo::IoException&) {
  }
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  auto rank = env_int("BRAID_RANK");
  auto world = env_int("BRAID_WORLD_SIZE");
  Options opt;
  int parsed = parse_options(argc, argv, !rank || *rank == 0, opt);
  if (parsed != 0) {
    if (!rank || *rank == 0) usage(parsed == 1 ? stdout : stderr);
    return parsed == 1 ? 0 : 2;
  }
  if (!rank || !world || *world < 1 || *rank >= *world) {
    std::fprintf(stderr, "braid-gloo-allreduce: BRAID_RANK and BRAID_WORLD_SIZE must be set (run it under braid-run)\n");
    return 2;
  }
  try {
    return run(opt, *rank, *world);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "braid-gloo-allreduce: rank %d: %s\n", *rank, e.what());
    return 1;
  }
}
