// Network failure scenarios: what a rank sees when the network between hosts fails while the
// processes stay alive (tests/mp/network_failure_test.cc builds the emulated hosts).
#include <cstdlib>
#include <ctime>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "scenario.h"

namespace braid::testing {

namespace {

// Wall-clock seconds: every rank runs on this machine, so the driver can subtract the time rank
// 0 cut the link from the time each rank noticed.
double wall_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

// partition CUT_AFTER COMMAND: every rank runs 4 MiB allreduces back to back; after CUT_AFTER
// of them rank 0 runs COMMAND through the shell (it cuts or black-holes the link between the
// emulated hosts) and carries on. Every rank must then stop with a braid::Error (PeerLost, or
// the abort another rank reported) well before BRAID_TIMEOUT, and says when ("LOST rank R at
// T: ..."). Runs at most 120 s; a rank still going then says NO-ERROR.
int scenario_partition(Communicator& comm, const Args& args) {
  if (args.size() != 2) {
    RANK_SAY("usage: partition CUT_AFTER COMMAND");
    return 2;
  }
  const int cut_after = std::atoi(args[0].c_str());
  std::vector<float> data(1u << 20, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  try {
    for (int i = 0; seconds_since(start) < 120; ++i) {
      if (i == cut_after && comm.rank() == 0) {
        RANK_SAY("CUT at %.3f", wall_seconds());
        if (std::system(args[1].c_str()) != 0) RANK_SAY("CUT-COMMAND-FAILED %s", args[1].c_str());
      }
      allreduce(comm, data.data(), data.data(), data.size(), DType::kF32, ReduceOp::kSum);
      for (float& x : data) x = 1.0f;
    }
  } catch (const Error& e) {
    RANK_SAY("LOST rank %d at %.3f: %s", comm.rank(), wall_seconds(), e.what());
    return 0;
  }
  RANK_SAY("NO-ERROR rank %d", comm.rank());
  return 5;
}

}  // namespace braid::testing
