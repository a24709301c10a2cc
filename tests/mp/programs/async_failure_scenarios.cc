// Failure scenarios of the non-blocking collectives:
//  - `async-mismatch`: the last rank's async allreduce has another count. The calls return
//    normally; wait() raises Mismatch on every rank (those next to it in the ring from the
//    envelopes, the others from the abort they send), never a hang. The allreduce issued
//    before it (separated by a barrier, so every rank has finished it) stays good, and the
//    one issued after it fails too (the communicator is poisoned).
//  - `async-timeout`: the last rank issues its allreduce 1.5 s late. The others' wait(1 ms)
//    throws Timeout naming the rank and the op, without harm: a later wait() collects the
//    right result, and the communicator stays usable.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/async_collectives.h"
#include "scenario.h"

namespace braid::testing {

namespace {

constexpr float kValue = 1.5f;

std::vector<float> ones(std::int64_t count) { return std::vector<float>(static_cast<std::size_t>(count), kValue); }

bool all_equal(const std::vector<float>& data, float want) {
  for (float x : data) {
    if (x != want) return false;
  }
  return true;
}

}  // namespace

int scenario_async_mismatch(Communicator& comm, const Args&) {
  const int n = comm.size(), r = comm.rank();
  // Counts 1000 against 2000: every ring message of the odd rank differs from what its
  // neighbours expect. Ring is named so the test does not depend on the default algorithm.
  const std::int64_t count = r == n - 1 ? 2000 : 1000;
  std::vector<float> good = ones(1000), bad = ones(count), after = ones(1000);
  Work good_work, bad_work, after_work;
  try {
    good_work = iallreduce(comm, good.data(), good.data(), 1000, DType::kF32, ReduceOp::kSum);
    ibarrier(comm);
    bad_work = iallreduce(comm, bad.data(), bad.data(), count, DType::kF32, ReduceOp::kSum, {.algorithm = "ring"});
    after_work = iallreduce(comm, after.data(), after.data(), 1000, DType::kF32, ReduceOp::kSum);
  } catch (const Error& e) {
    RANK_SAY("FAIL async-mismatch rank %d: raised at the call: %s", r, e.what());
    return 1;
  }
  int failures = 0;
  try {
    bad_work.wait();
    RANK_SAY("FAIL async-mismatch rank %d: NO-ERROR from the mismatched allreduce", r);
    ++failures;
  } catch (const Mismatch& e) {
    RANK_SAY("MISMATCH-AT-WAIT rank %d: %s", r, e.what());
  }
  try {
    after_work.wait();
    RANK_SAY("FAIL async-mismatch rank %d: the allreduce after the failed one succeeded", r);
    ++failures;
  } catch (const Error&) {
  }
  good_work.wait();  // finished on every rank before the failure: its result stands
  if (!all_equal(good, kValue * static_cast<float>(n))) {
    RANK_SAY("FAIL async-mismatch rank %d: the allreduce before the failure has a wrong result", r);
    ++failures;
  }
  if (failures > 0) return 1;
  RANK_SAY("PASS async-mismatch rank %d", r);
  return 0;
}

int scenario_async_timeout(Communicator& comm, const Args&) {
  const int n = comm.size(), r = comm.rank();
  const bool late = r == n - 1;
  std::vector<float> data = ones(4096);
  int failures = 0;
  if (late) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Work work = iallreduce(comm, data.data(), data.data(), 4096, DType::kF32, ReduceOp::kSum);
  if (!late) {
    if (work.test() || work.completed()) {
      RANK_SAY("FAIL async-timeout rank %d: done although the last rank has not issued yet", r);
      ++failures;
    }
    try {
      work.wait(Seconds(0.001));
      RANK_SAY("FAIL async-timeout rank %d: wait(1 ms) returned", r);
      ++failures;
    } catch (const Timeout& e) {
      const std::string what = e.what();
      const bool named = what.find("allreduce") != std::string::npos &&
                         what.find("rank " + std::to_string(r)) != std::string::npos;
      RANK_SAY("%s rank %d: %s", named ? "TIMEOUT" : "FAIL async-timeout: unnamed", r, what.c_str());
      failures += named ? 0 : 1;
    }
  }
  work.wait();
  if (!all_equal(data, kValue * static_cast<float>(n))) {
    RANK_SAY("FAIL async-timeout rank %d: wrong result after the timeout", r);
    ++failures;
  }
  std::vector<float> again = ones(10);
  allreduce(comm, again.data(), again.data(), 10, DType::kF32, ReduceOp::kSum);  // not poisoned
  if (!all_equal(again, kValue * static_cast<float>(n))) ++failures;
  if (failures > 0) return 1;
  RANK_SAY("PASS async-timeout rank %d", r);
  return 0;
}

}  // namespace braid::testing
