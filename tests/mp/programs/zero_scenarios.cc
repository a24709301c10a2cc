// Scenario `zero_grad_sync`: GradSync's ZeRO stages 1 and 2 (gradient side) on real ranks.
//
// For stage 1 and stage 2, each over plain steps, 2-micro-step accumulation under
// set_sync(false) and an unused parameter with allow_unused: every rank's shard_gradient(b)
// must equal its slice of braid::allreduce(kAvg) of the same bucket contents, the shards of all
// ranks (allgathered) must reproduce that average, and the padding must be zero.
//
// Bitwise, by construction: the gradients hold small multiples of 1/4, so every partial sum is
// exact in fp32 whatever the reduction order, and both reduce_scatter and allreduce divide
// once, at the end (collectives.h: "avg divides once"). The comparison is therefore exact
// whatever algorithm the tuner picks for either collective (ring, recursive halving, shm
// direct); with arbitrary floats it would hold only within n x eps x sum|g|, because the
// algorithms need not add the ranks' contributions in the same order.
//
// The model mixes a zero-size parameter, parameters smaller than the world size (1, 2, 3
// elements) and one larger than the 1 MiB bucket cap, so that buckets of odd sizes exercise the
// padding at 3 and 4 ranks. Also: the unused-parameter error on every rank, the wire bytes
// (a reduce-scatter: half of DDP's allreduce), the trace's "reduce_scatter" buckets, snapshot /
// restore's zero_stage check and the bad options.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/shm_workspace.h"
#include "braid/comm/communicator_internal.h"
#include "braid/compress/codec_spec.h"
#include "braid/engine/grad_sync.h"
#include "braid/trace/trace_recorder.h"
#include "gradient_model.h"
#include "scenario.h"
#include "scenario_checks.h"

