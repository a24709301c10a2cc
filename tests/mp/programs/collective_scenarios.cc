// Collective scenarios: every algorithm of allreduce, allgather, reduce_scatter, broadcast,
// reduce, gather and scatter over a grid of dtypes x reduction ops x counts x in-place /
// out-of-place x roots, checked bit for bit against a locally computed reference. (Calls that
// disagree across ranks are in collective_mismatch_scenarios.cc.)
//
// Inputs are small integers, so every dtype (bf16 included: integers up to 256 are exact) and
// every summation order gives the exact result; u8 wraps modulo 256 like the kernels.
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/algorithm_registry.h"
#include "braid/collectives/collectives.h"
#include "collective_reference.h"
#include "scenario.h"

namespace braid::testing {

namespace {

using Bytes = std::vector<std::byte>;
constexpr std::byte kGarbage{0xEE};
constexpr std::int64_t kLargeCount = 1000003;
// allreduce also runs a 64 MiB case (f32 sum): large enough for many rounds of the sliced
// shared-memory path and for its non-temporal output stores.
constexpr std::int64_t kHugeCount = 16 << 20;

struct Case {
  std::string what;  // printed on failure
  std::int64_t count;
  DType dtype;
};

class CollectiveChecker {
 public:
  explicit CollectiveChecker(Communicator& comm) : comm_(comm) {}
  void run_all();
  // The allreduce grid alone, without the 64 MiB case (its sliced shared-memory path needs
  // one host; across hosts, the 1000003-element case already takes many rounds).
  void run_allreduce() {
    with_huge_count_ = false;
    run_reducing(OpKind::kAllreduce, counts());
  }
  // The network subset (tests/mp/netem_test.cc): allreduce, allgather and broadcast, every
  // algorithm the world supports, a few counts, in seconds even over a lossy or slow link.
  void run_network_subset();
  int failures() const { return failures_; }
  int cases() const { return cases_; }

 private:
  void allreduce_case(const AlgorithmEntry& algorithm, const Case& c, ReduceOp op, bool in_place);
  void reduce_case(const AlgorithmEntry& algorithm, const Case& c, ReduceOp op, bool in_place, int root);
  void gather_case(const AlgorithmEntry& algorithm, const Case& c, bool in_place, int root);
  void scatter_case(const AlgorithmEntry& algorithm, const Case& c, bool in_place, int root);
  void run_reducing(OpKind kind, const std::vector<std::int64_t>& grid);
  void run_rooted(OpKind kind, const std::vector<std::int64_t>& grid);
  void allgather_case(const AlgorithmEntry& algorithm, const Case& c, bool in_place);
  void reduce_scatter_case(const AlgorithmEntry& algorithm, const Case& c, ReduceOp op, bool in_place);
  void broadcast_case(const AlgorithmEntry& algorithm, const Case& c, int root);
  void compare(const Case& c, const std::byte* got, const Bytes& want);
  bool supported(const AlgorithmEntry& algorithm, OpKind op);
  std::vector<std::int64_t> counts() const;

