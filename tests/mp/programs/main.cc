// braid-test-rank SCENARIO [ARGS...]: the rank program of the multi-process tests.
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "braid/base/env.h"
#include "braid/base/error.h"
#include "scenario.h"

int main(int argc, char** argv) {
  using namespace braid::testing;
  using Scenario = std::function<int(braid::Communicator&, const Args&)>;
  const std::map<std::string, Scenario> scenarios{
      {"pairs", scenario_pairs},       {"tags", scenario_tags},         {"any-source", scenario_any_source}, {"pieces", scenario_pieces},         {"barrier", scenario_barrier},
      {"split", scenario_split},       {"mismatch", scenario_mismatch}, {"victim", scenario_victim},
      {"bad-arguments", scenario_bad_arguments}, {"timeout", scenario_timeout},
      {"collectives", scenario_collectives},     {"collective-mismatch", scenario_collective_mismatch},
      {"host-striped", scenario_host_striped},
      {"alltoall", scenario_alltoall},         {"alltoallv-mismatch", scenario_alltoallv_mismatch},
      {"shared-memory-victim", scenario_shared_memory_victim},
      {"shared-memory-frozen", scenario_shared_memory_frozen},
      {"shared-memory-mismatch", scenario_shared_memory_mismatch},
      {"async", scenario_async}, {"async-mismatch", scenario_async_mismatch}, {"async-timeout", scenario_async_timeout},
      {"compressed", scenario_compressed}, {"compressed-feedback", scenario_compressed_feedback},
      {"compressed-fault", scenario_compressed_fault}, {"compressed-convergence", scenario_compressed_convergence},
      {"gradsync", scenario_gradsync}, {"zero_grad_sync", scenario_zero_grad_sync}, {"zero_pp", scenario_zero_pp}, {"partition", scenario_partition},
      {"shm-names-after-setup", scenario_shm_names_after_setup}, {"shm-absent-peer", scenario_shm_absent_peer},
      {"mesh", scenario_mesh},
      {"tensor-parallel", scenario_tensor_parallel},
      {"tensor-parallel-dropped", scenario_tensor_parallel_dropped}, {"tensor-parallel-mismatch", scenario_tensor_parallel_mismatch},
      {"axis-traffic", scenario_axis_traffic},
      {"fault-matrix", scenario_fault_matrix},
      {"moe", scenario_moe}, {"moe-error", scenario_moe_error},
  };
  if (argc < 2 || !scenarios.contains(argv[1])) {
    std::fprintf(stderr, "usage: braid-test-rank SCENARIO [ARGS...]; scenarios:");
    for (const auto& [name, fn] : scenarios) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  Args args(argv + 2, argv + argc);
  // Failure scenarios must report on their own: once one rank fails, braid-run sends SIGTERM
  // to the others, which could otherwise end a rank before it prints what it saw (even while
  // it is still in init, before the scenario starts).
  const std::set<std::string> outlives_sigterm{"mismatch", "victim", "timeout", "collective-mismatch",
                                               "alltoallv-mismatch", "async-mismatch",
                                               "shared-memory-victim", "shared-memory-frozen",
                                               "shared-memory-mismatch", "compressed-fault", "partition",
                                               "mesh", "tensor-parallel-mismatch", "fault-matrix"};
  if (outlives_sigterm.contains(argv[1])) std::signal(SIGTERM, SIG_IGN);
  if (auto job = braid::env::get(braid::env::kJobId)) RANK_SAY("JOBID %s", job->c_str());
  // "badtoken" only corrupts this rank's token before joining, to be refused by the store.
  if (std::getenv("BRAID_TEST_WRONG_TOKEN_RANK") != nullptr &&
      braid::env::get(braid::env::kRank) == std::getenv("BRAID_TEST_WRONG_TOKEN_RANK")) {
    ::setenv("BRAID_JOB_TOKEN", "00000000000000000000000000000000", 1);
  }
  // Emulated hosts: rank r claims host r % k, so ranks on "different hosts" use TCP while the
  // others share memory (a mixed job on one machine).
  if (const char* hosts = std::getenv("BRAID_TEST_EMULATED_HOSTS")) {
    int rank = std::atoi(braid::env::get(braid::env::kRank).value_or("0").c_str());
    std::string id = "emulated-host-";
    id += std::to_string(rank % std::max(1, std::atoi(hosts)));
    ::setenv("BRAID_HOST_ID", id.c_str(), 1);
  }
  try {
    braid::Communicator comm = braid::Communicator::init();
    return scenarios.at(argv[1])(comm, args);
  } catch (const braid::Error& e) {
    RANK_SAY("ERROR %s", e.what());
    return 3;
  }
}