namespace braid::testing {

namespace {

const std::vector<std::int64_t> kCounts = {1000, 0, 3, 37, 300000, 1, 5, 2, 70000, 11};

struct Model : GradientModel {
  explicit Model(GradSync& sync) : GradientModel(sync, kCounts) {}
};

void fill(Model& m, int rank, int step, bool add = false) { m.fill(rank, step, /*param_stride=*/3, add); }

void mark_all_shuffled(GradSync& sync, int rank, int step, int skip = -1) {
  std::vector<int> order(kCounts.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(static_cast<unsigned>(rank * 1000 + step));
  std::shuffle(order.begin(), order.end(), rng);
  for (int p : order) {
    if (p != skip) sync.mark_ready(p);
  }
}

// Checks every bucket of `sync` against allreduce(kAvg) of this rank's bucket contents (its
// gradients `grads`, with zeros for `unused_param`), and the allgathered shards against it.
bool check_shards(Communicator& comm, GradSync& sync, const std::vector<std::vector<float>>& grads,
                  const std::string& what, int unused_param = -1) {
  const int n = comm.size();
  const engine::BucketPlan& plan = sync.plan();
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const engine::Bucket& bucket = plan.buckets[b];
    BucketShard s = sync.bucket_shard(static_cast<int>(b));
    if (s != engine::bucket_shard(bucket.elements, n, comm.rank()) || s.padded != n * s.shard ||
        s.padded - bucket.elements >= std::max(n, 1) || (bucket.elements > 0 && s.padded < bucket.elements)) {
      return fail(comm, fmt::format("{}: bucket {} of {} elements: shard {} [{}, {}) padded {}", what, b,
                                    bucket.elements, s.shard, s.begin, s.end, s.padded));
    }
    std::vector<float> local(static_cast<std::size_t>(bucket.elements), 0.0f);
    for (std::size_t i = 0; i < bucket.params.size(); ++i) {
      int p = bucket.params[i];
      if (p == unused_param) continue;
      std::copy(grads[static_cast<std::size_t>(p)].begin(), grads[static_cast<std::size_t>(p)].end(),
                local.begin() + bucket.offsets[i]);
    }
    std::vector<float> average(local.size());
    allreduce(comm, local.data(), average.data(), static_cast<std::int64_t>(local.size()), DType::kF32, ReduceOp::kAvg);
    std::span<const float> shard = sync.shard_gradient(static_cast<int>(b));
    if (static_cast<std::int64_t>(shard.size()) != s.shard) {
      return fail(comm, fmt::format("{}: bucket {}'s shard holds {} floats, not {}", what, b, shard.size(), s.shard));
    }
    for (std::int64_t i = 0; i < s.shard; ++i) {
      std::int64_t e = comm.rank() * s.shard + i;
      float want = e < bucket.elements ? average[static_cast<std::size_t>(e)] : 0.0f;
      float got = shard[static_cast<std::size_t>(i)];
      if (std::memcmp(&want, &got, sizeof(float)) != 0) {
        return fail(comm, fmt::format("{}: bucket {} element {} ({}) is {}, allreduce says {}", what, b, e,
                                      e < bucket.elements ? "real" : "padding", got, want));
      }
    }
    std::vector<float> gathered(static_cast<std::size_t>(s.padded));
    if (s.shard > 0) allgather(comm, shard.data(), gathered.data(), s.shard, DType::kF32);
    for (std::int64_t e = 0; e < s.padded; ++e) {
      float want = e < bucket.elements ? average[static_cast<std::size_t>(e)] : 0.0f;
      if (std::memcmp(&want, &gathered[static_cast<std::size_t>(e)], sizeof(float)) != 0) {
        return fail(comm, fmt::format("{}: the gathered shards of bucket {} differ from the average at {}", what, b, e));
      }
    }
  }
  return true;
}

// The registered buffers keep this rank's local gradients: ZeRO writes no average back.
bool untouched(Communicator& comm, const Model& m, const Model& local_copy, const std::string& what) {
  if (m.grads != local_copy.grads) return fail(comm, what + ": the registered gradients were overwritten");
  return true;
}

// The step's wire bytes are the ring reduce-scatter's: (n-1) shards per bucket, within one
// element per block of half of what DDP's ring allreduce of the same buckets sends.
bool check_wire(Communicator& comm, GradSync& sync, const GradSyncStats& stats, const std::string& what) {
  std::uint64_t want = 0;
  for (int b = 0; b < static_cast<int>(sync.plan().buckets.size()); ++b) {
    want += static_cast<std::uint64_t>(comm.size() - 1) * static_cast<std::uint64_t>(sync.bucket_shard(b).shard) * 4;
  }
  std::uint64_t dense = stats.wire.dense_wire_bytes;
  std::uint64_t slack = 8ull * static_cast<std::uint64_t>(comm.size()) * static_cast<std::uint64_t>(stats.buckets);
  if (stats.wire.wire_bytes != want || 2 * want < dense || 2 * want > dense + slack) {
    return fail(comm, fmt::format("{}: wire bytes {} (want {}), DDP's allreduce {}", what, stats.wire.wire_bytes, want, dense));
  }
  if (comm.rank() == 0 && comm.size() > 1) {
    RANK_SAY("WIRE %s: reduce_scatter %llu bytes, allreduce %llu (fraction %.3f)", what.c_str(),
             static_cast<unsigned long long>(want), static_cast<unsigned long long>(dense), stats.wire.wire_fraction());
  }
  return true;
}

GradSyncOptions zero_options(int stage, bool allow_unused = false) {
  return {.bucket_cap = "1", .allow_unused = allow_unused, .rebuild_buckets = false, .zero_stage = stage};
}

// How many times this rank's shared-memory workspace reached a peer's registered buffer (0
// without a workspace): the zero-copy collectives ran.
std::uint64_t zero_copy_uses(Communicator& comm) {
  auto* ws = detail::CollectiveAccess(comm).find_attachment<ShmWorkspace>();
  return ws == nullptr ? 0 : ws->registered_buffer_uses();
}

// With registered send buffers (the default, where every rank is on one host over shm) the
// reduce-scatters read the peers' buffers in place; without
// (`registered` false) the same shards come out of the staged path.
bool plain_steps(Communicator& comm, int stage, bool registered) {
  GradSyncOptions options = zero_options(stage);
  options.registered_buckets = registered;
  const std::uint64_t uses_before = zero_copy_uses(comm);
  GradSync sync(comm, options);
  Model m(sync);
  sync.plan_buckets();
  sync.plan_buckets();  // idempotent
  const engine::BucketPlan first = sync.plan();
  bool ok = true;
  for (int step = 0; step < 3 && ok; ++step) {
    std::string what = fmt::format("stage {} step {}", stage, step);
    fill(m, comm.rank(), step);
    Model copy = m;
    mark_all_shuffled(sync, comm.rank(), step);
    GradSyncStats stats = sync.finish();
    ok = check_shards(comm, sync, m.grads, what) && untouched(comm, m, copy, what) && check_wire(comm, sync, stats, what);
    if (ok && !(sync.plan() == first)) ok = fail(comm, what + ": the bucket plan moved");
  }
  const bool zero_copy = sync.registered_buckets() && comm.size() > 1;
  if (ok && zero_copy != (zero_copy_uses(comm) > uses_before)) {
    ok = fail(comm, fmt::format("stage {}: registered send buffers {}, but peers' registered buffers reached {} -> {} "
                                "times",
                                stage, sync.registered_buckets(), uses_before, zero_copy_uses(comm)));
  }
  return ok;
}

bool accumulation(Communicator& comm, int stage) {
  GradSync sync(comm, zero_options(stage));
  Model m(sync);
  fill(m, comm.rank(), 0);
  sync.set_sync(false);
  mark_all_shuffled(sync, comm.rank(), 0);
  GradSyncStats quiet = sync.finish();  // nothing launches
  sync.set_sync(true);
  fill(m, comm.rank(), 1, /*add=*/true);
  mark_all_shuffled(sync, comm.rank(), 1);
  GradSyncStats stats = sync.finish();
  std::string what = fmt::format("stage {}, 2 accumulated micro-steps", stage);
  if (quiet.buckets != 0) return fail(comm, what + ": the unsynchronised finish launched buckets");
  return check_shards(comm, sync, m.grads, what) && check_wire(comm, sync, stats, what);
}

bool allow_unused(Communicator& comm, int stage) {
  const int skipper = comm.size() > 1 ? 1 : 0;
  bool ok = true;
  for (int unused : {4, 2}) {  // a bucket of its own (300000 > 1 MiB), a shared one
    GradSync sync(comm, zero_options(stage, /*allow_unused=*/true));
    Model m(sync);
    fill(m, comm.rank(), 7);
    mark_all_shuffled(sync, comm.rank(), 7, comm.rank() == skipper ? unused : -1);
    sync.finish();
    ok = check_shards(comm, sync, m.grads, fmt::format("stage {}, param {} unused on rank {}", stage, unused, skipper),
                      comm.rank() == skipper ? unused : -1) && ok;
  }
  return ok;
}

bool unused_is_an_error(Communicator& comm, int stage) {
  const int skipper = comm.size() > 1 ? 1 : 0;
  GradSync sync(comm, zero_options(stage));
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
  }
  if (!raised) return fail(comm, fmt::format("stage {}: the unused parameter was not reported as agreed", stage));
  fill(m, comm.rank(), 1);  // the next step works
  mark_all_shuffled(sync, comm.rank(), 1);
  sync.finish();
  return check_shards(comm, sync, m.grads, fmt::format("stage {}, the step after the unused error", stage));
}

bool traced(Communicator& comm, int stage) {
  trace::TraceRecorder recorder(trace::TraceOptions{.rank = comm.rank()});
  GradSyncOptions options = zero_options(stage);
  options.trace = &recorder;
  GradSync sync(comm, options);
  Model m(sync);
  fill(m, comm.rank(), 0);
  sync.plan_buckets();
  const int planned = static_cast<int>(sync.plan().buckets.size());
  auto bucket_events = [&] {
    std::vector<trace::CommEvent> events;
    for (const trace::CommEvent& e : recorder.snapshot().comm) {
      if (e.name.rfind("bucket ", 0) == 0 && e.algorithm == "reduce_scatter") events.push_back(e);
    }
    return events;
  };
  mark_all_shuffled(sync, comm.rank(), 0);
  if (stage == 2) {
    // Stage 2 launched every bucket during "backward": they complete without finish().
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (static_cast<int>(bucket_events().size()) < planned && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (static_cast<int>(bucket_events().size()) != planned) {
      return fail(comm, "stage 2: the buckets did not run before finish()");
    }
  }
  recorder.mark("finish");
  sync.finish();
  trace::TraceData data = recorder.snapshot();
  std::int64_t finish_ns = data.marks.empty() ? 0 : data.marks.back().at_ns;
  std::vector<trace::CommEvent> events = bucket_events();
  if (static_cast<int>(events.size()) != planned) {
    return fail(comm, fmt::format("stage {}: {} reduce_scatter bucket events for {} buckets", stage, events.size(), planned));
  }
  for (const trace::CommEvent& e : events) {
    if (stage == 1 && e.start_ns < finish_ns) return fail(comm, "stage 1: " + e.name + " started before finish()");
  }
  return true;
}

bool bad_options_and_snapshots(Communicator& comm) {
  compress::CompressionPolicy int8({.codec = compress::parse_codec_spec("int8")});
  bool ok = throws_invalid(comm, "zero_stage 3", [&] { GradSync s(comm, zero_options(3)); });
  ok = throws_invalid(comm, "zero_stage -1", [&] { GradSync s(comm, zero_options(-1)); }) && ok;
  ok = throws_invalid(comm, "zero_stage 1 with int8", [&] {
    GradSyncOptions o = zero_options(1);
    o.policy = int8;
    GradSync s(comm, o);
  }) && ok;
  ok = throws_invalid(comm, "zero_stage 2 with rebuild_buckets", [&] {
    GradSyncOptions o = zero_options(2);
    o.rebuild_buckets = true;
    GradSync s(comm, o);
  }) && ok;
  ok = throws_invalid(comm, "zero_stage 1 with gradients_in_buckets", [&] {
    GradSyncOptions o = zero_options(1);
    o.gradients_in_buckets = true;
    o.on_gradients_moved = [](int, float*) {};
    GradSync s(comm, o);
  }) && ok;
  ok = throws_invalid(comm, "gradients_in_buckets without on_gradients_moved", [&] {
    GradSync s(comm, {.gradients_in_buckets = true});
  }) && ok;
  {
    GradSync ddp(comm, {.bucket_cap = "1"});
    Model m(ddp);
    ddp.plan_buckets();
    ok = throws_invalid(comm, "shard_gradient under zero_stage 0", [&] { ddp.shard_gradient(0); }) && ok;
  }
  GradSync zero(comm, zero_options(2));
  Model m(zero);
  ok = throws_invalid(comm, "bucket_shard before planning", [&] { zero.bucket_shard(0); }) && ok;
  fill(m, comm.rank(), 0);
  mark_all_shuffled(zero, comm.rank(), 0);
  zero.finish();
  ok = throws_invalid(comm, "bucket_shard(-1)", [&] { zero.bucket_shard(-1); }) && ok;
  GradSyncSnapshot snapshot = zero.snapshot();
  if (snapshot.zero_stage != 2) ok = fail(comm, "the snapshot does not carry zero_stage 2");
  {
    GradSync other(comm, zero_options(1));
    Model m1(other);
    ok = throws_invalid(comm, "restoring a stage-2 snapshot into stage 1", [&] { other.restore(snapshot); }) && ok;
  }
  GradSync resumed(comm, zero_options(2));
  Model m2(resumed);
  resumed.restore(snapshot);
  if (!(resumed.plan() == zero.plan()) || resumed.step() != 1) ok = fail(comm, "restore did not resume the plan and step");
  fill(m2, comm.rank(), 1);
  mark_all_shuffled(resumed, comm.rank(), 1);
  resumed.finish();
  return check_shards(comm, resumed, m2.grads, "after restore") && ok;
}

// ZeRO-2's released gradients (GradSyncOptions::on_gradients_copied, mark_ready(param, grad)),
// as the LibTorch adapter uses them: nothing registered, each gradient allocated just before it
// is marked (as autograd does) and freed by the callback once its bucket was copied. Over 3
// steps and rings of 1 and 2 bucket caps: the shards equal the allreduce of the same gradients
// bitwise; every gradient was freed before finish() (all buckets launched during "backward");
// marked in bucket order, no more than one bucket's gradients were alive at once; the ring is
// the size the rule says and never over-lent.
bool released_gradients(Communicator& comm, int send_buffers) {
  GradSyncOptions options = zero_options(2);
  options.zero_send_buffers = send_buffers;
  std::vector<std::vector<float>> grads(kCounts.size());
  std::int64_t live = 0, peak = 0;
  GradSync* owner = nullptr;
  options.on_gradients_copied = [&](int bucket) {
    for (int p : owner->plan().buckets[static_cast<std::size_t>(bucket)].params) {
      live -= static_cast<std::int64_t>(grads[static_cast<std::size_t>(p)].size());
      std::vector<float>().swap(grads[static_cast<std::size_t>(p)]);
    }
  };
  GradSync sync(comm, options);
  owner = &sync;
  for (std::size_t p = 0; p < kCounts.size(); ++p) sync.add_param(fmt::format("layer{}.weight", p), nullptr, kCounts[p], DType::kF32);
  sync.plan_buckets();
  std::int64_t largest_bucket = 0, ring = 0, total = 0;
  for (std::size_t b = 0; b < sync.plan().buckets.size(); ++b) {
    largest_bucket = std::max(largest_bucket, sync.plan().buckets[b].elements);
    ring = std::max(ring, sync.bucket_shard(static_cast<int>(b)).padded);
    total += sync.bucket_shard(static_cast<int>(b)).padded;
  }
  ring = std::max(ring, std::min<std::int64_t>(total, send_buffers * (1 << 20) / 4));  // bucket_cap "1"
  const std::string what = fmt::format("released gradients, ring of {} cap(s)", send_buffers);
  for (int step = 0; step < 3; ++step) {
    std::vector<std::vector<float>> reference(kCounts.size());
    std::vector<int> order;
    for (const engine::Bucket& bucket : sync.plan().buckets) order.insert(order.end(), bucket.params.begin(), bucket.params.end());
    if (step == 2) std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(comm.rank() + 5)));
    for (int p : order) {
      auto& g = grads[static_cast<std::size_t>(p)];
      g.resize(static_cast<std::size_t>(kCounts[static_cast<std::size_t>(p)]));
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = gradient_pattern(comm.rank(), step, static_cast<std::size_t>(p), i, 3);
      reference[static_cast<std::size_t>(p)] = g;
      live += static_cast<std::int64_t>(g.size());
      if (step < 2) peak = std::max(peak, live);
      sync.mark_ready(p, g.data());
    }
    for (std::size_t p = 0; p < grads.size(); ++p) {
      if (!grads[p].empty()) return fail(comm, fmt::format("{} step {}: param {}'s gradient was not released before finish()", what, step, p));
    }
    GradSyncStats stats = sync.finish();
    if (!check_shards(comm, sync, reference, fmt::format("{} step {}", what, step)) ||
        !check_wire(comm, sync, stats, fmt::format("{} step {}", what, step))) {
      return false;
    }
  }
  if (peak > largest_bucket) return fail(comm, fmt::format("{}: {} gradient floats alive at once, the largest bucket has {}", what, peak, largest_bucket));
  std::size_t ring_bytes = static_cast<std::size_t>(ring) * sizeof(float);
  if (sync.send_buffer_bytes() != ring_bytes || sync.peak_send_buffer_bytes() > ring_bytes) {
    return fail(comm, fmt::format("{}: send buffers {} bytes (want the ring's {}), {} lent at most", what,
                                  sync.send_buffer_bytes(), ring_bytes, sync.peak_send_buffer_bytes()));
  }
  return true;
}

