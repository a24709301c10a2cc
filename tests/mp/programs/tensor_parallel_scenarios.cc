// Scenarios of the tensor-parallel primitives (parallel/tensor_parallel.h) and of AxisTraffic
// (parallel/axis_traffic.h) through real ranks:
//  - `tensor-parallel`: on the world and on a split of it (groups of 2), for f32, f64 and i32
//    and shapes with outer 1 and > 1, inner 1 and > 1, local 0 and outer 0: gather_along
//    against the [outer, tp * local, inner] arrangement element by element, reduce_scatter_along
//    against the sum computed locally, split_along as the inverse of gather_along (and
//    gather-then-split round trips), tp_allreduce sums; the `i` forms all in flight at once,
//    the last polled with test(), the rest waited for in reverse order, equal to the blocking
//    results; a digest of the replicated results (gathers, allreduces) equal on every rank. Bad arguments raise
//    InvalidArgument at the call and leave the communicator usable.
//  - `tensor-parallel-mismatch OP`: the last rank passes local + 1 (OP: gather, gather-outer,
//    igather, reduce-scatter, reduce-scatter-outer), or local 0 (gather-zero: that rank's
//    call moves nothing and returns; the next collective finds the ranks out of step). Every
//    rank prints MISMATCH (a braid::Mismatch) or ERROR-NOT-MISMATCH (another braid::Error),
//    never hangs.
//  - `tensor-parallel-dropped`: the `i` forms with outer > 1 and every handle dropped (Work's
//    contract: that cancels nothing) still complete, rearranged, behind a barrier.
//  - `axis-traffic`: AxisTraffic watching the world as "dp" and a split as "tp": take() equals
//    the documented formulas exactly for allreduce, allgather, reduce_scatter, broadcast, the
//    primitives and non-blocking collectives; take() resets; unwatch stops counting; tracing
//    the same communicator (trace_collectives) keeps both watchers working.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/async_collectives.h"
#include "braid/collectives/collectives.h"
#include "braid/engine/collective_tracing.h"
#include "braid/parallel/axis_traffic.h"
#include "braid/parallel/tensor_parallel.h"
#include "braid/trace/trace_recorder.h"
#include "scenario.h"

namespace braid::testing {

namespace {

using parallel::SplitShape;

class Checks {
 public:
  Checks(const char* scenario, int rank) : scenario_(scenario), rank_(rank) {}
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    if (++failures_ <= 20) RANK_SAY("FAIL %s rank %d: %s", scenario_, rank_, what.c_str());
  }
  int failures() const { return failures_; }

 private:
  const char* scenario_;
  int rank_;
  int failures_ = 0;
};

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kF32;
  if constexpr (std::is_same_v<T, double>) return DType::kF64;
  if constexpr (std::is_same_v<T, std::int32_t>) return DType::kI32;
}

// A value that depends on (rank, index) and whose sums over up to a few ranks are exact in
// every dtype (so the expected reduction needs no order).
template <class T>
T value(int rank, std::int64_t index, int salt) {
  const std::int64_t v = (rank + 1) * 1000 + (index * 7 + salt) % 911;
  if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v) * static_cast<T>(0.25);
  return static_cast<T>(v);
}

template <class T>
std::vector<T> sized(std::int64_t n) {
  return std::vector<T>(static_cast<std::size_t>(n), T{});
}

