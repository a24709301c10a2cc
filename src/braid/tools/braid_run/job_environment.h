// What every rank of a job shares (rendezvous address, token, job id) and the environment
// each rank is started with. Building the environment is pure so tests can check it exactly.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "braid/base/env.h"
#include "braid/tools/braid_run/launcher_options.h"

namespace braid::launcher {

struct JobIdentity {
  std::string master_addr;
  int master_port = 0;
  // Secret every connection proves (DESIGN.md, Security). 32 hex characters when fresh.
  std::string job_token;
  // Names the job's shared-memory segments, /dev/shm/braid-<job_id>-*, so braid-run can
  // remove exactly this job's segments and never another job's.
  std::string job_id;
};

// The variables braid-run sets for each rank; --env may not override them.
std::span<const env::Variable> launcher_variables();

// The identity of a new job: the master port from the options or a free one, the job token
// from braid-run's own environment (BRAID_JOB_TOKEN, so a multi-host job can share one) or
// fresh, and a fresh job id.
JobIdentity make_job_identity(const LauncherOptions& options);

// braid-run's own environment as "KEY=VALUE" strings: the base every rank inherits.
std::vector<std::string> current_environment();

// The complete environment of rank `rank`: `base`, then `extra` ("KEY=VALUE", later wins),
// then the launcher variables, each replacing an inherited value of the same name (a rank
// must never see a stale BRAID_RANK from an outer job). `elastic_min_ranks` > 0 (--elastic) adds
// BRAID_ELASTIC with it.
std::vector<std::string> rank_environment(std::span<const std::string> base, std::span<const std::string> extra,
                                          const JobIdentity& job, int rank, int world_size, int elastic_min_ranks = 0);

// Sets KEY to `value` in a "KEY=VALUE" list, replacing an existing entry or appending.
void set_variable(std::vector<std::string>& environment, std::string_view key, std::string_view value);
// BRAID_OWN_CPU=cpu for a rank pinned alone to `cpu`; cpu < 0 removes an inherited one (a
// rank of an unbound job, or of a nested braid-run, must not claim a CPU it shares).
void set_own_cpu(std::vector<std::string>& environment, int cpu);

}  // namespace braid::launcher
