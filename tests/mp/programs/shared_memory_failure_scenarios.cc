// Failure paths of the collectives that wait on shared memory rather than on messages (the
// shm_direct algorithms, and hierarchical allreduce through them): a peer killed, or frozen,
// in the middle of a run of calls must end every survivor's wait with braid::PeerLost /
// braid::Timeout naming it, and a peer calling with a different count must end every rank's
// call with braid::Mismatch; never a hang. The operation is BRAID_TEST_OP (allreduce, the
// default, broadcast, allgather, alltoall, alltoallv or reduce_scatter) and the algorithm BRAID_TEST_ALGO
// (default shm_direct), so other algorithms can be checked the same way.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "scenario.h"

namespace braid::testing {

namespace {

constexpr std::int64_t kCount = 4 << 20;  // 16 MiB of f32: many rounds per call

std::string algorithm_under_test() {
  const char* algo = std::getenv("BRAID_TEST_ALGO");
  return algo != nullptr ? algo : "shm_direct";
}

std::string operation_under_test() {
  const char* op = std::getenv("BRAID_TEST_OP");
  return op != nullptr ? op : "allreduce";
}

// One call of the operation under test on `count` (<= kCount) elements per rank (allgather,
// alltoall, alltoallv and reduce_scatter: count / n per block, so every operation moves about
// the same bytes; a rank called with another count makes its alltoallv counts disagree).
void call_operation(Communicator& comm, const std::string& op, std::int64_t count, std::vector<float>& send,
                    std::vector<float>& recv, const CollectiveOptions& options) {
  const std::int64_t block = count / comm.size();
  if (op == "broadcast") {
    broadcast(comm, send.data(), count, DType::kF32, /*root=*/0, options);
  } else if (op == "allgather") {
    allgather(comm, send.data(), recv.data(), block, DType::kF32, options);
  } else if (op == "alltoall") {
    alltoall(comm, send.data(), recv.data(), block, DType::kF32, options);
  } else if (op == "alltoallv") {
    std::vector<std::int64_t> counts(static_cast<std::size_t>(comm.size()), block), displs;
    for (int p = 0; p < comm.size(); ++p) displs.push_back(p * block);
    alltoallv(comm, send.data(), counts.data(), displs.data(), recv.data(), counts.data(), displs.data(), DType::kF32,
              options);
  } else if (op == "reduce_scatter") {
    reduce_scatter(comm, send.data(), recv.data(), block, DType::kF32, ReduceOp::kSum, options);
  } else {
    allreduce(comm, send.data(), recv.data(), count, DType::kF32, ReduceOp::kSum, options);
  }
}

// With BRAID_TEST_REPORT_DIR set, a survivor that reported waits (at most 30 s) until every
// survivor has: braid-run stops the job at the first exit, and the others are then sure to
// have reported, so its grace period need not cover a slower survivor's timeout.
void wait_for_every_survivor_report(const Communicator& comm) {
  const char* dir = std::getenv("BRAID_TEST_REPORT_DIR");
  if (dir == nullptr) return;
  std::ofstream(std::string(dir) + "/reported." + std::to_string(comm.rank()));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    const auto reports = std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator());
    if (reports >= comm.size() - 1) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Runs the operation under test on `count` elements until an error ends it; reports it as
// `tag` when it is an E.
template <class E>
int allreduce_until_error(Communicator& comm, const char* tag, std::int64_t count = kCount) {
  std::vector<float> send(kCount, 1.0f), recv(kCount);
  const CollectiveOptions options{.algorithm = algorithm_under_test()};
  const std::string op = operation_under_test();
  auto start = std::chrono::steady_clock::now();
  try {
    for (int i = 0; i < 100000; ++i) {
      start = std::chrono::steady_clock::now();
      call_operation(comm, op, count, send, recv, options);
    }
  } catch (const Error& e) {
    if (dynamic_cast<const E*>(&e) == nullptr) {
      RANK_SAY("WRONG-ERROR rank %d: %s", comm.rank(), e.what());
      return 4;
    }
    RANK_SAY("%s rank %d after %.3f s: %s", tag, comm.rank(), seconds_since(start), e.what());
    wait_for_every_survivor_report(comm);
    return 3;  // non-zero, so that braid-run ends a frozen peer
  }
  RANK_SAY("NO-ERROR rank %d", comm.rank());
  return 5;
}

// Sends this process `signal` after `delay`, from another thread, while the main thread is
// inside a collective.
void raise_later(int signal, std::chrono::milliseconds delay) {
  std::thread([signal, delay] {
    std::this_thread::sleep_for(delay);
    ::kill(::getpid(), signal);
  }).detach();
}

}  // namespace

// The last rank is SIGKILLed in the middle of the allreduces: the others raise PeerLost.
int scenario_shared_memory_victim(Communicator& comm, const Args&) {
  if (comm.rank() == comm.size() - 1) raise_later(SIGKILL, std::chrono::milliseconds(300));
  return allreduce_until_error<PeerLost>(comm, "PEERLOST");
}

// The last rank is frozen (SIGSTOP: alive, but silent) in the middle of the allreduces; with
// BRAID_TIMEOUT=2 the others raise Timeout after about 2 s. braid-run's SIGKILL ends it.
int scenario_shared_memory_frozen(Communicator& comm, const Args&) {
  if (comm.rank() == comm.size() - 1) raise_later(SIGSTOP, std::chrono::milliseconds(300));
  return allreduce_until_error<Timeout>(comm, "TIMEOUT");
}

// The last rank calls the operation under test with n fewer elements (one fewer per block):
// every rank raises Mismatch at the first call (the shared-memory algorithms compare the call
// signatures before touching each other's data), never a hang (which would end in Timeout).
int scenario_shared_memory_mismatch(Communicator& comm, const Args&) {
  const bool odd = comm.rank() == comm.size() - 1;
  return allreduce_until_error<Mismatch>(comm, "MISMATCH", odd ? kCount - comm.size() : kCount);
}

}  // namespace braid::testing
