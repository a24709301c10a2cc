// Scenarios run by braid-test-rank, the rank program of the multi-process tests. Each one is
// executed by every rank of a braid-run job, prints what the test driver checks, and returns
// the process exit code.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"

namespace braid::testing {

using Args = std::vector<std::string>;

int scenario_pairs(Communicator& comm, const Args& args);
int scenario_tags(Communicator& comm, const Args& args);
int scenario_any_source(Communicator& comm, const Args& args);
int scenario_pieces(Communicator& comm, const Args& args);
int scenario_barrier(Communicator& comm, const Args& args);
int scenario_split(Communicator& comm, const Args& args);
int scenario_mismatch(Communicator& comm, const Args& args);
int scenario_victim(Communicator& comm, const Args& args);
int scenario_bad_arguments(Communicator& comm, const Args& args);
int scenario_timeout(Communicator& comm, const Args& args);
int scenario_collectives(Communicator& comm, const Args& args);
int scenario_collective_mismatch(Communicator& comm, const Args& args);
int scenario_host_striped(Communicator& comm, const Args& args);
int scenario_alltoall(Communicator& comm, const Args& args);
int scenario_alltoallv_mismatch(Communicator& comm, const Args& args);
int scenario_shared_memory_victim(Communicator& comm, const Args& args);
int scenario_shared_memory_frozen(Communicator& comm, const Args& args);
int scenario_shared_memory_mismatch(Communicator& comm, const Args& args);
int scenario_async(Communicator& comm, const Args& args);
int scenario_async_mismatch(Communicator& comm, const Args& args);
int scenario_async_timeout(Communicator& comm, const Args& args);
int scenario_compressed(Communicator& comm, const Args& args);
int scenario_compressed_feedback(Communicator& comm, const Args& args);
int scenario_compressed_fault(Communicator& comm, const Args& args);
int scenario_compressed_convergence(Communicator& comm, const Args& args);
int scenario_gradsync(Communicator& comm, const Args& args);
int scenario_zero_grad_sync(Communicator& comm, const Args& args);
int scenario_zero_pp(Communicator& comm, const Args& args);
int scenario_partition(Communicator& comm, const Args& args);
int scenario_shm_names_after_setup(Communicator& comm, const Args& args);
int scenario_shm_absent_peer(Communicator& comm, const Args& args);
int scenario_mesh(Communicator& comm, const Args& args);
int scenario_tensor_parallel(Communicator& comm, const Args& args);
int scenario_tensor_parallel_dropped(Communicator& comm, const Args& args);
int scenario_tensor_parallel_mismatch(Communicator& comm, const Args& args);
int scenario_axis_traffic(Communicator& comm, const Args& args);
int scenario_fault_matrix(Communicator& comm, const Args& args);
int scenario_moe(Communicator& comm, const Args& args);
int scenario_moe_error(Communicator& comm, const Args& args);

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Deterministic content for the message from `src` to `dst` of `bytes` bytes, so the receiver
// can verify every byte without another copy of it.
void fill_pattern(std::uint8_t* data, std::size_t bytes, int src, int dst, std::uint64_t salt);
// Index of the first byte that differs from the pattern, or -1.
long long first_pattern_error(const std::uint8_t* data, std::size_t bytes, int src, int dst, std::uint64_t salt);

// printf to stdout, flushed at once (braid-run forwards lines as they come).
#define RANK_SAY(...)           \
  do {                          \
    std::printf(__VA_ARGS__);   \
    std::printf("\n");          \
    std::fflush(stdout);        \
  } while (0)

}  // namespace braid::testing
