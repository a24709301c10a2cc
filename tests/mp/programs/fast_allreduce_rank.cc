// braid-fast-allreduce-rank SCENARIO ALGO: the rank program of fast_allreduce_test.cc, for the
// latency-first allreduce paths (one_shot, two_shot; "tuner" = no request). Its own program, as
// it replaces the global operator new with a counting one.
//
//   no-allocation: after a warm-up, counts the heap allocations of the calling thread around 1000
//     allreduces each of 8 B and 4 KiB; prints "ALLOCATIONS <algo> rank R: N".
//   order-matters: f32 sums whose value depends on the order of the additions (a huge value
//     on rank 0, small ones elsewhere, varying by element); every rank compares its bytes with
//     the rank-order sum computed locally, and checks that another order would differ (so the
//     comparison can fail); prints "ORDER-OK rank R" or "ORDER-FAIL ...".
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/comm/communicator.h"

namespace {

// Per thread: the allreduces run on this one; other threads of the process (rank 0 serves the
// job's rendezvous store in the background) allocate on their own schedule.
thread_local long long t_allocations = 0;

}  // namespace

// Counting replacements of the global allocation functions (all forms route through these).
void* operator new(std::size_t bytes) {
  ++t_allocations;
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t bytes) { return ::operator new(bytes); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using braid::Communicator;
using braid::DType;
using braid::ReduceOp;

braid::CollectiveOptions options_for(const std::string& algo) {
  return {.algorithm = algo == "tuner" ? std::string() : algo};
}

int no_allocation(Communicator& comm, const std::string& algo) {
  const braid::CollectiveOptions options = options_for(algo);
  std::vector<float> send(1024, 1.0f), recv(1024);
  for (std::int64_t count : {2, 1024}) {  // 8 B and 4 KiB
    for (int i = 0; i < 100; ++i) braid::allreduce(comm, send.data(), recv.data(), count, DType::kF32, ReduceOp::kSum, options);
  }
  const long long before = t_allocations;
  for (std::int64_t count : {2, 1024}) {
    for (int i = 0; i < 1000; ++i) braid::allreduce(comm, send.data(), recv.data(), count, DType::kF32, ReduceOp::kSum, options);
  }
  const long long allocations = t_allocations - before;
  const bool right = recv[0] == static_cast<float>(comm.size()) && recv[1023] == static_cast<float>(comm.size());
  std::printf("ALLOCATIONS %s rank %d: %lld%s\n", algo.c_str(), comm.rank(), allocations, right ? "" : " WRONG-RESULT");
  std::fflush(stdout);
  return allocations == 0 && right ? 0 : 1;
}

// Rank q's element i: rank 0 holds 1e8 (+ i), others 1 + small fractions, so that adding
// the small ones to the big one first (rank order) loses them while adding them to each
// other first would not.
float input(int rank, std::int64_t i) {
  if (rank == 0) return 1.0e8f + static_cast<float>(i % 97);
  return 1.0f + static_cast<float>((i * 7 + rank * 13) % 31) / 8.0f;
}

int order_matters(Communicator& comm, const std::string& algo) {
  const int n = comm.size();
  int failures = 0;
  // Uneven; 8 and 9: the largest input posted in the signature's cache line (32 bytes,
  // ShmWorkspace::kInlineBytes) and the smallest behind the slot's header; 65537 and 200003:
  // several rounds.
  for (std::int64_t count : {1, 7, 8, 9, 1000, 65537, 200003}) {
    std::vector<float> send(static_cast<std::size_t>(count)), recv(send.size()), want(send.size());
    bool another_order_differs = false;
    for (std::int64_t i = 0; i < count; ++i) {
      send[static_cast<std::size_t>(i)] = input(comm.rank(), i);
      float forward = input(0, i), backward = input(n - 1, i);
      for (int q = 1; q < n; ++q) forward += input(q, i);
      for (int q = n - 2; q >= 0; --q) backward += input(q, i);
      want[static_cast<std::size_t>(i)] = forward;
      another_order_differs = another_order_differs || std::memcmp(&forward, &backward, sizeof forward) != 0;
    }
    braid::allreduce(comm, send.data(), recv.data(), count, DType::kF32, ReduceOp::kSum, options_for(algo));
    if (std::memcmp(recv.data(), want.data(), want.size() * sizeof(float)) != 0) {
      std::printf("ORDER-FAIL %s rank %d count %lld: not the rank-order sum\n", algo.c_str(), comm.rank(),
                  static_cast<long long>(count));
      ++failures;
    }
    if (n >= 3 && count >= 1000 && !another_order_differs) {
      std::printf("ORDER-FAIL %s rank %d count %lld: inputs do not depend on the order\n", algo.c_str(), comm.rank(),
                  static_cast<long long>(count));
      ++failures;
    }
  }
  if (failures == 0) std::printf("ORDER-OK %s rank %d\n", algo.c_str(), comm.rank());
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: braid-fast-allreduce-rank no-allocation|order-matters ALGO\n");
    return 2;
  }
  const std::string scenario = argv[1], algo = argv[2];
  try {
    Communicator comm = Communicator::init();
    if (scenario == "no-allocation") return no_allocation(comm, algo);
    if (scenario == "order-matters") return order_matters(comm, algo);
    std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    return 2;
  } catch (const braid::Error& e) {
    std::printf("ERROR %s\n", e.what());
    return 3;
  }
}