  Communicator& comm_;
  Bytes send_, recv_, want_;  // reused across cases (capacity kept)
  int failures_ = 0;
  int cases_ = 0;
  bool with_huge_count_ = true;
};

std::string describe_case(const char* op, const AlgorithmEntry& algorithm, DType dtype, std::int64_t count,
                          const std::string& variant) {
  return std::string(op) + "/" + std::string(algorithm.name) + " " + std::string(dtype_name(dtype)) +
         " count=" + std::to_string(count) + " " + variant;
}

void CollectiveChecker::compare(const Case& c, const std::byte* got, const Bytes& want) {
  ++cases_;
  if (want.empty() || std::memcmp(got, want.data(), want.size()) == 0) return;
  std::size_t at = 0;
  while (got[at] == want[at]) ++at;
  if (++failures_ <= 20) {
    RANK_SAY("FAIL %s rank %d: first difference at byte %zu of %zu", c.what.c_str(), comm_.rank(), at, want.size());
  }
}

bool CollectiveChecker::supported(const AlgorithmEntry& algorithm, OpKind op) {
  if (algorithm.supports == nullptr) return true;
  CollectiveArgs probe{.comm = comm_, .op = op, .seq = 0, .send = nullptr, .recv = nullptr, .count = 1,
                       .dtype = DType::kF32};
  return algorithm.supports(probe);
}

std::vector<std::int64_t> CollectiveChecker::counts() const {
  const std::int64_t n = comm_.size();
  std::vector<std::int64_t> result{0, 1};
  if (n - 1 > 1) result.push_back(n - 1);
  result.push_back(n + 1);
  return result;
}

void CollectiveChecker::allgather_case(const AlgorithmEntry& algorithm, const Case& c, bool in_place) {
  const int n = comm_.size(), r = comm_.rank();
  const std::size_t elem = dtype_size(c.dtype), block = static_cast<std::size_t>(c.count) * elem;
  fill_gathered(want_, n, c.count, c.dtype);
  recv_.assign(block * static_cast<std::size_t>(n), kGarbage);
  std::byte* own = recv_.data() + static_cast<std::size_t>(r) * block;
  const std::byte* send = own;
  if (in_place) {
    std::memcpy(own, want_.data() + static_cast<std::size_t>(r) * block, block);
  } else {
    send_.assign(want_.begin() + static_cast<std::ptrdiff_t>(r * block),
                 want_.begin() + static_cast<std::ptrdiff_t>((r + 1) * block));
    send = send_.data();
  }
  allgather(comm_, send, recv_.data(), c.count, c.dtype, {.algorithm = std::string(algorithm.name)});
  compare(c, recv_.data(), want_);
}

void CollectiveChecker::reduce_scatter_case(const AlgorithmEntry& algorithm, const Case& c, ReduceOp op,
                                            bool in_place) {
  const int n = comm_.size(), r = comm_.rank();
  fill_reduce_inputs(send_, op, r, c.count * n, c.dtype);
  fill_reduce_expected(want_, op, n, r * c.count, c.count, c.dtype);
  Bytes original = send_;
  std::byte* recv = send_.data();
  if (!in_place) {
    recv_.assign(want_.size(), kGarbage);
    recv = recv_.data();
  }
  reduce_scatter(comm_, send_.data(), recv, c.count, c.dtype, op, {.algorithm = std::string(algorithm.name)});
  compare(c, recv, want_);
  if (!in_place) compare({c.what + " (send buffer modified)", c.count, c.dtype}, send_.data(), original);
}

void CollectiveChecker::allreduce_case(const AlgorithmEntry& algorithm, const Case& c, ReduceOp op, bool in_place) {
  fill_reduce_inputs(send_, op, comm_.rank(), c.count, c.dtype);
  fill_reduce_expected(want_, op, comm_.size(), 0, c.count, c.dtype);
  Bytes original = send_;
  std::byte* recv = send_.data();
  if (!in_place) {
    recv_.assign(want_.size(), kGarbage);
    recv = recv_.data();
  }
  allreduce(comm_, send_.data(), recv, c.count, c.dtype, op, {.algorithm = std::string(algorithm.name)});
  compare(c, recv, want_);
  if (!in_place) compare({c.what + " (send buffer modified)", c.count, c.dtype}, send_.data(), original);
}

// Off the root, recv is null (not significant there) and send must be left as it was.
void CollectiveChecker::reduce_case(const AlgorithmEntry& algorithm, const Case& c, ReduceOp op, bool in_place,
                                    int root) {
  const bool is_root = comm_.rank() == root;
  fill_reduce_inputs(send_, op, comm_.rank(), c.count, c.dtype);
  fill_reduce_expected(want_, op, comm_.size(), 0, c.count, c.dtype);
  Bytes original = send_;
  std::byte* recv = nullptr;
  if (is_root) {
    recv_.assign(want_.size(), kGarbage);
    recv = in_place ? send_.data() : recv_.data();
  }
  reduce(comm_, send_.data(), recv, c.count, c.dtype, op, root, {.algorithm = std::string(algorithm.name)});
  if (is_root) compare(c, recv, want_);
  if (!is_root || !in_place) compare({c.what + " (send buffer modified)", c.count, c.dtype}, send_.data(), original);
}

void CollectiveChecker::gather_case(const AlgorithmEntry& algorithm, const Case& c, bool in_place, int root) {
  const int n = comm_.size(), r = comm_.rank();
  const std::size_t block = static_cast<std::size_t>(c.count) * dtype_size(c.dtype);
  fill_gathered(want_, n, c.count, c.dtype);
  send_.assign(want_.begin() + static_cast<std::ptrdiff_t>(r * block),
               want_.begin() + static_cast<std::ptrdiff_t>((r + 1) * block));
  const std::byte* send = send_.data();
  std::byte* recv = nullptr;
  if (r == root) {
    recv_.assign(want_.size(), kGarbage);
    recv = recv_.data();
    if (in_place) {
      std::memcpy(recv + static_cast<std::size_t>(r) * block, send_.data(), block);
      send = recv + static_cast<std::size_t>(r) * block;
    }
  }
  gather(comm_, send, recv, c.count, c.dtype, root, {.algorithm = std::string(algorithm.name)});
  if (r == root) compare(c, recv, want_);
}

void CollectiveChecker::scatter_case(const AlgorithmEntry& algorithm, const Case& c, bool in_place, int root) {
  const int r = comm_.rank();
  const std::size_t block = static_cast<std::size_t>(c.count) * dtype_size(c.dtype);
  Bytes all;
  fill_gathered(all, comm_.size(), c.count, c.dtype);
  want_.assign(all.begin() + static_cast<std::ptrdiff_t>(r * block),
               all.begin() + static_cast<std::ptrdiff_t>((r + 1) * block));
  const std::byte* send = nullptr;
  recv_.assign(block, kGarbage);
  std::byte* recv = recv_.data();
  if (r == root) {
    send_ = all;
    send = send_.data();
    if (in_place) recv = send_.data() + static_cast<std::size_t>(r) * block;
  }
  scatter(comm_, send, recv, c.count, c.dtype, root, {.algorithm = std::string(algorithm.name)});
  compare(c, recv, want_);
}

void CollectiveChecker::broadcast_case(const AlgorithmEntry& algorithm, const Case& c, int root) {
  fill_broadcast(want_, root, c.count, c.dtype);
  if (comm_.rank() == root) {
    recv_ = want_;
  } else {
    recv_.assign(want_.size(), kGarbage);
  }
  broadcast(comm_, recv_.data(), c.count, c.dtype, root, {.algorithm = std::string(algorithm.name)});
  compare(c, recv_.data(), want_);
}

// allreduce (in place or not) and reduce (in place on the root or not, roots 0 and n-1).
void CollectiveChecker::run_reducing(OpKind kind, const std::vector<std::int64_t>& grid) {
  const int n = comm_.size();
  const char* name = kind == OpKind::kAllreduce ? "allreduce" : "reduce";
  const std::vector<int> roots = kind == OpKind::kAllreduce ? std::vector<int>{0} : std::vector<int>{0, n - 1};
  for (const AlgorithmEntry* a : algorithms_for(kind)) {
    if (!supported(*a, kind)) continue;
    for (DType dtype : kTestDTypes) {
      for (ReduceOp op : kTestOps) {
        std::vector<std::int64_t> sizes = grid;
        if (dtype == DType::kF32 && op == ReduceOp::kSum) sizes.push_back(kLargeCount);
        // one_shot / two_shot already take 16 rounds at kLargeCount: the 64 MiB case is for the
        // sliced path (CTest time).
        const bool sliced = a->name != "one_shot" && a->name != "two_shot";
        if (dtype == DType::kF32 && op == ReduceOp::kSum && kind == OpKind::kAllreduce && with_huge_count_ && sliced) {
          sizes.push_back(kHugeCount);
        }
        for (std::int64_t count : sizes) {
          for (bool in_place : {false, true}) {
            for (int root : roots) {
              std::string variant = std::string(reduce_op_name(op)) + (in_place ? " in-place" : " out-of-place");
              if (kind == OpKind::kReduce) variant += " root=" + std::to_string(root);
              Case c{describe_case(name, *a, dtype, count, variant), count, dtype};
              if (kind == OpKind::kAllreduce) {
                allreduce_case(*a, c, op, in_place);
              } else {
                reduce_case(*a, c, op, in_place, root);
              }
            }
          }
        }
      }
    }
  }
}

// gather and scatter: in place on the root or not, roots 0, n-1 and n/2 (the one whose
// binomial-tree ranges wrap past rank n-1 to rank 0, e.g. root 2 of 5).
void CollectiveChecker::run_rooted(OpKind kind, const std::vector<std::int64_t>& grid) {
  const int n = comm_.size();
  std::vector<int> roots{0, n - 1};
  if (n / 2 != 0 && n / 2 != n - 1) roots.push_back(n / 2);
  const char* name = kind == OpKind::kGather ? "gather" : "scatter";
  for (const AlgorithmEntry* a : algorithms_for(kind)) {
    if (!supported(*a, kind)) continue;
    for (DType dtype : kTestDTypes) {
      std::vector<std::int64_t> sizes = grid;
      if (dtype == DType::kF32) sizes.push_back(kLargeCount);
      for (std::int64_t count : sizes) {
        for (bool in_place : {false, true}) {
          for (int root : roots) {
            std::string variant = std::string(in_place ? "in-place" : "out-of-place") + " root=" + std::to_string(root);
            Case c{describe_case(name, *a, dtype, count, variant), count, dtype};
            if (kind == OpKind::kGather) {
              gather_case(*a, c, in_place, root);
            } else {
              scatter_case(*a, c, in_place, root);
            }
          }
        }
      }
    }
  }
}

// Counts 1, n+1 (uneven chunks) and kLargeCount (4 MB in f32: hundreds of TCP segments, so a
// lossy link hits bulk transfers as well as lone small messages, whose loss costs a timeout).
// One dtype, op and layout per collective besides allreduce's bf16: what a misbehaving network
// can break is the transport, not the kernels, which the full grid covers.
void CollectiveChecker::run_network_subset() {
  const std::vector<std::int64_t> sizes{1, comm_.size() + 1, kLargeCount};
  for (const AlgorithmEntry* a : algorithms_for(OpKind::kAllreduce)) {
    if (!supported(*a, OpKind::kAllreduce)) continue;
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      for (std::int64_t count : sizes) {
        allreduce_case(*a, {describe_case("allreduce", *a, dtype, count, "sum"), count, dtype}, ReduceOp::kSum, false);
      }
    }
  }
  for (const AlgorithmEntry* a : algorithms_for(OpKind::kAllgather)) {
    if (!supported(*a, OpKind::kAllgather)) continue;
    for (std::int64_t count : sizes) {
      allgather_case(*a, {describe_case("allgather", *a, DType::kF32, count, ""), count, DType::kF32}, false);
    }
  }
  const int last = comm_.size() - 1;
  for (const AlgorithmEntry* a : algorithms_for(OpKind::kBroadcast)) {
    if (!supported(*a, OpKind::kBroadcast)) continue;
    for (std::int64_t count : sizes) {
      broadcast_case(*a, {describe_case("broadcast", *a, DType::kF32, count, "root=last"), count, DType::kF32}, last);
    }
  }
}

void CollectiveChecker::run_all() {
  const int n = comm_.size();
  std::vector<std::int64_t> grid = counts();
  run_reducing(OpKind::kAllreduce, grid);
  run_reducing(OpKind::kReduce, grid);
  run_rooted(OpKind::kGather, grid);
  run_rooted(OpKind::kScatter, grid);
  for (const AlgorithmEntry* a : algorithms_for(OpKind::kAllgather)) {
    if (!supported(*a, OpKind::kAllgather)) continue;
    for (DType dtype : kTestDTypes) {
      std::vector<std::int64_t> sizes = grid;
      if (dtype == DType::kF32) sizes.push_back(kLargeCount);
      for (std::int64_t count : sizes) {
        for (bool in_place : {false, true}) {
          allgather_case(*a, {describe_case("allgather", *a, dtype, count, in_place ? "in-place" : "out-of-place"),
                              count, dtype}, in_place);
        }
      }
    }
  }
  for (const AlgorithmEntry* a : algorithms_for(OpKind::kReduceScatter)) {
    if (!supported(*a, OpKind::kReduceScatter)) continue;
    for (DType dtype : kTestDTypes) {
      for (ReduceOp op : kTestOps) {
        std::vector<std::int64_t> sizes = grid;
        if (dtype == DType::kF32 && op == ReduceOp::kSum) sizes.push_back(kLargeCount);
        for (std::int64_t count : sizes) {
          for (bool in_place : {false, true}) {
            std::string variant = std::string(reduce_op_name(op)) + (in_place ? " in-place" : " out-of-place");
            reduce_scatter_case(*a, {describe_case("reduce_scatter", *a, dtype, count, variant), count, dtype}, op,
                                in_place);
          }
        }
      }
    }
  }
  for (const AlgorithmEntry* a : algorithms_for(OpKind::kBroadcast)) {
    if (!supported(*a, OpKind::kBroadcast)) continue;
    for (DType dtype : kTestDTypes) {
      std::vector<std::int64_t> sizes = grid;
      if (dtype == DType::kF32) sizes.push_back(kLargeCount);
      for (std::int64_t count : sizes) {
        for (int root : {0, n - 1}) {
          broadcast_case(*a, {describe_case("broadcast", *a, dtype, count, "root=" + std::to_string(root)), count,
                              dtype}, root);
        }
      }
    }
  }
}

}  // namespace

// `collectives allreduce` runs the allreduce grid alone (for the larger emulated-host worlds,
// where the algorithms that need several hosts are what is new); `collectives network` the
// network subset (for links that lose, delay or throttle packets).
int scenario_collectives(Communicator& comm, const Args& args) {
  CollectiveChecker checker(comm);
  if (!args.empty() && args[0] == "allreduce") {
    checker.run_allreduce();
  } else if (!args.empty() && args[0] == "network") {
    checker.run_network_subset();
  } else {
    checker.run_all();
  }
  comm.barrier();
  if (checker.failures() > 0) {
    RANK_SAY("FAIL collectives rank %d: %d of %d checks", comm.rank(), checker.failures(), checker.cases());
    return 1;
  }
  RANK_SAY("PASS collectives rank %d (%d checks)", comm.rank(), checker.cases());
  return 0;
}

}  // namespace braid::testing
