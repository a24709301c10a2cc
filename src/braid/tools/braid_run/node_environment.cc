#include "braid/tools/braid_run/node_environment.h"

#include <array>

#include "braid/base/random.h"
#include "braid/tools/braid_run/node_token.h"

namespace braid::launcher {

namespace {

constexpr std::array<std::string_view, 8> kNodeVariableNames{
    kNodeRank.name, kNumNodes.name, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK"};

}  // namespace

std::span<const std::string_view> node_variable_names() { return kNodeVariableNames; }

JobIdentity make_node_job_identity(const LauncherOptions& options) {
  return {.master_addr = options.master_addr,
          .master_port = options.master_port + 1,
          .job_token = shared_job_token(options.nodes),
          // Per node: emulated hosts may share /dev/shm, and each braid-run removes its own.
          .job_id = random_hex(6)};
}

int global_rank(const LauncherOptions& options, int local_rank) {
  return options.nodes.node_rank * options.num_ranks + local_rank;
}

int job_world_size(const LauncherOptions& options) { return options.nodes.num_nodes * options.num_ranks; }

std::vector<std::string> node_rank_environment(std::span<const std::string> base, const LauncherOptions& options,
                                               const JobIdentity& job, int local_rank) {
  const int rank = global_rank(options, local_rank);
  const int world_size = job_world_size(options);
  std::vector<std::string> out = rank_environment(base, options.extra_env, job, rank, world_size);
  const std::string local = std::to_string(local_rank);
  const std::string local_size = std::to_string(options.num_ranks);
  const std::string node = std::to_string(options.nodes.node_rank);
  set_variable(out, env::kLocalRank.name, local);
  set_variable(out, env::kLocalWorldSize.name, local_size);
  set_variable(out, kNodeRank.name, node);
  set_variable(out, kNumNodes.name, std::to_string(options.nodes.num_nodes));
  // torchrun's names (GROUP_RANK is its node rank); braid's own win where both are read.
  set_variable(out, "RANK", std::to_string(rank));
  set_variable(out, "WORLD_SIZE", std::to_string(world_size));
  set_variable(out, "LOCAL_RANK", local);
  set_variable(out, "LOCAL_WORLD_SIZE", local_size);
  set_variable(out, "GROUP_RANK", node);
  set_variable(out, "NODE_RANK", node);
  return out;
}

}  // namespace braid::launcher