std::uint64_t fnv(std::uint64_t h, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string describe(const std::string& what, DType dtype, SplitShape s) {
  return what + " " + std::string(dtype_name(dtype)) + " outer " + std::to_string(s.outer) + " local " +
         std::to_string(s.local) + " inner " + std::to_string(s.inner);
}

const std::vector<SplitShape>& shapes() {
  static const std::vector<SplitShape> all{
      {1, 3, 1}, {1, 4, 5}, {3, 2, 1}, {2, 3, 4}, {5, 1, 7}, {4, 0, 3}, {0, 2, 2}, {1, 0, 1}, {7, 33, 9},
  };
  return all;
}

// One shape's buffers and expected results on one rank of `tp`.
template <class T>
struct Case {
  SplitShape s;
  int tp_size, tp_rank;
  std::int64_t shard_n, full_n;
  std::vector<T> shard_in, want_full;  // gather_along
  std::vector<T> full_in, want_shard;  // reduce_scatter_along
  std::vector<T> got_full, got_shard;

  Case(SplitShape shape, int size, int rank) : s(shape), tp_size(size), tp_rank(rank) {
    shard_n = s.shard_elements();
    full_n = shard_n * tp_size;
    shard_in = sized<T>(shard_n);
    for (std::int64_t i = 0; i < shard_n; ++i) shard_in[static_cast<std::size_t>(i)] = value<T>(rank, i, 1);
    want_full = sized<T>(full_n);
    const std::int64_t wide = tp_size * s.local;
    for (int q = 0; q < tp_size; ++q) {
      for (std::int64_t o = 0; o < s.outer; ++o) {
        for (std::int64_t l = 0; l < s.local; ++l) {
          for (std::int64_t i = 0; i < s.inner; ++i) {
            want_full[static_cast<std::size_t>((o * wide + q * s.local + l) * s.inner + i)] =
                value<T>(q, (o * s.local + l) * s.inner + i, 1);
          }
        }
      }
    }
    full_in = sized<T>(full_n);
    for (std::int64_t i = 0; i < full_n; ++i) full_in[static_cast<std::size_t>(i)] = value<T>(rank, i, 2);
    want_shard = sized<T>(shard_n);
    for (std::int64_t o = 0; o < s.outer; ++o) {
      for (std::int64_t l = 0; l < s.local; ++l) {
        for (std::int64_t i = 0; i < s.inner; ++i) {
          T sum{};
          for (int q = 0; q < tp_size; ++q) sum += value<T>(q, (o * wide + rank * s.local + l) * s.inner + i, 2);
          want_shard[static_cast<std::size_t>((o * s.local + l) * s.inner + i)] = sum;
        }
      }
    }
    reset();
  }
  // Sentinels, so an element nobody wrote is seen.
  void reset() {
    got_full.assign(static_cast<std::size_t>(full_n), static_cast<T>(-12345));
    got_shard.assign(static_cast<std::size_t>(shard_n), static_cast<T>(-12345));
  }
};

template <class T>
bool first_difference(const std::vector<T>& got, const std::vector<T>& want, std::string& where) {
  if (got.size() != want.size()) {
    where = "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
    return true;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      where = "element " + std::to_string(i) + ": " + std::to_string(got[i]) + " != " + std::to_string(want[i]);
      return true;
    }
  }
  return false;
}

template <class T>
void expect_equal(Checks& checks, const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  std::string where;
  if (first_difference(got, want, where)) checks.expect(false, what + ": " + where);
}

