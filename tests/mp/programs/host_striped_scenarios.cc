// The host_striped allreduce beyond the reference grid of collective_scenarios.cc (which runs
// it, like every algorithm, wherever it accepts the world): where it applies, the tuner picks
// it for large messages (4 MiB here; the built-in rule starts at 512 KiB); on hosts of
// different sizes it refuses, a caller naming it gets InvalidArgument and the default falls
// back to the leader variant (hierarchical). And every rank ends with the same bytes on inputs
// whose sum depends on the order of the additions (the grid's small integers sum exactly in
// any order, so they cannot show a rank reducing in its own order).
//
// braid-test-rank host-striped striped|uneven: what the emulated hosts are expected to be.
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "braid/base/crc32c.h"
#include "braid/base/error.h"
#include "braid/collectives/algorithm_registry.h"
#include "braid/collectives/collective_observer.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/tuner.h"
#include "braid/comm/communicator_internal.h"
#include "scenario.h"

namespace braid::testing {

namespace {

class Checks {
 public:
  explicit Checks(int rank) : rank_(rank) {}
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    ++failures_;
    RANK_SAY("FAIL host-striped rank %d: %s", rank_, what.c_str());
  }
  int failures() const { return failures_; }

 private:
  int rank_;
  int failures_ = 0;
};

// Values in [-1, 1) spread over several binades (so additions round differently in different
// orders), distinct per rank and element.
std::vector<float> order_sensitive_input(int rank, std::int64_t count) {
  std::vector<float> x(static_cast<std::size_t>(count));
  std::uint64_t state = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(rank + 1);
  for (float& v : x) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double unit = static_cast<double>(state >> 11) / 9007199254740992.0;  // [0, 1)
    v = static_cast<float>((2 * unit - 1) * std::ldexp(1.0, -static_cast<int>(state % 7)));
  }
  return x;
}

bool identical_on_every_rank(Communicator& comm, const void* data, std::size_t bytes) {
  std::uint32_t mine = crc32c(data, bytes);
  std::vector<std::uint32_t> all(static_cast<std::size_t>(comm.size()));
  allgather(comm, &mine, all.data(), 1, DType::kI32);
  for (std::uint32_t c : all) {
    if (c != mine) return false;
  }
  return true;
}

// The f32 sum of `count` order-sensitive elements by `requested` (empty: the default), which
// must run `expected`: identical on every rank, and within n roundings of the exact sum (each
// of the n-1 additions errs by at most 2^-24 of a partial sum, and |partial| <= sum |x|).
void check_sum(Communicator& comm, Checks& checks, std::int64_t count, const std::string& requested,
               const std::string& expected) {
  std::string ran;
  detail::CollectiveAccess(comm).attachment<CollectiveObserver>().set("test", [&](const CollectiveRecord& r) {
    if (r.op == OpKind::kAllreduce) ran = std::string(r.algorithm);
  });
  std::vector<float> got = order_sensitive_input(comm.rank(), count);
  allreduce(comm, got.data(), got.data(), count, DType::kF32, ReduceOp::kSum, {.algorithm = requested});
  detail::CollectiveAccess(comm).attachment<CollectiveObserver>().set("test", {});
  const std::string what = "count " + std::to_string(count);
  checks.expect(ran == expected, what + ": ran '" + ran + "', not '" + expected + "'");
  checks.expect(identical_on_every_rank(comm, got.data(), got.size() * sizeof(float)), what + ": ranks differ");
  std::vector<double> exact(got.size()), magnitude(got.size());
  for (int r = 0; r < comm.size(); ++r) {
    std::vector<float> x = order_sensitive_input(r, count);
    for (std::size_t i = 0; i < x.size(); ++i) {
      exact[i] += x[i];
      magnitude[i] += std::fabs(x[i]);
    }
  }
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(got[i] - exact[i]) > comm.size() * std::ldexp(magnitude[i], -24)) ++wrong;
  }
  checks.expect(wrong == 0, what + ": " + std::to_string(wrong) + " elements off the exact sum");
}

// bf16 avg (the sum rounds to 8 bits at every addition, so reduction orders differ most) by
// host_striped itself: identical on every rank.
void check_bf16_identical(Communicator& comm, Checks& checks, std::int64_t count) {
  std::vector<float> x = order_sensitive_input(comm.rank(), count);
  std::vector<std::uint16_t> bf16(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    bf16[i] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(x[i]) >> 16);  // truncated: exact input
  }
  allreduce(comm, bf16.data(), bf16.data(), count, DType::kBF16, ReduceOp::kAvg, {.algorithm = "host_striped"});
  checks.expect(identical_on_every_rank(comm, bf16.data(), bf16.size() * 2),
                "bf16 avg count " + std::to_string(count) + ": ranks differ");
}

void check_refused(Communicator& comm, Checks& checks) {
  float value = 1;
  try {
    allreduce(comm, &value, &value, 1, DType::kF32, ReduceOp::kSum, {.algorithm = "host_striped"});
    checks.expect(false, "host_striped ran on hosts of different sizes");
  } catch (const InvalidArgument& e) {
    checks.expect(std::string(e.what()).find("does not support") != std::string::npos,
                  std::string("unexpected message: ") + e.what());
  }
}

}  // namespace

int scenario_host_striped(Communicator& comm, const Args& args) {
  const bool striped = !args.empty() && args[0] == "striped";
  Checks checks(comm.rank());
  const AlgorithmEntry* entry = find_algorithm(OpKind::kAllreduce, "host_striped");
  checks.expect(entry != nullptr, "host_striped is not registered");
  if (entry == nullptr) return 1;
  constexpr std::int64_t kLarge = std::int64_t{1} << 20;  // 4 MiB of f32
  CollectiveArgs probe{.comm = comm, .op = OpKind::kAllreduce, .seq = 0, .send = nullptr, .recv = nullptr,
                       .count = kLarge, .dtype = DType::kF32};
  checks.expect(entry->supports(probe) == striped, striped ? "refuses equal hosts" : "accepts unequal hosts");
  const std::string expected = striped ? "host_striped" : "hierarchical";
  checks.expect(choose_algorithm(probe, "").name == expected, "the tuner does not pick " + expected);
  if (!striped) check_refused(comm, checks);
  // Counts: fewer than one element per shard, not divisible by 2 or 3, divisible by 2 and 3
  // (in place on recv for 2 and 3 ranks per host), divisible by 2 only, and 20 MiB + 4 bytes
  // (padded, in five 4 MiB pieces of f32 with a shorter last one, two of bf16, the stripe's
  // allreduces overlapping the host's phases); kLarge by the default choice.
  constexpr std::int64_t kPieces = (std::int64_t{5} << 20) + 1;
  for (std::int64_t count : {std::int64_t{1}, std::int64_t{1000003}, std::int64_t{300000}, kPieces, kLarge}) {
    check_sum(comm, checks, count, striped && count != kLarge ? "host_striped" : "", expected);
    if (striped) check_bf16_identical(comm, checks, count);
  }
  comm.barrier();
  if (checks.failures() > 0) return 1;
  RANK_SAY("PASS host-striped rank %d", comm.rank());
  return 0;
}

}  // namespace braid::testing
