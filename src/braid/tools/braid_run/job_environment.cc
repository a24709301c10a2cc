#include "braid/tools/braid_run/job_environment.h"

#include <unistd.h>  // environ: read once, to build the children's environment

#include <array>
#include <string>

#include "braid/base/random.h"
#include "braid/tools/braid_run/free_port.h"

namespace braid::launcher {

namespace {

constexpr std::array kLauncherVariables{
    env::kRank,       env::kWorldSize,  env::kLocalRank, env::kLocalWorldSize,
    env::kMasterAddr, env::kMasterPort, env::kJobToken,  env::kJobId, env::kElastic, env::kElasticJoin,
};

std::string_view key_of(std::string_view entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

std::span<const env::Variable> launcher_variables() { return kLauncherVariables; }

JobIdentity make_job_identity(const LauncherOptions& options) {
  JobIdentity job;
  job.master_addr = options.master_addr;
  job.master_port = options.master_port != 0 ? options.master_port : pick_free_port(options.master_addr);
  auto inherited_token = env::get(env::kJobToken);
  job.job_token = inherited_token ? *inherited_token : random_hex(16);
  job.job_id = random_hex(6);
  return job;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) out.emplace_back(*entry);
  return out;
}

void set_variable(std::vector<std::string>& environment, std::string_view key, std::string_view value) {
  std::string entry = std::string(key) + "=" + std::string(value);
  for (std::string& existing : environment) {
    if (key_of(existing) == key) {
      existing = std::move(entry);
      return;
    }
  }
  environment.push_back(std::move(entry));
}

void set_own_cpu(std::vector<std::string>& environment, int cpu) {
  if (cpu >= 0) {
    set_variable(environment, env::kOwnCpu.name, std::to_string(cpu));
  } else {
    std::erase_if(environment, [](const std::string& entry) { return key_of(entry) == env::kOwnCpu.name; });
  }
}

std::vector<std::string> rank_environment(std::span<const std::string> base, std::span<const std::string> extra,
                                          const JobIdentity& job, int rank, int world_size, int elastic_min_ranks) {
  std::vector<std::string> out(base.begin(), base.end());
  for (const std::string& entry : extra) {
    std::string_view key = key_of(entry);
    set_variable(out, key, std::string_view(entry).substr(key.size() + 1));
  }
  // One host: local rank and size equal the global ones.
  set_variable(out, env::kRank.name, std::to_string(rank));
  set_variable(out, env::kWorldSize.name, std::to_string(world_size));
  set_variable(out, env::kLocalRank.name, std::to_string(rank));
  set_variable(out, env::kLocalWorldSize.name, std::to_string(world_size));
  set_variable(out, env::kMasterAddr.name, job.master_addr);
  set_variable(out, env::kMasterPort.name, std::to_string(job.master_port));
  set_variable(out, env::kJobToken.name, job.job_token);
  set_variable(out, env::kJobId.name, job.job_id);
  // An inherited BRAID_ELASTIC would make a rank of a plain job wait for a store nobody serves.
  std::erase_if(out, [](const std::string& entry) {
    return key_of(entry) == env::kElastic.name || key_of(entry) == env::kElasticJoin.name;
  });
  if (elastic_min_ranks > 0) set_variable(out, env::kElastic.name, std::to_string(elastic_min_ranks));
  return out;
}

}  // namespace braid::launcher