bool poll_until_done(Work& work) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);  // a hang guard only
  while (!work.test()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

template <class T>
void check_dtype(Communicator& tp, Checks& checks, std::uint64_t& digest) {
  constexpr DType dt = dtype_of<T>();
  std::vector<Case<T>> cases;
  for (SplitShape s : shapes()) cases.emplace_back(s, tp.size(), tp.rank());

  // Blocking forms.
  for (auto& c : cases) {
    parallel::gather_along(tp, c.shard_in.data(), c.got_full.data(), c.s, dt);
    expect_equal(checks, c.got_full, c.want_full, describe("gather_along", dt, c.s));
    parallel::reduce_scatter_along(tp, c.full_in.data(), c.got_shard.data(), c.s, dt);
    expect_equal(checks, c.got_shard, c.want_shard, describe("reduce_scatter_along", dt, c.s));
    // The replicated results (each rank's reduce-scatter shard is its own).
    digest = fnv(digest, c.got_full.data(), c.got_full.size() * sizeof(T));

    // split_along inverts gather_along: every piece of the gathered tensor is that rank's shard.
    for (int q = 0; q < tp.size(); ++q) {
      std::vector<T> piece(static_cast<std::size_t>(c.shard_n), static_cast<T>(-1));
      parallel::split_along(c.got_full.data(), piece.data(), c.s, dt, q, tp.size());
      std::vector<T> want = sized<T>(c.shard_n);
      for (std::int64_t i = 0; i < c.shard_n; ++i) want[static_cast<std::size_t>(i)] = value<T>(q, i, 1);
      expect_equal(checks, piece, want, describe("split_along piece " + std::to_string(q) + " of", dt, c.s));
    }
    // split then gather round-trips a replicated full tensor.
    std::vector<T> mine(static_cast<std::size_t>(c.shard_n)), again(static_cast<std::size_t>(c.full_n));
    parallel::split_along(c.want_full.data(), mine.data(), c.s, dt, tp.rank(), tp.size());
    parallel::gather_along(tp, mine.data(), again.data(), c.s, dt);
    expect_equal(checks, again, c.want_full, describe("split then gather", dt, c.s));
  }

  // Non-blocking forms: every gather and reduce-scatter in flight, the last polled with
  // test(), the others waited for in reverse order.
  std::vector<Work> works;
  for (auto& c : cases) {
    c.reset();
    works.push_back(parallel::igather_along(tp, c.shard_in.data(), c.got_full.data(), c.s, dt));
    works.push_back(parallel::ireduce_scatter_along(tp, c.full_in.data(), c.got_shard.data(), c.s, dt));
  }
  // Past ireduce_scatter_along's return `full` may be reused when outer > 1 (the input was
  // rearranged before the collective started): clobber it, and restore it for the checks.
  std::vector<std::vector<T>> saved;
  for (auto& c : cases) {
    saved.push_back(c.full_in);
    if (c.s.outer > 1) std::fill(c.full_in.begin(), c.full_in.end(), static_cast<T>(-7));
  }
  checks.expect(poll_until_done(works.back()), std::string(dtype_name(dt)) + ": test() never turned true");
  for (auto it = works.rbegin(); it != works.rend(); ++it) it->wait();
  for (std::size_t k = 0; k < cases.size(); ++k) {
    auto& c = cases[k];
    c.full_in = saved[k];
    expect_equal(checks, c.got_full, c.want_full, describe("igather_along", dt, c.s));
    expect_equal(checks, c.got_shard, c.want_shard, describe("ireduce_scatter_along", dt, c.s));
  }
  // test() alone (no wait) completes and rearranges a gather with outer > 1.
  for (auto& c : cases) {
    if (c.s.outer <= 1 || c.shard_n == 0) continue;
    c.reset();
    Work w = parallel::igather_along(tp, c.shard_in.data(), c.got_full.data(), c.s, dt);
    checks.expect(poll_until_done(w), describe("igather_along test()", dt, c.s) + ": never true");
    expect_equal(checks, c.got_full, c.want_full, describe("igather_along after test() alone", dt, c.s));
    checks.expect(w.test() && w.completed(), describe("igather_along", dt, c.s) + ": test() after true");
  }

  // tp_allreduce and tp_iallreduce sum.
  for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{1000}, std::int64_t{65537}}) {
    std::vector<T> data = sized<T>(count), want = sized<T>(count);
    for (std::int64_t i = 0; i < count; ++i) {
      data[static_cast<std::size_t>(i)] = value<T>(tp.rank(), i, 3);
      T sum{};
      for (int q = 0; q < tp.size(); ++q) sum += value<T>(q, i, 3);
      want[static_cast<std::size_t>(i)] = sum;
    }
    std::vector<T> async = data;
    parallel::tp_allreduce(tp, data.data(), count, dt);
    expect_equal(checks, data, want, std::string("tp_allreduce ") + std::string(dtype_name(dt)) + " count " +
                                         std::to_string(count));
    Work w = parallel::tp_iallreduce(tp, async.data(), count, dt);
    w.wait();
    expect_equal(checks, async, want, std::string("tp_iallreduce ") + std::string(dtype_name(dt)) + " count " +
                                          std::to_string(count));
    digest = fnv(digest, data.data(), data.size() * sizeof(T));
  }
}

template <class F>
void expect_invalid(Checks& checks, const std::string& what, F&& call) {
  try {
    call();
    checks.expect(false, what + ": no error");
  } catch (const InvalidArgument&) {
  } catch (const Error& e) {
    checks.expect(false, what + ": not InvalidArgument: " + e.what());
  }
}

