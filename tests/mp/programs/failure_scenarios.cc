// Failure scenarios: the errors braid must raise instead of hanging or crashing.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>

#include "braid/base/error.h"
#include "scenario.h"

namespace braid::testing {


// Rank 0 sends 100 bytes, rank 1 expects 200: both must raise braid::Mismatch. Rank 0 learns
// it while waiting for rank 1's reply, which rank 1 will never send. (Failure scenarios ignore
// SIGTERM, see main.cc, so braid-run's clean-up cannot pre-empt a report.)
int scenario_mismatch(Communicator& comm, const Args&) {
  std::vector<std::uint8_t> buffer(200);
  try {
    if (comm.rank() == 0) {
      comm.send(buffer.data(), 100, DType::kU8, 1, 3);
      comm.recv(buffer.data(), 1, DType::kU8, 1, 4);
    } else if (comm.rank() == 1) {
      comm.recv(buffer.data(), 200, DType::kU8, 0, 3);
      comm.send(buffer.data(), 1, DType::kU8, 0, 4);
    } else {
      return 0;
    }
  } catch (const Mismatch& e) {
    RANK_SAY("MISMATCH rank %d: %s", comm.rank(), e.what());
    return 3;
  } catch (const Error& e) {
    RANK_SAY("WRONG-ERROR rank %d: %s", comm.rank(), e.what());
    return 4;
  }
  RANK_SAY("NO-ERROR rank %d", comm.rank());
  return 5;
}

// The last rank kills itself with SIGKILL in the middle of large transfers with every other
// rank (it is sending to them and they to it). Survivors must raise braid::PeerLost naming
// it within 5 s.
int scenario_victim(Communicator& comm, const Args&) {
  const int n = comm.size(), me = comm.rank(), victim = n - 1;
  constexpr std::size_t kBytes = 64u << 20;
  auto out = std::make_unique<std::uint8_t[]>(kBytes);
  auto in = std::make_unique<std::uint8_t[]>(kBytes);
  std::memset(out.get(), 1, kBytes);
  if (me == victim) {
    comm.barrier();
    std::vector<Work> work;
    for (int peer = 0; peer < victim; ++peer) work.push_back(comm.isend(out.get(), kBytes, DType::kU8, peer, 1));
    work.front().test();  // some bytes are on their way
    ::kill(::getpid(), SIGKILL);
  }
  auto start = std::chrono::steady_clock::now();
  try {
    // Inside the try: the victim may leave the barrier (and die) before a survivor has received
    // its last barrier message, and then the survivor notices the loss right here.
    comm.barrier();
    Work sending = comm.isend(out.get(), kBytes, DType::kU8, victim, 2);  // the victim never receives it
    for (int i = 0; i < 1000; ++i) comm.recv(in.get(), kBytes, DType::kU8, victim, 1);
    sending.wait();
  } catch (const PeerLost& e) {
    RANK_SAY("PEERLOST rank %d after %.3f s: %s", me, seconds_since(start), e.what());
    return 0;
  } catch (const Error& e) {
    RANK_SAY("WRONG-ERROR rank %d after %.3f s: %s", me, seconds_since(start), e.what());
    return 4;
  }
  RANK_SAY("NO-ERROR rank %d", me);
  return 5;
}

// Rank 0 waits for a message rank 1 never sends, and rank 1 for one rank 0 never sends: with
// BRAID_TIMEOUT=2 both must raise braid::Timeout naming the peer, after about 2 s.
int scenario_timeout(Communicator& comm, const Args&) {
  if (comm.rank() > 1) return 0;
  std::uint8_t byte = 0;
  auto start = std::chrono::steady_clock::now();
  try {
    comm.recv(&byte, 1, DType::kU8, 1 - comm.rank(), 77);
  } catch (const Timeout& e) {
    RANK_SAY("TIMEOUT rank %d after %.3f s: %s", comm.rank(), seconds_since(start), e.what());
    return 0;
  } catch (const Error& e) {
    RANK_SAY("WRONG-ERROR rank %d: %s", comm.rank(), e.what());
    return 4;
  }
  RANK_SAY("NO-ERROR rank %d", comm.rank());
  return 5;
}

// Invalid arguments throw InvalidArgument with a readable message and leave the communicator
// usable.
int scenario_bad_arguments(Communicator& comm, const Args&) {
  int failures = 0;
  std::uint8_t byte = 0;
  auto expect_invalid = [&](const char* what, auto&& call) {
    try {
      call();
      RANK_SAY("FAIL %s: no error", what);
      ++failures;
    } catch (const InvalidArgument& e) {
      RANK_SAY("INVALID %s: %s", what, e.what());
    }
  };
  expect_invalid("negative count", [&] { comm.send(&byte, -1, DType::kU8, 0); });
  expect_invalid("null buffer", [&] { comm.recv(nullptr, 4, DType::kF32, 0); });
  expect_invalid("peer out of range", [&] { comm.send(&byte, 1, DType::kU8, comm.size()); });
  expect_invalid("negative peer", [&] { comm.send(&byte, 1, DType::kU8, -1); });
  expect_invalid("negative tag", [&] { comm.send(&byte, 1, DType::kU8, 0, -7); });
  expect_invalid("bad color", [&] { comm.split(-5, 0); });
  comm.barrier();  // still usable
  if (failures == 0) RANK_SAY("PASS bad-arguments rank %d", comm.rank());
  return failures == 0 ? 0 : 1;
}

}  // namespace braid::testing
