// Scenarios of MoE dispatch and combine (parallel/moe_dispatcher.h) over the world as the EP
// group:
//  - `moe`: for top-1 and top-2, a capacity factor that drops (skewed gate), one that keeps
//    everything, dropless mode, f32 and f64, every token to one expert, experts that get
//    nothing, a rank with no tokens: run() with chunks 1, 2 and 4 and the unpipelined
//    primitives (dispatch, experts, combine) all equal, bit for bit, the reference that one
//    process holding every expert computes for this rank's tokens (its own routing by the
//    documented rule, written out independently below, and the same per-token arithmetic:
//    y = x a_e + b_e, out = sum_j g_j y_j left to right). The backward exchanges:
//    return_rows(dispatch_choices(rows)) gives the kept rows back exactly (zeros for dropped),
//    undispatch sums a token's copies; the pipelined run_choices and run_backward equal
//    dispatch + return_rows and dispatch_choices + undispatch bit for bit. Drops happen where they should (the group's total > 0)
//    and dropless drops nothing. Bytes: AxisTraffic over the group for one forward and one
//    backward, dropless, summed over the group, against ep x braid-plan's per-rank moe formulas
//    (within 1%). At 4 ranks, two cases again on EP groups of two split from the world.
//  - `moe-error CASE`: a bad layer or input on one or all ranks (CASE: experts, hidden,
//    indivisible, capacity, expert-id, chunks); every rank prints the error it got
//    ("MOE-ERROR rank R <kind>: <message>"), then all pass a barrier (nobody hung, the group is
//    still in step).
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/base/splitmix64.h"
#include "braid/collectives/collectives.h"
#include "braid/parallel/axis_traffic.h"
#include "braid/parallel/moe_dispatcher.h"
#include "braid/plan/comm_volume.h"
#include "scenario.h"