void check_bad_arguments(Communicator& tp, Checks& checks) {
  std::vector<float> a(64), b(256);
  const DType f = DType::kF32;
  for (SplitShape bad : {SplitShape{-1, 2, 1}, SplitShape{1, -2, 1}, SplitShape{2, 2, -1}}) {
    expect_invalid(checks, "gather_along negative", [&] { parallel::gather_along(tp, a.data(), b.data(), bad, f); });
    expect_invalid(checks, "igather_along negative", [&] { parallel::igather_along(tp, a.data(), b.data(), bad, f); });
    expect_invalid(checks, "reduce_scatter_along negative",
                   [&] { parallel::reduce_scatter_along(tp, b.data(), a.data(), bad, f); });
    expect_invalid(checks, "ireduce_scatter_along negative",
                   [&] { parallel::ireduce_scatter_along(tp, b.data(), a.data(), bad, f); });
    expect_invalid(checks, "split_along negative",
                   [&] { parallel::split_along(b.data(), a.data(), bad, f, 0, tp.size()); });
  }
  const SplitShape good{2, 2, 2};
  expect_invalid(checks, "gather_along null", [&] { parallel::gather_along(tp, nullptr, b.data(), good, f); });
  expect_invalid(checks, "igather_along null", [&] { parallel::igather_along(tp, a.data(), nullptr, good, f); });
  expect_invalid(checks, "reduce_scatter_along null",
                 [&] { parallel::reduce_scatter_along(tp, nullptr, a.data(), good, f); });
  expect_invalid(checks, "split_along piece out of range",
                 [&] { parallel::split_along(b.data(), a.data(), good, f, tp.size(), tp.size()); });
  expect_invalid(checks, "split_along negative piece",
                 [&] { parallel::split_along(b.data(), a.data(), good, f, -1, tp.size()); });
  // Nothing was issued: the communicator still works.
  std::vector<float> one(3, 1.0f);
  parallel::tp_allreduce(tp, one.data(), 3, f);
  checks.expect(one[0] == static_cast<float>(tp.size()) && one[2] == static_cast<float>(tp.size()),
                "tp_allreduce after the refused calls: wrong result");
}

bool digests_agree(Communicator& comm, std::uint64_t digest) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(comm.size()));
  const auto mine = static_cast<std::int64_t>(digest);
  allgather(comm, &mine, all.data(), 1, DType::kI64);
  for (std::int64_t d : all) {
    if (d != mine) return false;
  }
  return true;
}

}  // namespace

int scenario_tensor_parallel(Communicator& comm, const Args&) {
  Checks checks("tensor-parallel", comm.rank());
  std::uint64_t digest = 1469598103934665603ull;
  check_dtype<float>(comm, checks, digest);
  check_dtype<double>(comm, checks, digest);
  check_dtype<std::int32_t>(comm, checks, digest);
  check_bad_arguments(comm, checks);
  checks.expect(digests_agree(comm, digest), "world results differ between ranks");
  // A TP group inside a larger mesh: groups of two consecutive ranks (the last alone when odd).
  std::optional<Communicator> group = comm.split(comm.rank() / 2, comm.rank());
  std::uint64_t group_digest = 1469598103934665603ull;
  check_dtype<float>(*group, checks, group_digest);
  check_dtype<std::int32_t>(*group, checks, group_digest);
  // Values depend on the rank in the group: groups of the same size agree.
  std::optional<Communicator> same_size = comm.split(group->size(), comm.rank());
  checks.expect(digests_agree(*same_size, group_digest), "group results differ between ranks");
  if (checks.failures() > 0) return 1;
  RANK_SAY("PASS tensor-parallel rank %d", comm.rank());
  return 0;
}

// Work's contract: dropping every handle does not cancel the operation. igather_along and
// ireduce_scatter_along with outer > 1 stage through a buffer of their own, which must live
// until the collective has run, and the gather's result must still land in `full`. The
// staging buffers are large (mmapped: freed, they are unmapped) and queued behind a long
// allreduce, so a staging buffer freed with the handle is touched after it is gone.
int scenario_tensor_parallel_dropped(Communicator& comm, const Args&) {
  Checks checks("tensor-parallel-dropped", comm.rank());
  const SplitShape s{4, 64, 1024};
  Case<float> c(s, comm.size(), comm.rank());
  std::vector<float> busy(1 << 22, 1.0f);
  for (int round = 0; round < 3; ++round) {
    c.reset();
    parallel::tp_iallreduce(comm, busy.data(), static_cast<std::int64_t>(busy.size()), DType::kF32);
    parallel::igather_along(comm, c.shard_in.data(), c.got_full.data(), s, DType::kF32);  // handle dropped
    parallel::ireduce_scatter_along(comm, c.full_in.data(), c.got_shard.data(), s, DType::kF32);  // dropped
    comm.barrier();  // runs after the queued collectives (and whatever they queued)
    expect_equal(checks, c.got_full, c.want_full, "igather_along with its handle dropped");
    expect_equal(checks, c.got_shard, c.want_shard, "ireduce_scatter_along with its handle dropped");
  }
  if (checks.failures() > 0) return 1;
  RANK_SAY("PASS tensor-parallel-dropped rank %d", comm.rank());
  return 0;
}

