// The shared-memory set-up seen from the ranks, for shm_setup_test.cc (which starts the ranks
// itself, as torchrun or mpirun would, not through braid-run, whose clean-up would hide a
// leak): a healthy job must hold no /dev/shm name once set up, and a rank that stays away
// from the first shared-memory collective must end its peers' set-up with an error.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "braid/collectives/collectives.h"
#include "braid/comm/communicator_internal.h"
#include "scenario.h"

namespace braid::testing {

namespace {

// Names in /dev/shm of this job's segments, ring and workspace alike.
int job_names_in_dev_shm(Communicator& comm) {
  const std::string prefix = "braid-" + detail::CollectiveAccess(comm).job_id() + "-";
  int names = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/dev/shm", ec), end; !ec && it != end; it.increment(ec)) {
    names += it->path().filename().string().starts_with(prefix);
  }
  return names;
}

// One small shared-memory direct allreduce: creates the communicator's workspace.
void small_direct_allreduce(Communicator& comm) {
  std::vector<float> data(256, 1.0f);
  allreduce(comm, data.data(), data.data(), static_cast<std::int64_t>(data.size()), DType::kF32, ReduceOp::kSum,
            {.algorithm = "shm_direct"});
}

}  // namespace

// After init and one shared-memory collective, while every rank is still running, no name of
// the job is left in /dev/shm: every rank prints SHM-NAMES-LEFT 0.
int scenario_shm_names_after_setup(Communicator& comm, const Args&) {
  small_direct_allreduce(comm);
  comm.barrier();
  RANK_SAY("SHM-NAMES-LEFT %d", job_names_in_dev_shm(comm));
  comm.barrier();  // nobody exits (and drops its mappings) before every rank has looked
  return 0;
}

// The last rank never joins the first shared-memory collective (it sleeps past the others'
// BRAID_TIMEOUT, args[0] seconds); the others' workspace set-up fails (main prints ERROR).
int scenario_shm_absent_peer(Communicator& comm, const Args& args) {
  if (comm.rank() == comm.size() - 1) {
    ::sleep(static_cast<unsigned>(std::stoi(args.at(0))));
    return 0;
  }
  small_direct_allreduce(comm);
  RANK_SAY("NO-ERROR rank %d", comm.rank());
  return 5;
}

}  // namespace braid::testing
