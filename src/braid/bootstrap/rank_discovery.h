// Who am I in this job, and where is the rendezvous store? Read from whichever launcher
// started the process (docs/bootstrap.md has the precedence table):
//
//   1. braid-run    BRAID_RANK / BRAID_WORLD_SIZE / BRAID_LOCAL_RANK / BRAID_LOCAL_WORLD_SIZE
//   2. torchrun     RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE
//   3. Open MPI     OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE
//   4. Slurm        SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID / SLURM_NTASKS_PER_NODE ("4(x2)" ok)
//   5. nothing set  a single-process job: rank 0 of 1
//
// A launcher is chosen when its rank or world-size variable is set; it must then set both.
// The store address is BRAID_MASTER_ADDR / BRAID_MASTER_PORT, else MASTER_ADDR / MASTER_PORT,
// whatever the launcher (braid's own names win, as for every setting). The address defaults to
// 127.0.0.1 when all ranks are known to share one host; a multi-rank job without a port, or a
// multi-host job without an address, is an InvalidArgument naming the variable to set.
//
// Under torchrun's static rendezvous the torchrun agent itself already listens on MASTER_PORT
// (its own TCPStore); give braid another port with BRAID_MASTER_PORT there.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "braid/base/env.h"

namespace braid {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // -1 when the launcher did not say
  int local_world_size = 1;  // -1 when the launcher did not say (e.g. Slurm without --ntasks-per-node)
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 0;  // 0: "pick one" (only in a single-process job)
  std::string job_token;          // "" when none is configured
  std::string job_id;             // "" when none is configured (the caller derives one)
  std::string source = "single";  // "braid-run", "torchrun", "openmpi", "slurm" or "single"
};

// Reads a variable: the value if set and non-empty, like env::get.
using EnvLookup = std::function<std::optional<std::string>(const env::Variable&)>;

// Discovery over an arbitrary lookup, so tests need not touch the real environment.
// Throws InvalidArgument naming the variable and its value on anything inconsistent.
RankInfo discover_rank_info(const EnvLookup& lookup);
// Discovery from the process environment (env::get).
RankInfo discover_rank_info();

// "rank 2 of 4 (local 0 of 2) from torchrun, store at 10.0.0.1:29500"
std::string describe(const RankInfo& info);

// Identity of this machine for "same host?" decisions: BRAID_HOST_ID if set, else
// hostname + ":" + the kernel's boot id, so two machines that share a hostname (cloned VMs,
// containers named "localhost") still differ.
std::string default_host_id(const EnvLookup& lookup);
std::string default_host_id();

}  // namespace braid