// Late-bound gradients misused: a stage-2 parameter registered without a buffer and marked
// without one, a null buffer at mark_ready, a stage-1 parameter without a buffer, no ring.
bool released_gradients_misuse(Communicator& comm) {
  bool ok = throws_invalid(comm, "zero_send_buffers 0", [&] {
    GradSyncOptions o = zero_options(2);
    o.zero_send_buffers = 0;
    GradSync s(comm, o);
  });
  ok = throws_invalid(comm, "a stage-1 parameter without a buffer", [&] {
    GradSync s(comm, zero_options(1));
    s.add_param("w", nullptr, 10, DType::kF32);
  }) && ok;
  GradSync sync(comm, zero_options(2));
  sync.add_param("w", nullptr, 10, DType::kF32);
  ok = throws_invalid(comm, "mark_ready(0, nullptr)", [&] { sync.mark_ready(0, nullptr); }) && ok;
  ok = throws_invalid(comm, "mark_ready(0) with no buffer anywhere", [&] { sync.mark_ready(0); }) && ok;
  return ok;
}

}  // namespace

int scenario_zero_grad_sync(Communicator& comm, const Args&) {
  bool ok = true;
  for (int stage : {1, 2}) {
    for (bool registered : {false, true}) ok = plain_steps(comm, stage, registered) && ok;
    ok = accumulation(comm, stage) && ok;
    ok = allow_unused(comm, stage) && ok;
    ok = unused_is_an_error(comm, stage) && ok;
    ok = traced(comm, stage) && ok;
  }
  ok = bad_options_and_snapshots(comm) && ok;
  for (int send_buffers : {1, 2}) ok = released_gradients(comm, send_buffers) && ok;
  ok = released_gradients_misuse(comm) && ok;
  if (!ok) return 1;
  RANK_SAY("PASS zero_grad_sync");
  return 0;
}

}  // namespace braid::testing
