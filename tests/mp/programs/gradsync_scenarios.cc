// Scenario `gradsync`: braid::GradSync on real ranks. Gradients hold small multiples of 1/4,
// so every sum is exact in fp32 whatever the order and the average (one division) is known
// bit for bit: GradSync must equal a plain allreduce of every gradient exactly, on every rank.
// Each rank marks its gradients ready in its own random order (different on every rank and
// every step), over a model with zero-size parameters and one parameter larger than a bucket.
// Then: buckets rebuilt from rank 0's order and identical everywhere; K-step accumulation under
// NoSync; an unused parameter (an error on every rank, after which the next step works);
// allow_unused (counted as zero); and a compressed policy (int8) agreeing across ranks.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "braid/base/crc32c.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/shm_workspace.h"
#include "braid/engine/collective_tracing.h"
#include "braid/engine/grad_sync.h"
#include "braid/trace/chrome_trace.h"
#include "braid/trace/trace_recorder.h"
#include <nlohmann/json.hpp>
#include "gradient_model.h"
#include "scenario.h"

namespace braid::testing {

namespace {

// 300000 floats (1.2 MB) exceed the 1 MiB bucket cap: that parameter gets a bucket of its own.
const std::vector<std::int64_t> kCounts = {1000, 0, 37, 300000, 5, 4096, 0, 70000, 12, 65536};

struct Model : GradientModel {
  explicit Model(GradSync& sync) : GradientModel(sync, kCounts) {}
};

float contribution(int rank, int step, std::size_t p, std::size_t i) { return gradient_pattern(rank, step, p, i, 1); }

void fill(Model& m, int rank, int step, bool add = false) { m.fill(rank, step, /*param_stride=*/1, add); }

// The exact average over ranks of the contributions of `steps` (accumulated), skipping the
// (rank, param) pairs in `zero`: sums of quarters are exact, then one fp32 division.
float expected(int n, const std::vector<int>& steps, std::size_t p, std::size_t i, int zero_rank = -1,
               std::size_t zero_param = 99) {
  float sum = 0;
  for (int r = 0; r < n; ++r) {
    if (r == zero_rank && p == zero_param) continue;
    float local = 0;
    for (int s : steps) local += contribution(r, s, p, i);
    sum += local;
  }
  return sum / static_cast<float>(n);
}

void mark_all_shuffled(GradSync& sync, int rank, int step, int skip = -1) {
  std::vector<int> order(kCounts.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::mt19937 rng(static_cast<unsigned>(rank * 1000 + step));
  std::shuffle(order.begin(), order.end(), rng);
  for (int p : order) {
    if (p != skip) sync.mark_ready(p);
  }
}

bool same_on_every_rank(Communicator& comm, const void* data, std::size_t bytes) {
  std::uint32_t mine = crc32c(data, bytes);
  std::vector<std::uint32_t> all(static_cast<std::size_t>(comm.size()));
  allgather(comm, &mine, all.data(), 1, DType::kI32);
  return std::all_of(all.begin(), all.end(), [&](std::uint32_t c) { return c == mine; });
}

bool check(Communicator& comm, const Model& m, const std::vector<int>& steps, const std::string& what,
           int zero_rank = -1, std::size_t zero_param = 99) {
  for (std::size_t p = 0; p < m.grads.size(); ++p) {
    for (std::size_t i = 0; i < m.grads[p].size(); ++i) {
      float want = expected(comm.size(), steps, p, i, zero_rank, zero_param);
      if (std::memcmp(&want, &m.grads[p][i], sizeof(float)) != 0) {
        RANK_SAY("FAIL rank %d: %s: param %zu element %zu is %.9g, the exact average is %.9g", comm.rank(),
                 what.c_str(), p, i, m.grads[p][i], want);
        return false;
      }
    }
    if (!same_on_every_rank(comm, m.grads[p].data(), m.grads[p].size() * sizeof(float))) {
      RANK_SAY("FAIL rank %d: %s: param %zu differs between ranks", comm.rank(), what.c_str(), p);
      return false;
    }
  }
  return true;
}

// The parameters of every bucket, "[9 8 7][6 5 4 3][2 1 0]": what must agree across ranks.
std::string layout(const engine::BucketPlan& plan) {
  std::string text;
  for (const auto& bucket : plan.buckets) {
    text += "[";
    for (std::size_t i = 0; i < bucket.params.size(); ++i) text += fmt::format("{}{}", i ? " " : "", bucket.params[i]);
    text += "]";
  }
  return text;
}

bool plain_steps_and_rebuild(Communicator& comm) {
  GradSync sync(comm, {.bucket_cap = "1"});
  Model m(sync);
  bool ok = true;
  std::string before;
  for (int step = 0; step < 4 && ok; ++step) {
    fill(m, comm.rank(), step);
    mark_all_shuffled(sync, comm.rank(), step);
    if (step == 0) before = layout(sync.plan());
    const auto planned = static_cast<int>(sync.plan().buckets.size());
    GradSyncStats stats = sync.finish();
    ok = check(comm, m, {step}, fmt::format("step {}", step));
    auto total = static_cast<std::uint64_t>(std::accumulate(kCounts.begin(), kCounts.end(), std::int64_t{0}));
    if (stats.buckets != planned || stats.wire.elements != total) {
      RANK_SAY("FAIL rank %d: step %d reported %d buckets, %llu elements", comm.rank(), step, stats.buckets,
               static_cast<unsigned long long>(stats.wire.elements));
      ok = false;
    }
  }
  std::string after = layout(sync.plan());
  if (!same_on_every_rank(comm, after.data(), after.size())) {
    RANK_SAY("FAIL rank %d: rebuilt buckets differ between ranks: %s", comm.rank(), after.c_str());
    ok = false;
  }
  if (comm.rank() == 0) RANK_SAY("PLAN before %s after %s", before.c_str(), after.c_str());
  return ok;
}

bool accumulation(Communicator& comm) {
  GradSync sync(comm, {.bucket_cap = "auto"});
  Model m(sync);
  fill(m, comm.rank(), 0);
  {
    NoSync quiet(sync);
    mark_all_shuffled(sync, comm.rank(), 0);
    sync.finish();  // does nothing
    fill(m, comm.rank(), 1, /*add=*/true);
    mark_all_shuffled(sync, comm.rank(), 1);
    sync.finish();
  }
  fill(m, comm.rank(), 2, /*add=*/true);
  mark_all_shuffled(sync, comm.rank(), 2);
  sync.finish();
  return check(comm, m, {0, 1, 2}, "3 accumulated micro-steps");
}

bool unused_parameter(Communicator& comm) {
  const int skipper = comm.size() > 1 ? 1 : 0;
  GradSync sync(comm, {.bucket_cap = "1"});
  Model m(sync);
  fill(m, comm.rank(), 0);
  mark_all_shuffled(sync, comm.rank(), 0, comm.rank() == skipper ? 3 : -1);
  bool raised = false;
  try {
    sync.finish();
  } catch (const InvalidArgument& e) {
    std::string what = e.what();
    raised = comm.rank() == skipper ? what.find("'layer3.weight'") != std::string::npos
                                    : what.find(fmt::format("rank {}", skipper)) != std::string::npos;
    if (!raised) RANK_SAY("FAIL rank %d: the error does not name the parameter or rank: %s", comm.rank(), e.what());
  }
  if (!raised) {
    RANK_SAY("FAIL rank %d: an unused parameter was not reported", comm.rank());
    return false;
  }
  fill(m, comm.rank(), 1);  // the communicator and GradSync still work
  mark_all_shuffled(sync, comm.rank(), 1);
  sync.finish();
  return check(comm, m, {1}, "the step after an unused-parameter error");
}

bool allow_unused(Communicator& comm) {
  const int skipper = comm.size() > 1 ? 1 : 0;
  GradSync sync(comm, {.bucket_cap = "1", .allow_unused = true});
  Model m(sync);
  fill(m, comm.rank(), 5);
  mark_all_shuffled(sync, comm.rank(), 5, comm.rank() == skipper ? 3 : -1);
  sync.finish();
  return check(comm, m, {5}, "allow_unused", skipper, 3);
}

bool compressed(Communicator& comm) {
  compress::CompressionPolicy policy({.codec = compress::parse_codec_spec("int8"), .min_elements = 1000});
  GradSync sync(comm, {.bucket_cap = "1", .policy = policy});
  Model m(sync);
  bool ok = true;
  for (int step = 0; step < 3 && ok; ++step) {
    fill(m, comm.rank(), step);
    mark_all_shuffled(sync, comm.rank(), step);
    GradSyncStats stats = sync.finish();
    for (std::size_t p = 0; p < m.grads.size() && ok; ++p) {
      ok = same_on_every_rank(comm, m.grads[p].data(), m.grads[p].size() * sizeof(float));
    }
    if (stats.wire.wire_fraction() >= 0.5 && comm.size() > 1) {
      RANK_SAY("FAIL rank %d: int8 buckets sent %.3f of the fp32 ring's bytes", comm.rank(), stats.wire.wire_fraction());
      ok = false;
    }
  }
  if (!ok) RANK_SAY("FAIL rank %d: compressed GradSync", comm.rank());
  return ok;
}

// GradSync records every bucket's allreduce in a TraceRecorder next to the caller's compute
// spans; the Chrome-trace JSON has the structure Perfetto reads, and the step counters see
// the communication.
bool traced(Communicator& comm) {
  trace::TraceRecorder recorder(trace::TraceOptions{.rank = comm.rank()});
  trace_collectives(comm, recorder);  // the collectives inside the buckets too
  GradSync sync(comm, {.bucket_cap = "1", .trace = &recorder});
  Model m(sync);
  for (int step = 0; step < 2; ++step) {
    recorder.step(step);
    {
      trace::ComputeScope backward(recorder, "backward");
      fill(m, comm.rank(), step);
      mark_all_shuffled(sync, comm.rank(), step);
    }
    sync.finish();
  }
  stop_tracing_collectives(comm);
  nlohmann::json doc = nlohmann::json::parse(trace::to_chrome_trace_json(recorder.snapshot()));
  int buckets = 0, collectives = 0;
  for (const auto& e : doc.at("traceEvents")) {
    bool ok = e.contains("ph") && e.contains("pid") && e.contains("tid") && (e["ph"] == "M" || e.contains("ts"));
    if (e["ph"] == "X") ok = ok && e.contains("dur") && e["dur"].get<double>() >= 0;
    if (!ok) {
      RANK_SAY("FAIL rank %d: malformed trace event %s", comm.rank(), e.dump().c_str());
      return false;
    }
    if (e["ph"] == "X" && e.value("cat", "") == "comm") {
      std::string name = e.value("name", "");
      if (name.rfind("bucket ", 0) == 0) ++buckets;
      if (name.rfind("allreduce #", 0) == 0) ++collectives;
    }
  }
  auto counters = recorder.step_counters();
  bool counted = !counters.empty() && counters.back().comm_ops > 0 && counters.back().wire_bytes > 0;
  // One allreduce per bucket per step (codec none) moves data whenever there is a peer.
  if (buckets < 2 || (comm.size() > 1 && (!counted || collectives < buckets))) {
    RANK_SAY("FAIL rank %d: the trace holds %d bucket and %d allreduce events, counters %s", comm.rank(), buckets,
             collectives, counted ? "ok" : "empty");
    return false;
  }
  return true;
}

// Buckets in registered memory (the default where the ranks share a host over shm: the 300000-
// element bucket takes the zero-copy allreduce) and in ordinary memory give the same averages.
bool registered_buckets(Communicator& comm) {
  bool ok = true;
  for (bool registered : {true, false}) {
    GradSync sync(comm, {.bucket_cap = "1", .registered_buckets = registered});
    const bool want = registered && ShmWorkspace::usable(comm);
    if (sync.registered_buckets() != want) {
      RANK_SAY("FAIL rank %d: registered_buckets() is %d, expected %d", comm.rank(), sync.registered_buckets(), want);
      ok = false;
    }
    Model m(sync);
    for (int step = 0; step < 2 && ok; ++step) {
      fill(m, comm.rank(), step);
      mark_all_shuffled(sync, comm.rank(), step);
      sync.finish();
      ok = check(comm, m, {step}, fmt::format("registered {} step {}", registered, step));
    }
  }
  return ok;
}

}  // namespace

int scenario_gradsync(Communicator& comm, const Args&) {
  bool ok = plain_steps_and_rebuild(comm);
  ok = accumulation(comm) && ok;
  ok = unused_parameter(comm) && ok;
  ok = allow_unused(comm) && ok;
  ok = compressed(comm) && ok;
  ok = traced(comm) && ok;
  ok = registered_buckets(comm) && ok;
  if (!ok) return 1;
  RANK_SAY("PASS gradsync");
  return 0;
}

}  // namespace braid::testing
