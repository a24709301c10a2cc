#include "braid/bootstrap/rank_discovery.h"

#include <charconv>
#include <climits>
#include <fstream>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/bootstrap/job_token.h"
#include "braid/bootstrap/slurm_layout.h"
#include "braid/bootstrap/socket.h"

namespace braid {

namespace {

// One launcher's names for the four numbers (rank, world size, local rank, local world size).
struct Launcher {
  const char* source;
  const env::Variable* rank;
  const env::Variable* world_size;
  const env::Variable* local_rank;
  const env::Variable* local_world_size;
};

// In precedence order: braid's own variables win, then the launchers DESIGN.md names.
constexpr Launcher kLaunchers[] = {
    {"braid-run", &env::kRank, &env::kWorldSize, &env::kLocalRank, &env::kLocalWorldSize},
    {"torchrun", &env::kTorchRank, &env::kTorchWorldSize, &env::kTorchLocalRank, &env::kTorchLocalWorldSize},
    {"openmpi", &env::kOmpiRank, &env::kOmpiSize, &env::kOmpiLocalRank, &env::kOmpiLocalSize},
    {"slurm", &env::kSlurmProcId, &env::kSlurmNtasks, &env::kSlurmLocalId, &env::kSlurmTasksPerNode},
};

[[noreturn]] void bad_value(const env::Variable& var, const std::string& value, const std::string& why) {
  throw InvalidArgument({.op = "discover"}, fmt::format("environment variable {}='{}' {}", var.name, value, why));
}

// The integer value of `var`, if set. Slurm writes per-node task counts as "4(x2)" (4 tasks on
// each of 2 nodes), so a count may be followed by a parenthesised or comma-separated tail.
std::optional<long long> read_int(const EnvLookup& lookup, const env::Variable& var, bool allow_tail = false) {
  std::optional<std::string> text = lookup(var);
  if (!text) return std::nullopt;
  long long value = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  bool tail_ok = ptr == end || (allow_tail && (*ptr == '(' || *ptr == ','));
  if (ec != std::errc() || !tail_ok || value < INT_MIN || value > INT_MAX) bad_value(var, *text, "is not an integer");
  return value;
}

const Launcher* find_launcher(const EnvLookup& lookup) {
  for (const Launcher& launcher : kLaunchers) {
    if (lookup(*launcher.rank) || lookup(*launcher.world_size)) return &launcher;
  }
  return nullptr;
}

// srun without --ntasks-per-node: this node's entry of the step's task counts.
std::optional<long long> slurm_local_size(const EnvLookup& lookup) {
  std::optional<std::string> counts = lookup(env::kSlurmStepTasksPerNode);
  if (!counts) return std::nullopt;
  const std::vector<int> per_node = slurm::tasks_per_node(*counts);
  const long long node = read_int(lookup, env::kSlurmNodeId).value_or(0);
  if (node < 0 || node >= static_cast<long long>(per_node.size())) {
    bad_value(env::kSlurmNodeId, std::to_string(node),
              fmt::format("is not a node of {}='{}'", env::kSlurmStepTasksPerNode.name, *counts));
  }
  return per_node[static_cast<std::size_t>(node)];
}

// Under srun, with no store address set: the step's first node, and a port from the job and
// step ids (slurm_layout.h). What the user sets wins (read_store_address).
struct StoreDefaults {
  std::optional<std::string> addr;
  std::optional<std::uint16_t> port;
};

StoreDefaults slurm_store_defaults(const EnvLookup& lookup, const RankInfo& info) {
  StoreDefaults d;
  if (info.source != std::string_view("slurm")) return d;
  if (std::optional<long long> job = read_int(lookup, env::kSlurmJobId)) {
    d.port = slurm::default_store_port(*job, read_int(lookup, env::kSlurmStepId).value_or(0));
  }
  std::optional<std::string> nodes = lookup(env::kSlurmStepNodelist);
  if (!nodes) nodes = lookup(env::kSlurmJobNodelist);
  if (nodes) d.addr = slurm::first_host(*nodes);
  return d;
}

void read_ranks(const EnvLookup& lookup, const Launcher& launcher, RankInfo& info) {
  std::optional<long long> rank = read_int(lookup, *launcher.rank);
  std::optional<long long> world = read_int(lookup, *launcher.world_size);
  if (!rank || !world) {
    const env::Variable& set = rank ? *launcher.rank : *launcher.world_size;
    const env::Variable& missing = rank ? *launcher.world_size : *launcher.rank;
    throw InvalidArgument({.op = "discover"}, fmt::format("{} is set but {} is not: a {} launch sets both", set.name,
                                                          missing.name, launcher.source));
  }
  if (*world < 1) bad_value(*launcher.world_size, std::to_string(*world), "must be at least 1");
  if (*rank < 0 || *rank >= *world) {
    bad_value(*launcher.rank, std::to_string(*rank),
              fmt::format("is out of range for {}={} (ranks are 0..{})", launcher.world_size->name, *world, *world - 1));
  }
  std::optional<long long> local_size = read_int(lookup, *launcher.local_world_size, /*allow_tail=*/true);
  if (!local_size && launcher.rank == &env::kSlurmProcId) local_size = slurm_local_size(lookup);
  if (local_size && (*local_size < 1 || *local_size > *world)) {
    bad_value(*launcher.local_world_size, *lookup(*launcher.local_world_size),
              fmt::format("must be between 1 and {}={}", launcher.world_size->name, *world));
  }
  std::optional<long long> local_rank = read_int(lookup, *launcher.local_rank);
  const long long local_limit = local_size.value_or(*world);
  if (local_rank && (*local_rank < 0 || *local_rank >= local_limit)) {
    bad_value(*launcher.local_rank, std::to_string(*local_rank),
              fmt::format("is out of range: {} ranks share this host at most", local_limit));
  }
  info.source = launcher.source;
  info.rank = static_cast<int>(*rank);
  info.world_size = static_cast<int>(*world);
  // A one-rank job is trivially one rank on one host, whatever the launcher left out.
  info.local_rank = static_cast<int>(local_rank.value_or(*world == 1 ? 0 : -1));
  info.local_world_size = static_cast<int>(local_size.value_or(*world == 1 ? 1 : -1));
}

void read_store_address(const EnvLookup& lookup, RankInfo& info, const StoreDefaults& defaults) {
  const env::Variable* port_var = lookup(env::kMasterPort)        ? &env::kMasterPort
                                  : lookup(env::kTorchMasterPort) ? &env::kTorchMasterPort
                                                                  : nullptr;
  if (port_var == nullptr && defaults.port) {
    info.master_port = *defaults.port;
  } else if (port_var != nullptr) {
    long long port = *read_int(lookup, *port_var);
    if (port < 1 || port > 65535) bad_value(*port_var, *lookup(*port_var), "is not a TCP port (1..65535)");
    info.master_port = static_cast<std::uint16_t>(port);
  } else if (info.world_size > 1) {
    throw InvalidArgument({.op = "discover"},
                          fmt::format("a {}-rank job (launched by {}) needs the rendezvous store's port: set {} (or {})",
                                      info.world_size, info.source, env::kMasterPort.name, env::kTorchMasterPort.name));
  }
  if (auto addr = lookup(env::kMasterAddr)) {
    info.master_addr = *addr;
  } else if (auto torch_addr = lookup(env::kTorchMasterAddr)) {
    info.master_addr = *torch_addr;
  } else if (defaults.addr) {
    info.master_addr = *defaults.addr;
  } else if (info.local_world_size > 0 && info.local_world_size < info.world_size) {
    throw InvalidArgument({.op = "discover"},
                          fmt::format("the {} ranks span several hosts ({} per host) but no store address is set: set "
                                      "{} (or {}) to rank 0's host",
                                      info.world_size, info.local_world_size, env::kMasterAddr.name,
                                      env::kTorchMasterAddr.name));
  } else {
    info.master_addr = std::string(env::kMasterAddr.default_value);
  }
}

void read_job(const EnvLookup& lookup, RankInfo& info) {
  info.job_token = lookup(env::kJobToken).value_or("");
  if (info.job_token.size() > net::kMaxTokenBytes) {
    // Never echo the token itself: it is a secret.
    throw InvalidArgument({.op = "discover"}, fmt::format("environment variable {} is {} characters long; at most {} "
                                                          "are allowed",
                                                          env::kJobToken.name, info.job_token.size(),
                                                          net::kMaxTokenBytes));
  }
  info.job_id = lookup(env::kJobId).value_or("");
}

std::string read_boot_id() {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(file, id);
  return id;
}

}  // namespace

RankInfo discover_rank_info(const EnvLookup& lookup) {
  RankInfo info;
  if (const Launcher* launcher = find_launcher(lookup)) read_ranks(lookup, *launcher, info);
  read_store_address(lookup, info, slurm_store_defaults(lookup, info));
  read_job(lookup, info);
  return info;
}

RankInfo discover_rank_info() { return discover_rank_info(&env::get); }

std::string describe(const RankInfo& info) {
  auto known = [](int v) { return v < 0 ? std::string("?") : std::to_string(v); };
  return fmt::format("rank {} of {} (local {} of {}) from {}, store at {}", info.rank, info.world_size,
                     known(info.local_rank), known(info.local_world_size), info.source,
                     net::format_endpoint(info.master_addr, info.master_port));
}

std::string default_host_id(const EnvLookup& lookup) {
  if (auto id = lookup(env::kHostId)) return *id;
  std::string boot_id = read_boot_id();
  return boot_id.empty() ? net::hostname() : net::hostname() + ":" + boot_id;
}

std::string default_host_id() { return default_host_id(&env::get); }

}  // namespace braid