namespace braid::testing {
namespace {

using parallel::MoeDispatcher;
using parallel::MoeDispatchPlan;
using parallel::MoeExpertChunk;
using parallel::MoeLayerSpec;

enum class Gate { kRandom, kSkewed, kAllToOne, kHalfIdle };

struct Case {
  std::string name;
  int experts_per_rank = 2;
  int top_k = 1;
  double capacity_factor = 1.0;
  bool dropless = false;
  Gate gate = Gate::kRandom;
  DType dtype = DType::kF32;
  bool expect_drops = false;
};

struct Inputs {
  std::int64_t tokens = 0;
  std::vector<std::int32_t> ids;
  std::vector<float> gates;
  std::vector<double> x;  // tokens x hidden, exact in f32 too (small dyadic values)
};

constexpr std::int64_t kHidden = 24;

// tokens < 0: 37 + 11 rank (ranks hold different counts), none on rank 1 for "empty-rank".
Inputs make_inputs(const Case& c, int rank, int experts, std::uint64_t seed, std::int64_t tokens = -1) {
  SplitMix64 rng(seed * 977 + static_cast<std::uint64_t>(rank));
  Inputs in;
  in.tokens = tokens >= 0 ? tokens : (c.name == "empty-rank" && rank == 1) ? 0 : 37 + 11 * rank;
  for (std::int64_t t = 0; t < in.tokens; ++t) {
    std::vector<std::int32_t> picked;
    while (static_cast<int>(picked.size()) < c.top_k) {
      const std::uint64_t draw = rng.next();
      std::int32_t e = static_cast<std::int32_t>((draw >> 8) % static_cast<std::uint64_t>(experts));
      if (c.gate == Gate::kSkewed && draw % 3 != 0) e = static_cast<std::int32_t>((draw >> 8) % 2);
      if (c.gate == Gate::kAllToOne) e = static_cast<std::int32_t>((experts - 1 + static_cast<int>(picked.size())) % experts);
      if (c.gate == Gate::kHalfIdle) e = static_cast<std::int32_t>((draw >> 8) % static_cast<std::uint64_t>((experts + 1) / 2));
      bool repeated = false;
      for (std::int32_t p : picked) repeated = repeated || p == e;
      if (!repeated) picked.push_back(e);
    }
    for (std::int32_t e : picked) {
      in.ids.push_back(e);
      in.gates.push_back(static_cast<float>(rng.next_unit()));
    }
  }
  for (std::int64_t i = 0; i < in.tokens * kHidden; ++i) in.x.push_back(static_cast<double>(rng.next() % 512) / 64.0 - 4.0);
  return in;
}

template <class T>
T expert_scale(int e) { return static_cast<T>(1.0 + 0.125 * e); }
template <class T>
T expert_shift(int e) { return static_cast<T>(0.5 * e - 1.0); }

template <class T>
void apply_experts(const MoeExpertChunk& c) {
  const auto* in = static_cast<const T*>(c.input);
  auto* out = static_cast<T*>(c.output);
  for (std::size_t le = 0; le + 1 < c.expert_offsets.size(); ++le) {
    const int e = c.first_expert + static_cast<int>(le);
    for (std::int64_t i = c.expert_offsets[le] * c.hidden; i < c.expert_offsets[le + 1] * c.hidden; ++i) {
      out[i] = in[i] * expert_scale<T>(e) + expert_shift<T>(e);
    }
  }
}

// The reference, one process with every expert: the drop rule as stated in moe_routing.h (a
// choice is kept iff fewer than C choices of higher priority name its expert).
std::vector<bool> reference_kept(const Inputs& in, const Case& c, int experts) {
  const std::int64_t k = c.top_k, n = in.tokens * k;
  const std::int64_t capacity =
      c.dropless ? in.tokens : static_cast<std::int64_t>(std::ceil(c.capacity_factor * in.tokens * k / experts));
  std::vector<bool> kept(static_cast<std::size_t>(n));
  for (std::int64_t a = 0; a < n; ++a) {
    std::int64_t before = 0;
    for (std::int64_t b = 0; b < n; ++b) {
      const bool higher = (b % k) * in.tokens + b / k < (a % k) * in.tokens + a / k;
      if (higher && in.ids[static_cast<std::size_t>(b)] == in.ids[static_cast<std::size_t>(a)]) ++before;
    }
    kept[static_cast<std::size_t>(a)] = before < capacity;
  }
  return kept;
}

template <class T>
std::vector<T> reference_output(const Inputs& in, const Case& c, const std::vector<bool>& kept) {
  std::vector<T> out(static_cast<std::size_t>(in.tokens * kHidden), T(0));
  for (std::int64_t t = 0; t < in.tokens; ++t) {
    for (int j = 0; j < c.top_k; ++j) {
      const auto choice = static_cast<std::size_t>(t * c.top_k + j);
      if (!kept[choice]) continue;
      const int e = in.ids[choice];
      const T w = static_cast<T>(in.gates[choice]);
      for (std::int64_t i = 0; i < kHidden; ++i) {
        const T x = static_cast<T>(in.x[static_cast<std::size_t>(t * kHidden + i)]);
        const T y = x * expert_scale<T>(e) + expert_shift<T>(e);
        T& acc = out[static_cast<std::size_t>(t * kHidden + i)];
        acc = acc + w * y;
      }
    }
  }
  return out;
}

// memcmp, but for empty arrays too (a rank without tokens: data() may be null).
bool same_bytes(const void* a, const void* b, std::size_t bytes) { return bytes == 0 || std::memcmp(a, b, bytes) == 0; }

class MoeChecker {
 public:
  explicit MoeChecker(Communicator& comm) : comm_(comm) {}
  template <class T>
  void run_case(const Case& c, std::uint64_t seed);
  void check_bytes();
  int failures() const { return failures_; }

 private:
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    if (++failures_ <= 20) RANK_SAY("FAIL moe rank %d: %s", comm_.rank(), what.c_str());
  }
  template <class T>
  void check_backward(MoeDispatcher& moe, const MoeDispatchPlan& plan, const std::vector<T>& x,
                      const std::vector<bool>& kept, const Case& c);
  template <class T>
  void check_pipelined_backward(MoeDispatcher& moe, const MoeDispatchPlan& plan, const std::vector<T>& x,
                                const std::vector<T>& rows, const Case& c);