int scenario_tensor_parallel_mismatch(Communicator& comm, const Args& args) {
  const std::string op = args.empty() ? "gather" : args[0];
  const int r = comm.rank(), n = comm.size();
  const bool outer = op.find("outer") != std::string::npos;
  const bool zero = op.find("zero") != std::string::npos;  // the last rank's local is 0
  SplitShape s{outer ? 3 : 1, r == n - 1 ? (zero ? 0 : 5) : 4, 2};
  std::vector<float> shard(static_cast<std::size_t>(s.shard_elements()), 1.0f);
  std::vector<float> full(static_cast<std::size_t>(s.shard_elements() * n), 1.0f);
  try {
    // Every rank past its set-up first (an abort must not find a rank still in init). A rank
    // may still be finishing the barrier when the others' mismatch aborts the job: it reports
    // the same error from there.
    comm.barrier();
    if (op == "gather" || op == "gather-outer" || op == "gather-zero") {
      parallel::gather_along(comm, shard.data(), full.data(), s, DType::kF32);
    } else if (op == "igather") {
      parallel::igather_along(comm, shard.data(), full.data(), s, DType::kF32).wait();
    } else if (op == "reduce-scatter" || op == "reduce-scatter-outer") {
      parallel::reduce_scatter_along(comm, full.data(), shard.data(), s, DType::kF32);
    } else {
      RANK_SAY("FAIL tensor-parallel-mismatch: unknown op %s", op.c_str());
      return 2;
    }
    // The next collective: a rank that moved nothing must not run ahead of the others unseen.
    std::vector<float> next(8, 1.0f);
    parallel::tp_allreduce(comm, next.data(), 8, DType::kF32);
    RANK_SAY("NO-ERROR rank %d", r);
  } catch (const Mismatch& e) {
    RANK_SAY("MISMATCH rank %d: %s", r, e.what());
  } catch (const Error& e) {
    RANK_SAY("ERROR-NOT-MISMATCH rank %d: %s", r, e.what());
  }
  RANK_SAY("DONE tensor-parallel-mismatch rank %d", r);
  return 0;
}

namespace {

using Traffic = std::map<std::string, double>;

std::string show(const Traffic& t) {
  std::string out;
  for (const auto& [axis, bytes] : t) out += axis + "=" + std::to_string(bytes) + " ";
  return out;
}

// The documented formulas (axis_traffic.h), written out here.
double allreduce_bytes(double s, int n) { return 2.0 * (n - 1) / n * s; }
double piece_bytes(double p, int n) { return (n - 1) * p; }
double rooted_bytes(double s, int n) { return (n - 1.0) / n * s; }

std::size_t traced_comm_events(const trace::TraceRecorder& recorder) { return recorder.snapshot().comm.size(); }

}  // namespace

