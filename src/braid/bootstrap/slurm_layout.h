// What braid reads from a Slurm job step when the user set no store address or local size:
// srun gives every task its rank (SLURM_PROCID) and the step's node list, but neither a store
// address nor, unless --ntasks-per-node was given, a task count per node. Pure functions of
// Slurm's own formats, so `srun -n 4 braid-bench allreduce` needs nothing else:
//   - the store lives on the step's first node (rank 0 runs there: Slurm numbers tasks node by
//     node with the default block distribution);
//   - its port is derived from the job and step ids, so two steps running at once on one node
//     do not collide (MASTER_PORT / BRAID_MASTER_PORT overrides it);
//   - the local world size is this node's entry of SLURM_STEP_TASKS_PER_NODE.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace braid::slurm {

// The first host of a Slurm host list ("vm", "node[07-09,12],gpu1" -> "node07", zero padding
// kept; "rack[1-2]-n[3-4]" -> "rack1-n3"). InvalidArgument for an empty or unbalanced list.
std::string first_host(std::string_view nodelist);

// The per-node task counts of SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE ("2(x3),1" ->
// {2, 2, 2, 1}). InvalidArgument for text that is not that format.
std::vector<int> tasks_per_node(std::string_view text);

// The store's default port for a job step: 10000 + (job * 16 + step) % 20000, below Linux's
// ephemeral range (32768-60999), so a port the kernel lent to some connection is never picked.
std::uint16_t default_store_port(long long job_id, long long step_id);

}  // namespace braid::slurm
