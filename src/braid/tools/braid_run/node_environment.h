// What a rank of a multi-node job is told: its global rank (node-major), its place on its node
// and its node's place in the job, in braid's variables and torchrun's (RANK, LOCAL_RANK,
// GROUP_RANK...), so programs written for either launcher run unchanged.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "braid/tools/braid_run/job_environment.h"
#include "braid/tools/braid_run/launcher_options.h"

namespace braid::launcher {

// Extra variables braid-run sets in a multi-node job, besides launcher_variables().
inline constexpr env::Variable kNodeRank{"BRAID_NODE_RANK", "", "this rank's node, 0..BRAID_NUM_NODES-1 (multi-node braid-run)"};
inline constexpr env::Variable kNumNodes{"BRAID_NUM_NODES", "", "nodes in the job (multi-node braid-run)"};

// The variables --env may not override in a multi-node job (torchrun's included).
std::span<const std::string_view> node_variable_names();

// The identity of this node's part of a multi-node job: the shared token (node_token.h), the
// ranks' store on --master-port + 1 (node 0's braid-run holds --master-port), a fresh job id.
JobIdentity make_node_job_identity(const LauncherOptions& options);

// The global rank of local rank `local_rank` on this node: node-major.
int global_rank(const LauncherOptions& options, int local_rank);
// Ranks in the whole job.
int job_world_size(const LauncherOptions& options);

// rank_environment() for local rank `local_rank` of this node, with the node's variables.
std::vector<std::string> node_rank_environment(std::span<const std::string> base, const LauncherOptions& options,
                                               const JobIdentity& job, int local_rank);

}  // namespace braid::launcher