int scenario_axis_traffic(Communicator& world, const Args&) {
  Checks checks("axis-traffic", world.rank());
  const int n = world.size();
  std::optional<Communicator> tp = world.split(world.rank() / 2, world.rank());
  const int m = tp->size();
  // A communicator of one rank is not watched and moves nothing.
  auto on = [](int ranks, double bytes) { return ranks > 1 ? bytes : 0.0; };

  parallel::AxisTraffic traffic;
  traffic.watch(world, "dp");
  traffic.watch(*tp, "tp");
  checks.expect(traffic.take() == Traffic{{"dp", 0.0}, {"tp", 0.0}}, "fresh counter is not dp=0 tp=0");

  constexpr std::int64_t kN = 1000, kP = 96;
  std::vector<float> x(kN * 4, 1.0f), y(kN * 4, 0.0f);
  double dp = 0, tpb = 0;
  allreduce(world, x.data(), y.data(), kN, DType::kF32, ReduceOp::kSum);
  dp += on(n, allreduce_bytes(kN * 4.0, n));
  allgather(world, x.data(), y.data(), kP, DType::kF32);
  dp += on(n, piece_bytes(kP * 4.0, n));
  reduce_scatter(world, x.data(), y.data(), kP, DType::kF32, ReduceOp::kSum);
  dp += on(n, piece_bytes(kP * 4.0, n));
  broadcast(world, x.data(), kN, DType::kF32, 0);
  dp += on(n, rooted_bytes(kN * 4.0, n));
  allreduce(world, x.data(), y.data(), 0, DType::kF32, ReduceOp::kSum);  // moves nothing
  std::vector<double> d(kP, 1.0);
  iallreduce(world, d.data(), d.data(), kP, DType::kF64, ReduceOp::kSum).wait();
  dp += on(n, allreduce_bytes(kP * 8.0, n));
  // The primitives on the TP group: gather/reduce-scatter move (m-1) shards, allreduce 2(m-1)/m.
  const SplitShape s{3, 4, 5};
  std::vector<float> shard(static_cast<std::size_t>(s.shard_elements()), 1.0f);
  std::vector<float> full(static_cast<std::size_t>(s.shard_elements() * m), 1.0f);
  const double shard_bytes = static_cast<double>(s.shard_elements()) * 4.0;
  parallel::gather_along(*tp, shard.data(), full.data(), s, DType::kF32);
  tpb += on(m, piece_bytes(shard_bytes, m));
  parallel::reduce_scatter_along(*tp, full.data(), shard.data(), s, DType::kF32);
  tpb += on(m, piece_bytes(shard_bytes, m));
  parallel::tp_allreduce(*tp, full.data(), 50, DType::kF32);
  tpb += on(m, allreduce_bytes(50 * 4.0, m));
  parallel::igather_along(*tp, shard.data(), full.data(), s, DType::kF32).wait();
  tpb += on(m, piece_bytes(shard_bytes, m));
  parallel::ireduce_scatter_along(*tp, full.data(), shard.data(), s, DType::kF32).wait();
  tpb += on(m, piece_bytes(shard_bytes, m));
  traffic.add_sent("pp", 123.0);
  Traffic got = traffic.take();
  Traffic want{{"dp", dp}, {"tp", tpb}, {"pp", 123.0}};
  checks.expect(got == want, "take(): " + show(got) + "want " + show(want));
  got = traffic.take();
  want = {{"dp", 0.0}, {"tp", 0.0}, {"pp", 0.0}};
  checks.expect(got == want, "take() does not reset: " + show(got));

  // unwatch stops counting on that communicator only.
  traffic.unwatch(world);
  allreduce(world, x.data(), y.data(), kN, DType::kF32, ReduceOp::kSum);
  parallel::tp_allreduce(*tp, full.data(), 50, DType::kF32);
  got = traffic.take();
  want = {{"dp", 0.0}, {"tp", on(m, allreduce_bytes(50 * 4.0, m))}, {"pp", 0.0}};
  checks.expect(got == want, "after unwatch(world): " + show(got) + "want " + show(want));

  // Tracing and counting the same communicator: two keys on its observer, both working.
  trace::TraceRecorder recorder(trace::TraceOptions{.rank = world.rank()});
  trace_collectives(world, recorder);
  traffic.watch(world, "dp");
  allreduce(world, x.data(), y.data(), kN, DType::kF32, ReduceOp::kSum);
  got = traffic.take();
  checks.expect(got["dp"] == on(n, allreduce_bytes(kN * 4.0, n)), "traced and counted: dp " + show(got));
  const std::size_t expected_events = n > 1 ? 1 : 0;
  checks.expect(traced_comm_events(recorder) == expected_events,
                "traced and counted: " + std::to_string(traced_comm_events(recorder)) + " trace events");
  // Stopping the tracer leaves the counter; unwatching the counter leaves the tracer.
  stop_tracing_collectives(world);
  allreduce(world, x.data(), y.data(), kN, DType::kF32, ReduceOp::kSum);
  got = traffic.take();
  checks.expect(got["dp"] == on(n, allreduce_bytes(kN * 4.0, n)), "after stop_tracing: dp " + show(got));
  checks.expect(traced_comm_events(recorder) == expected_events, "after stop_tracing: the tracer still records");
  trace_collectives(world, recorder);
  traffic.unwatch(world);
  allreduce(world, x.data(), y.data(), kN, DType::kF32, ReduceOp::kSum);
  got = traffic.take();
  checks.expect(got["dp"] == 0.0, "after unwatch with the tracer on: dp " + show(got));
  checks.expect(traced_comm_events(recorder) == 2 * expected_events,
                "after unwatch: the tracer stopped recording (" + std::to_string(traced_comm_events(recorder)) + ")");
  stop_tracing_collectives(world);

  if (checks.failures() > 0) return 1;
  RANK_SAY("PASS axis-traffic rank %d", world.rank());
  return 0;
}

}  // namespace braid::testing