  Communicator& comm_;
  int failures_ = 0;
};

template <class T>
void MoeChecker::run_case(const Case& c, std::uint64_t seed) {
  const int experts = c.experts_per_rank * comm_.size();
  const Inputs in = make_inputs(c, comm_.rank(), experts, seed);
  const std::vector<bool> kept = reference_kept(in, c, experts);
  const std::vector<T> want = reference_output<T>(in, c, kept);
  const std::vector<T> x(in.x.begin(), in.x.end());
  MoeDispatcher moe(comm_, {.experts = experts, .top_k = c.top_k, .hidden = kHidden, .dtype = c.dtype,
                            .capacity_factor = c.capacity_factor, .dropless = c.dropless});
  const auto bytes = static_cast<std::size_t>(in.tokens * kHidden) * sizeof(T);
  for (int chunks : {1, 2, 4}) {
    const MoeDispatchPlan plan = moe.plan(in.ids, in.tokens, chunks);
    std::vector<T> out(want.size(), T(-7));
    moe.run(plan, x.data(), in.gates.data(), apply_experts<T>, out.data());
    expect(same_bytes(out.data(), want.data(), bytes), c.name + ": run() with " + std::to_string(chunks) +
                                                                 " chunks differs from the single-process reference");
    std::int64_t kept_here = 0;
    for (bool k : kept) kept_here += k ? 1 : 0;
    expect(plan.routing.kept_choices() == kept_here, c.name + ": kept choices differ from the reference rule");
    // The unpipelined primitives, as an autograd layer calls them.
    std::vector<T> expert_in(static_cast<std::size_t>(plan.expert_rows() * kHidden)), expert_out(expert_in.size());
    moe.dispatch(plan, x.data(), expert_in.data());
    for (int ch = 0; ch < plan.chunks(); ++ch) {
      const auto& offsets = plan.layout.chunk(ch).expert_offsets;
      apply_experts<T>({.first_expert = moe.first_local_expert(), .expert_offsets = offsets, .input = expert_in.data(),
                        .output = expert_out.data(), .hidden = kHidden});
    }
    std::vector<T> combined(want.size(), T(-7));
    moe.combine(plan, expert_out.data(), in.gates.data(), combined.data());
    expect(same_bytes(combined.data(), want.data(), bytes),
           c.name + ": dispatch/combine with " + std::to_string(chunks) + " chunks differs from the reference");
    check_backward(moe, plan, x, kept, c);
    std::int64_t dropped = plan.routing.dropped_choices;
    allreduce(comm_, &dropped, &dropped, 1, DType::kI64, ReduceOp::kSum);
    if (c.dropless) expect(plan.routing.dropped_choices == 0, c.name + ": dropless mode dropped a choice");
    if (c.expect_drops) expect(dropped > 0, c.name + ": the case was meant to drop and dropped nothing");
    if (!c.expect_drops) expect(dropped == 0, c.name + ": dropped " + std::to_string(dropped) + " choices");
  }
}

template <class T>
void MoeChecker::check_backward(MoeDispatcher& moe, const MoeDispatchPlan& plan, const std::vector<T>& x,
                                const std::vector<bool>& kept, const Case& c) {
  const std::int64_t tokens = plan.routing.tokens;
  // One distinct row per choice: dispatch_choices then return_rows gives it back.
  std::vector<T> rows(static_cast<std::size_t>(tokens * c.top_k * kHidden));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<T>(static_cast<double>(i % 1000) * 0.25);
  std::vector<T> expert_rows(static_cast<std::size_t>(plan.expert_rows() * kHidden));
  moe.dispatch_choices(plan, rows.data(), expert_rows.data());
  std::vector<T> back(rows.size(), T(-3));
  moe.return_rows(plan, expert_rows.data(), back.data());
  bool same = true;
  for (std::size_t i = 0; i < rows.size(); ++i) same = same && back[i] == (kept[i / kHidden] ? rows[i] : T(0));
  expect(same, c.name + ": return_rows(dispatch_choices(rows)) is not the kept rows");
  // undispatch of the dispatched tokens: each token's kept copies summed.
  moe.dispatch(plan, x.data(), expert_rows.data());
  std::vector<T> summed(x.size(), T(-3));
  moe.undispatch(plan, expert_rows.data(), summed.data());
  bool sums = true;
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t i = 0; i < kHidden; ++i) {
      T acc = T(0);
      for (int j = 0; j < c.top_k; ++j) {
        if (kept[static_cast<std::size_t>(t * c.top_k + j)]) acc = acc + x[static_cast<std::size_t>(t * kHidden + i)];
      }
      sums = sums && summed[static_cast<std::size_t>(t * kHidden + i)] == acc;
    }
  }
  expect(sums, c.name + ": undispatch does not sum the token's copies");
  check_pipelined_backward(moe, plan, x, rows, c);
}

