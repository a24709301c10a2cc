// The `alltoall` scenario: alltoall (out of place and in place) and alltoallv (irregular
// counts, zeros included, blocks laid out in reverse peer order with gaps), every registered
// algorithm of each, over dtypes x counts, checked bit for bit on every rank; and the argument
// checks of alltoallv. The
// `alltoallv-mismatch` scenario makes the last rank expect one element more from rank 0.
//
// The element j of the block from rank src to rank dst is a small integer derived from
// (src, dst, j), exact in every dtype, so each receiver knows every expected byte.
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "braid/base/element_value.h"
#include "braid/base/error.h"
#include "braid/collectives/algorithm_registry.h"
#include "braid/collectives/collectives.h"
#include "scenario.h"

namespace braid::testing {

namespace {

using Bytes = std::vector<std::byte>;
using Counts = std::vector<std::int64_t>;
constexpr std::byte kGarbage{0xEE};
constexpr DType kDTypes[] = {DType::kF32, DType::kI64, DType::kU8, DType::kBF16};
// 40000 elements take several rounds of the shared-memory algorithm (64 KiB per peer per round).
constexpr std::int64_t kCounts[] = {0, 1, 3, 1000, 40000};

double value(int src, int dst, std::int64_t j) { return static_cast<double>((src * 7 + dst * 3 + j) % 50 + 1); }


// Block (src -> dst) of `count` elements written at element offset `at` of `out`.
void fill_block(Bytes& out, std::int64_t at, int src, int dst, std::int64_t count, DType dtype) {
  for (std::int64_t j = 0; j < count; ++j) store_element(out.data(), at + j, dtype, value(src, dst, j));
}

// alltoallv's shapes of counts: kIrregular is zero for about a quarter of the pairs (and for
// every pair when base == 0); kHot is MoE-like, one hot destination (rank 0) receiving 3 base
// from everyone, odd ranks receiving nothing, and the others a little, so one block spans
// several rounds of the shared-memory algorithm while most are empty.
enum class Shape { kIrregular, kHot };
std::int64_t v_count(int src, int dst, std::int64_t base, Shape shape) {
  if (shape == Shape::kHot) return dst == 0 ? 3 * base + src : (dst % 2 == 1 ? 0 : base / 7);
  return (src * 3 + dst * 5) % 4 == 1 ? 0 : base + src + 2 * dst;
}

// Blocks placed in reverse peer order with `gap` untouched elements before each one, so a
// wrong displacement shows; returns the total elements.
std::int64_t layout(const Counts& counts, std::int64_t gap, Counts& displs) {
  const int n = static_cast<int>(counts.size());
  displs.assign(counts.size(), 0);
  std::int64_t next = 0;
  for (int p = n - 1; p >= 0; --p) {
    next += gap;
    displs[static_cast<std::size_t>(p)] = next;
    next += counts[static_cast<std::size_t>(p)];
  }
  return next;
}

class AlltoallChecker {
 public:
  explicit AlltoallChecker(Communicator& comm) : comm_(comm) {}
  void run_all();
  int failures() const { return failures_; }
  int cases() const { return cases_; }

 private:
  void alltoall_case(const AlgorithmEntry& algorithm, DType dtype, std::int64_t count, bool in_place);
  void alltoallv_case(std::string_view algorithm, DType dtype, std::int64_t base, Shape shape);
  void argument_checks();
  CollectiveArgs probe_args(OpKind op = OpKind::kAlltoall) {
    return {.comm = comm_, .op = op, .seq = 0, .send = nullptr, .recv = nullptr, .count = op == OpKind::kAlltoall ? 1 : 0,
            .dtype = DType::kF32};
  }
  void compare(const std::string& what, const Bytes& got, const Bytes& want);

