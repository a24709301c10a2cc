// The rank program of the fault matrix (tests/mp/fault_matrix_test.cc): every rank calls one
// collective with one algorithm (BRAID_TEST_OP, BRAID_TEST_ALGO; op "compressed" is an int8
// compressed allreduce) over and over, while BRAID_FAULT makes one rank fail at its nth call.
// Every rank reports how its calls ended: "FAULT-ERROR rank R Kind after S s: what" with S the
// time from the start of the call that raised, or "NO-ERROR" if none did. Each rank also prints
// its pid, so the test can check that none outlives the job.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/base/fault_spec.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_allreduce.h"
#include "scenario.h"

namespace braid::testing {

namespace {

constexpr std::int64_t kDefaultBlock = 4096;  // f32 elements per rank (per block for the block operations)
constexpr std::int64_t kCallsAfterFault = 3;

std::string env_or(const char* name, const char* otherwise) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : otherwise;
}

// Operands for every operation: n blocks in, n blocks out, per-peer counts for alltoallv.
struct Buffers {
  Buffers(int n, std::int64_t elements)
      : block(elements),
        send(static_cast<std::size_t>(block * n), 1.0f),
        recv(static_cast<std::size_t>(block * n)),
        counts(static_cast<std::size_t>(n), block),
        displs(static_cast<std::size_t>(n)) {
    for (int p = 0; p < n; ++p) displs[static_cast<std::size_t>(p)] = p * block;
  }
  std::int64_t block;  // BRAID_TEST_BLOCK, or kDefaultBlock
  std::vector<float> send, recv;
  std::vector<std::int64_t> counts, displs;
};

// The rooted operations take a root that surely sends at the faulty call (broadcast and
// scatter: the victim itself; reduce and gather: any other rank, so the victim sends to it).
int root_for(const std::string& op, int victim, int n) {
  return op == "broadcast" || op == "scatter" ? victim : (victim + 1) % n;
}

void call(Communicator& comm, const std::string& op, const std::string& algo, int root, Buffers& b,
          compress::CompressionState& state) {
  const CollectiveOptions options{.algorithm = algo};
  float* s = b.send.data();
  float* r = b.recv.data();
  if (op == "allreduce") {
    allreduce(comm, s, r, b.block, DType::kF32, ReduceOp::kSum, options);
  } else if (op == "reduce_scatter") {
    reduce_scatter(comm, s, r, b.block, DType::kF32, ReduceOp::kSum, options);
  } else if (op == "allgather") {
    allgather(comm, s, r, b.block, DType::kF32, options);
  } else if (op == "broadcast") {
    broadcast(comm, s, b.block, DType::kF32, root, options);
  } else if (op == "reduce") {
    reduce(comm, s, r, b.block, DType::kF32, ReduceOp::kSum, root, options);
  } else if (op == "gather") {
    gather(comm, s, r, b.block, DType::kF32, root, options);
  } else if (op == "scatter") {
    scatter(comm, s, r, b.block, DType::kF32, root, options);
  } else if (op == "alltoall") {
    alltoall(comm, s, r, b.block, DType::kF32, options);
  } else if (op == "alltoallv") {
    alltoallv(comm, s, b.counts.data(), b.displs.data(), r, b.counts.data(), b.displs.data(), DType::kF32, options);
  } else if (op == "compressed") {
    compress::CompressedAllreduceOptions copts{.codec = compress::parse_codec_spec(algo)};
    compress::compressed_allreduce(comm, std::span<float>(b.send.data(), b.block), state, copts);
  } else {
    throw InvalidArgument({.rank = comm.rank(), .op = op}, "fault-matrix: unknown BRAID_TEST_OP");
  }
}

}  // namespace

int scenario_fault_matrix(Communicator& comm, const Args&) {
  const std::string op = env_or("BRAID_TEST_OP", "allreduce");
  const std::string algo = env_or("BRAID_TEST_ALGO", "");
  const FaultSpec fault = parse_fault_spec(env_or("BRAID_FAULT", ""));
  const int me = comm.rank();
  RANK_SAY("FAULT-PID rank %d pid %d", me, static_cast<int>(::getpid()));
  Buffers buffers(comm.size(), std::stoll(env_or("BRAID_TEST_BLOCK", std::to_string(kDefaultBlock).c_str())));
  compress::CompressionState state;
  const int root = root_for(op, fault.rank, comm.size());
  auto start = std::chrono::steady_clock::now();
  try {
    // Every rank past init before any fault: a root can otherwise finish three broadcasts while
    // a leaf is still connecting, and the leaf would learn of the fault inside init. (A rank
    // may still be inside this barrier when the fault strikes, hence inside the try.)
    comm.barrier();
    for (std::int64_t i = 0; i < fault.nth + kCallsAfterFault; ++i) {
      start = std::chrono::steady_clock::now();
      call(comm, op, algo, root, buffers, state);
    }
    comm.barrier();  // a rank whose own calls all ended (a leaf) still learns of the fault here
  } catch (const Error& e) {
    RANK_SAY("FAULT-ERROR rank %d %s after %.3f s: %s", me, error_kind_name(e.kind()), seconds_since(start), e.what());
    return 3;
  }
  RANK_SAY("NO-ERROR rank %d", me);
  return 5;
}

}  // namespace braid::testing