// The pipelined primitives equal the unpipelined ones they replace, bit for bit, at this
// plan's chunk count: run_choices = return_rows(experts(dispatch(x))), run_backward =
// undispatch(experts(dispatch_choices(rows))) (the experts standing in for their backward).
template <class T>
void MoeChecker::check_pipelined_backward(MoeDispatcher& moe, const MoeDispatchPlan& plan, const std::vector<T>& x,
                                          const std::vector<T>& rows, const Case& c) {
  std::vector<T> expert_in(static_cast<std::size_t>(plan.expert_rows() * kHidden)), expert_out(expert_in.size());
  auto all_experts = [&] {
    for (int ch = 0; ch < plan.chunks(); ++ch) {
      apply_experts<T>({.first_expert = moe.first_local_expert(), .expert_offsets = plan.layout.chunk(ch).expert_offsets,
                        .input = expert_in.data(), .output = expert_out.data(), .hidden = kHidden});
    }
  };
  moe.dispatch(plan, x.data(), expert_in.data());
  all_experts();
  std::vector<T> want_choices(rows.size(), T(-3)), got_choices(rows.size(), T(-5));
  moe.return_rows(plan, expert_out.data(), want_choices.data());
  moe.run_choices(plan, x.data(), apply_experts<T>, got_choices.data());
  expect(same_bytes(got_choices.data(), want_choices.data(), rows.size() * sizeof(T)),
         c.name + ": run_choices with " + std::to_string(plan.chunks()) + " chunks differs from dispatch + return_rows");
  moe.dispatch_choices(plan, rows.data(), expert_in.data());
  all_experts();
  std::vector<T> want_grad(x.size(), T(-3)), got_grad(x.size(), T(-5));
  moe.undispatch(plan, expert_out.data(), want_grad.data());
  moe.run_backward(plan, rows.data(), apply_experts<T>, got_grad.data());
  expect(same_bytes(got_grad.data(), want_grad.data(), x.size() * sizeof(T)),
         c.name + ": run_backward with " + std::to_string(plan.chunks()) +
             " chunks differs from dispatch_choices + undispatch");
}

// One forward (run) and one backward (dispatch_choices + undispatch) of a dropless layer,
// counted by AxisTraffic against braid-plan's formulas. AxisTraffic counts an alltoallv as
// (n-1)/n of what the rank sends, as the formula's wire share does; the counts alltoall of
// plan() is counted with the forward (a few hundred bytes here against ~1 MB).
void MoeChecker::check_bytes() {
  const int ep = comm_.size();
  const Case c{.name = "bytes", .top_k = 2, .dropless = true};
  const int experts = 2 * ep;
  const std::int64_t tokens = 1024;  // the same layer shape on every rank
  const Inputs in = make_inputs(c, comm_.rank(), experts, 99, tokens);
  const std::vector<float> x(in.x.begin(), in.x.end());
  MoeDispatcher moe(comm_, {.experts = experts, .top_k = 2, .hidden = kHidden, .dropless = true});
  parallel::AxisTraffic traffic;
  traffic.watch(comm_, "ep");
  const MoeDispatchPlan plan = moe.plan(in.ids, tokens, 2);  // its counts alltoall is counted too
  std::vector<float> out(x.size()), choice_rows(static_cast<std::size_t>(tokens * 2 * kHidden), 1.0f);
  moe.run(plan, x.data(), in.gates.data(), apply_experts<float>, out.data());
  const double forward = traffic.take()["ep"];
  std::vector<float> expert_rows(static_cast<std::size_t>(plan.expert_rows() * kHidden));
  moe.dispatch_choices(plan, choice_rows.data(), expert_rows.data());
  moe.undispatch(plan, expert_rows.data(), out.data());
  const double backward = traffic.take()["ep"];
  const plan::Estimates formula = plan::moe_alltoall_bytes(
      {.tokens = static_cast<double>(tokens), .top_k = 2, .hidden = kHidden, .bytes = 4, .experts = static_cast<double>(experts), .ep = ep});
  auto value = [&](const char* name) {
    for (const auto& e : formula) {
      if (e.name == name) return e.value;
    }
    return -1.0;
  };
  // Per rank, the formula is the mean: a rank's combine sends back what its experts received,
  // which the routing makes uneven; over the group both directions move sum T k rows exactly.
  double per_rank[2] = {forward, backward}, group[2];
  allreduce(comm_, per_rank, group, 2, DType::kF64, ReduceOp::kSum);
  const double want_forward = ep * value("moe_round_trip_wire_bytes");
  const double want_train = ep * value("moe_layer_train_wire_bytes");
  auto within = [](double got, double want) { return want == 0 ? got == 0 : std::abs(got - want) <= 0.01 * want; };
  expect(within(group[0], want_forward),
         "group forward bytes " + std::to_string(group[0]) + " vs braid-plan's " + std::to_string(want_forward));
  expect(within(group[0] + group[1], want_train), "group forward + backward bytes " +
                                                      std::to_string(group[0] + group[1]) + " vs braid-plan's " +
                                                      std::to_string(want_train));
  RANK_SAY("MOE-BYTES rank %d forward %.0f backward %.0f group %.0f + %.0f plan x ep %.0f, train %.0f", comm_.rank(),
           forward, backward, group[0], group[1], want_forward, want_train);
}

}  // namespace

