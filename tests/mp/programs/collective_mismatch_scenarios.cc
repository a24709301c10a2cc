// Collective calls that disagree across ranks (scenario `collective-mismatch KIND`): every rank
// but the last makes one call, the last makes it with one thing different. The ranks that
// receive a message from a disagreeing rank must raise braid::Mismatch (the envelope carries
// the count, dtype, operation, reduction op, root and algorithm), and report it to the others;
// no rank may hang, and none may return from the call with a result that differs from what its
// own call asked for. A rank that finishes the call correctly (a broadcast whose tree never
// passes through the odd rank) learns of the mismatch at the next collective, the barrier.
//
// Every rank contributes rank + 1 in every element, so each rank can check its own result.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "scenario.h"

namespace braid::testing {

namespace {

constexpr std::int64_t kCount = 1000;

template <typename T>
std::vector<T> contribution(const Communicator& comm, std::int64_t count) {
  return std::vector<T>(static_cast<std::size_t>(count), static_cast<T>(comm.rank() + 1));
}

template <typename T>
bool all_equal(const T* data, std::int64_t count, T value) {
  return std::all_of(data, data + count, [&](T x) { return x == value; });
}

// Ring allgather of `count` floats: block j holds j + 1.
bool allgather_ring(Communicator& comm, std::int64_t count) {
  const int n = comm.size();
  std::vector<float> send = contribution<float>(comm, count), recv(static_cast<std::size_t>(count * n));
  allgather(comm, send.data(), recv.data(), count, DType::kF32, {.algorithm = "ring"});
  for (int j = 0; j < n; ++j) {
    if (!all_equal(recv.data() + j * count, count, static_cast<float>(j + 1))) return false;
  }
  return true;
}

// In-place allreduce of kCount elements of T: sum n(n+1)/2, max n.
template <typename T>
bool allreduce_of(Communicator& comm, DType dtype, ReduceOp op, const std::string& algorithm) {
  const int n = comm.size();
  std::vector<T> data = contribution<T>(comm, kCount);
  allreduce(comm, data.data(), data.data(), kCount, dtype, op, {.algorithm = algorithm});
  const T want = static_cast<T>(op == ReduceOp::kMax ? n : n * (n + 1) / 2);
  return all_equal(data.data(), kCount, want);
}

// Binomial broadcast of kCount floats from `root`: root + 1 everywhere.
bool broadcast_from(Communicator& comm, int root) {
  std::vector<float> data = contribution<float>(comm, kCount);
  broadcast(comm, data.data(), kCount, DType::kF32, root, {.algorithm = "binomial"});
  return all_equal(data.data(), kCount, static_cast<float>(root + 1));
}

struct MismatchKind {
  std::string_view name;
  // Runs this rank's call (`odd`: the disagreeing last rank); true when its result is what
  // the call asked for.
  bool (*run)(Communicator& comm, bool odd);
};

// Each kind keeps every other parameter equal and names its algorithms, so the tuner cannot
// turn one disagreement into another.
constexpr MismatchKind kKinds[] = {
    {"count", [](Communicator& c, bool odd) { return allgather_ring(c, kCount + (odd ? 1 : 0)); }},
    // f32 and i32 have the same size: only the dtype in the envelope differs.
    {"dtype",
     [](Communicator& c, bool odd) {
       return odd ? allreduce_of<std::int32_t>(c, DType::kI32, ReduceOp::kSum, "ring")
                  : allreduce_of<float>(c, DType::kF32, ReduceOp::kSum, "ring");
     }},
    {"redop",
     [](Communicator& c, bool odd) {
       return allreduce_of<float>(c, DType::kF32, odd ? ReduceOp::kMax : ReduceOp::kSum, "ring");
     }},
    {"operation",
     [](Communicator& c, bool odd) {
       return odd ? allgather_ring(c, kCount) : allreduce_of<float>(c, DType::kF32, ReduceOp::kSum, "ring");
     }},
    {"algorithm",
     [](Communicator& c, bool odd) {
       return allreduce_of<float>(c, DType::kF32, ReduceOp::kSum, odd ? "recursive_doubling" : "ring");
     }},
    // With 4 ranks, root 0's tree and root 2's share the edge 2 -> 3: the odd rank receives
    // root 0's data from rank 2 where it expects root 2's, with messages of the right size.
    {"root", [](Communicator& c, bool odd) { return broadcast_from(c, odd ? c.size() / 2 : 0); }},
};

}  // namespace

// SIGTERM is ignored (main.cc) so that braid-run's clean-up after the first exit cannot
// pre-empt another rank's report.
int scenario_collective_mismatch(Communicator& comm, const Args& args) {
  const std::string_view kind = args.empty() ? "count" : std::string_view(args[0]);
  const auto* found = std::find_if(std::begin(kKinds), std::end(kKinds), [&](const auto& k) { return k.name == kind; });
  if (found == std::end(kKinds)) {
    RANK_SAY("unknown mismatch kind '%s' (count, dtype, redop, operation, algorithm, root)", args[0].c_str());
    return 2;
  }
  const int r = comm.rank();
  try {
    if (!found->run(comm, r == comm.size() - 1)) RANK_SAY("WRONG-DATA rank %d: the call returned a wrong result", r);
    comm.barrier();
  } catch (const Mismatch& e) {
    RANK_SAY("MISMATCH rank %d: %s", r, e.what());
    return 3;
  } catch (const Error& e) {
    RANK_SAY("OTHER-ERROR rank %d: %s", r, e.what());
    return 4;
  }
  RANK_SAY("NO-ERROR rank %d", r);
  return 5;
}

}  // namespace braid::testing