  Communicator& comm_;
  int failures_ = 0;
  int cases_ = 0;
};

void AlltoallChecker::compare(const std::string& what, const Bytes& got, const Bytes& want) {
  ++cases_;
  if (got == want) return;
  std::size_t at = 0;
  while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
  if (++failures_ <= 20) {
    RANK_SAY("FAIL %s rank %d: first difference at byte %zu of %zu", what.c_str(), comm_.rank(), at, want.size());
  }
}

void AlltoallChecker::alltoall_case(const AlgorithmEntry& algorithm, DType dtype, std::int64_t count, bool in_place) {
  const int n = comm_.size(), r = comm_.rank();
  const std::size_t total = static_cast<std::size_t>(count * n) * dtype_size(dtype);
  Bytes send(total, kGarbage), want(total, kGarbage);
  for (int p = 0; p < n; ++p) {
    fill_block(send, p * count, r, p, count, dtype);
    fill_block(want, p * count, p, r, count, dtype);
  }
  Bytes recv = in_place ? send : Bytes(total, kGarbage);
  const Bytes original = send;
  alltoall(comm_, in_place ? recv.data() : send.data(), recv.data(), count, dtype,
           {.algorithm = std::string(algorithm.name)});
  std::string what = "alltoall/" + std::string(algorithm.name) + " " + std::string(dtype_name(dtype)) + " count=" + std::to_string(count) +
                     (in_place ? " in-place" : " out-of-place");
  compare(what, recv, want);
  if (!in_place) compare(what + " (send buffer modified)", send, original);
}

// `algorithm` empty: the tuner's choice (BRAID_ALGO_ALLTOALLV where set).
void AlltoallChecker::alltoallv_case(std::string_view algorithm, DType dtype, std::int64_t base, Shape shape) {
  const int n = comm_.size(), r = comm_.rank();
  const std::size_t elem = dtype_size(dtype);
  Counts send_counts, recv_counts, send_displs, recv_displs;
  for (int p = 0; p < n; ++p) {
    send_counts.push_back(v_count(r, p, base, shape));
    recv_counts.push_back(v_count(p, r, base, shape));
  }
  const std::int64_t send_total = layout(send_counts, 1, send_displs), recv_total = layout(recv_counts, 2, recv_displs);
  Bytes send(static_cast<std::size_t>(send_total) * elem, kGarbage), want(static_cast<std::size_t>(recv_total) * elem, kGarbage);
  for (int p = 0; p < n; ++p) {
    const auto i = static_cast<std::size_t>(p);
    fill_block(send, send_displs[i], r, p, send_counts[i], dtype);
    fill_block(want, recv_displs[i], p, r, recv_counts[i], dtype);
  }
  Bytes recv(want.size(), kGarbage);
  alltoallv(comm_, send.data(), send_counts.data(), send_displs.data(), recv.data(), recv_counts.data(),
            recv_displs.data(), dtype, {.algorithm = std::string(algorithm)});
  compare("alltoallv/" + std::string(algorithm.empty() ? "(tuner)" : algorithm) + " " + std::string(dtype_name(dtype)) + " base=" +
              std::to_string(base),
          recv, want);
}

// Local checks, before any message: every rank raises the same InvalidArgument, naming itself,
// the peer whose block is bad (the last rank) and the operation.
void AlltoallChecker::argument_checks() {
  const auto n = static_cast<std::size_t>(comm_.size());
  Counts zeros(n, 0), negative(n, 0), huge(n, 0);
  negative[n - 1] = -1;
  huge[n - 1] = std::numeric_limits<std::int64_t>::max() / 4;  // f32: the block end overflows int64 bytes
  float buffer[2] = {};
  const std::string names_peer = "rank " + std::to_string(comm_.rank()) + ", peer " + std::to_string(n - 1) + ", op alltoallv";
  auto expect_invalid = [&](const char* what, const std::string& context, auto call) {
    ++cases_;
    try {
      call();
    } catch (const InvalidArgument& e) {
      if (std::string(e.what()).find(context) != std::string::npos) return;
      if (++failures_ <= 20) RANK_SAY("FAIL %s rank %d: '%s' lacks '%s'", what, comm_.rank(), e.what(), context.c_str());
      return;
    }
    if (++failures_ <= 20) RANK_SAY("FAIL %s rank %d: no InvalidArgument", what, comm_.rank());
  };
  expect_invalid("alltoallv negative send count", names_peer, [&] {
    alltoallv(comm_, buffer, negative.data(), zeros.data(), buffer + 1, zeros.data(), zeros.data(), DType::kF32);
  });
  expect_invalid("alltoallv negative recv displacement", names_peer, [&] {
    alltoallv(comm_, buffer, zeros.data(), zeros.data(), buffer + 1, zeros.data(), negative.data(), DType::kF32);
  });
  expect_invalid("alltoallv overflowing send block", names_peer, [&] {
    alltoallv(comm_, buffer, huge.data(), huge.data(), buffer + 1, zeros.data(), zeros.data(), DType::kF32);
  });
  expect_invalid("alltoallv overflowing recv block", names_peer, [&] {
    alltoallv(comm_, buffer, zeros.data(), zeros.data(), buffer + 1, huge.data(), huge.data(), DType::kF32);
  });
  // Rank n-1's send block (elements 0-3) and its recv block (elements 2-3) share two elements.
  Counts four(n, 0), two(n, 0);
  four[n - 1] = 4;
  two[n - 1] = 2;
  float shared[4] = {};
  expect_invalid("alltoallv send overlapping recv", names_peer, [&] {
    alltoallv(comm_, shared, four.data(), zeros.data(), shared + 2, two.data(), zeros.data(), DType::kF32);
  });
  expect_invalid("alltoallv unknown algorithm", "op alltoallv", [&] {
    alltoallv(comm_, buffer, zeros.data(), zeros.data(), buffer + 1, zeros.data(), zeros.data(), DType::kF32,
              {.algorithm = "no-such-algorithm"});
  });
  expect_invalid("alltoall negative count", "op alltoall", [&] { alltoall(comm_, buffer, buffer + 1, -1, DType::kF32); });
  expect_invalid("alltoall unknown algorithm", "op alltoall", [&] {
    alltoall(comm_, buffer, buffer + 1, 0, DType::kF32, {.algorithm = "no-such-algorithm"});
  });
}

void AlltoallChecker::run_all() {
  argument_checks();
  for (DType dtype : kDTypes) {
    for (std::int64_t count : kCounts) {
      for (const AlgorithmEntry* algorithm : algorithms_for(OpKind::kAlltoall)) {
        if (algorithm->supports != nullptr && !algorithm->supports(probe_args())) continue;
        for (bool in_place : {false, true}) alltoall_case(*algorithm, dtype, count, in_place);
      }
      for (Shape shape : {Shape::kIrregular, Shape::kHot}) {
        alltoallv_case("", dtype, count, shape);
        for (const AlgorithmEntry* algorithm : algorithms_for(OpKind::kAlltoallv)) {
          if (algorithm->supports != nullptr && !algorithm->supports(probe_args(OpKind::kAlltoallv))) continue;
          alltoallv_case(algorithm->name, dtype, count, shape);
        }
      }
    }
  }
}

}  // namespace

int scenario_alltoall(Communicator& comm, const Args&) {
  AlltoallChecker checker(comm);
  checker.run_all();
  comm.barrier();
  if (checker.failures() > 0) {
    RANK_SAY("FAIL alltoall rank %d: %d of %d checks", comm.rank(), checker.failures(), checker.cases());
    return 1;
  }
  RANK_SAY("PASS alltoall rank %d (%d checks)", comm.rank(), checker.cases());
  return 0;
}

// Rank n-1 expects 1001 elements from rank 0, which sends 1000: the envelope of that message
// carries 4000 bytes, so rank n-1 must raise Mismatch (and report it to the others); no rank
// may hang or end without an error. SIGTERM is ignored (main.cc) so every rank reports.
int scenario_alltoallv_mismatch(Communicator& comm, const Args&) {
  const int n = comm.size(), r = comm.rank();
  Counts send_counts(static_cast<std::size_t>(n), 1000), recv_counts = send_counts, displs(static_cast<std::size_t>(n));
  if (r == n - 1) recv_counts[0] = 1001;
  for (int p = 0; p < n; ++p) displs[static_cast<std::size_t>(p)] = 1001 * p;
  std::vector<float> send(static_cast<std::size_t>(1001 * n), 1.0f), recv(send.size());
  try {
    alltoallv(comm, send.data(), send_counts.data(), displs.data(), recv.data(), recv_counts.data(), displs.data(),
              DType::kF32);
    comm.barrier();  // ranks 0 and 1 may finish the alltoallv first; the barrier sees the abort
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