int scenario_moe(Communicator& comm, const Args&) {
  MoeChecker checker(comm);
  const std::vector<Case> cases{
      {.name = "top1-drops", .top_k = 1, .capacity_factor = 1.0, .gate = Gate::kSkewed, .expect_drops = true},
      {.name = "top2-drops", .experts_per_rank = 4, .top_k = 2, .capacity_factor = 1.25, .gate = Gate::kSkewed, .expect_drops = true},
      {.name = "top1-roomy", .top_k = 1, .capacity_factor = 64.0},
      {.name = "top2-roomy-f64", .top_k = 2, .capacity_factor = 64.0, .dtype = DType::kF64},
      {.name = "top1-dropless", .top_k = 1, .dropless = true, .gate = Gate::kSkewed},
      {.name = "top2-dropless", .experts_per_rank = 3, .top_k = 2, .dropless = true, .gate = Gate::kSkewed},
      {.name = "all-to-one", .top_k = 1, .capacity_factor = 1.0, .gate = Gate::kAllToOne, .expect_drops = true},
      {.name = "all-to-one-dropless", .top_k = 2, .dropless = true, .gate = Gate::kAllToOne},
      {.name = "half-idle", .experts_per_rank = 2, .top_k = 1, .capacity_factor = 64.0, .gate = Gate::kHalfIdle},
      {.name = "empty-rank", .top_k = 2, .dropless = true},
  };
  std::uint64_t seed = 1;
  for (const Case& c : cases) {
    if (c.name == "empty-rank" && comm.size() < 2) continue;
    if (c.dtype == DType::kF64) {
      checker.run_case<double>(c, seed++);
    } else {
      checker.run_case<float>(c, seed++);
    }
  }
  checker.check_bytes();
  int failures = checker.failures();
  // An EP group that is a split of the world (two groups of two at 4 ranks), as a mesh's ep
  // axis would be: the same checks on the sub-communicator.
  if (comm.size() == 4) {
    std::optional<Communicator> ep = comm.split(comm.rank() / 2, comm.rank());
    MoeChecker sub(*ep);
    sub.run_case<float>(cases[1], 77);
    sub.run_case<float>(cases[5], 78);
    failures += sub.failures();
  }
  if (failures > 0) return 1;
  RANK_SAY("PASS moe");
  return 0;
}

int scenario_moe_error(Communicator& comm, const Args& args) {
  const std::string what = args.empty() ? "" : args[0];
  const bool last = comm.rank() == comm.size() - 1;
  MoeLayerSpec spec{.experts = 2 * comm.size(), .top_k = 1, .hidden = 8, .capacity_factor = 1.0};
  if (what == "experts" && last) spec.experts += comm.size();
  if (what == "hidden" && last) spec.hidden = 9;
  if (what == "indivisible") spec.experts = 2 * comm.size() + 1;
  if (what == "capacity") spec.capacity_factor = 0;
  std::vector<std::int32_t> ids{0, 1, 0, 1};
  if (what == "expert-id" && last) ids[3] = spec.experts;
  const int chunks = (what == "chunks" && last) ? 3 : 2;
  try {
    MoeDispatcher moe(comm, spec);
    (void)moe.plan(ids, 4, chunks);
    RANK_SAY("NO-ERROR rank %d", comm.rank());
  } catch (const Error& e) {
    RANK_SAY("MOE-ERROR rank %d %s: %s", comm.rank(), error_kind_name(e.kind()), e.what());
  }
  comm.barrier();
  RANK_SAY("DONE moe-error");
  return 0;
}

}  // namespace braid::testing
