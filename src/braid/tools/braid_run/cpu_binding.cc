#include "braid/tools/braid_run/cpu_binding.h"

#include <sched.h>

#include <algorithm>

namespace braid::launcher {

std::optional<BindPolicy> parse_bind_policy(std::string_view text) {
  if (text == "none") return BindPolicy::kNone;
  if (text == "core") return BindPolicy::kCore;
  if (text == "auto") return BindPolicy::kAuto;
  return std::nullopt;
}

std::string_view bind_policy_name(BindPolicy policy) {
  switch (policy) {
    case BindPolicy::kNone: return "none";
    case BindPolicy::kCore: return "core";
    case BindPolicy::kAuto: return "auto";
  }
  return "?";
}

std::vector<int> cpu_binding(BindPolicy policy, int ranks_on_node, const std::vector<int>& cpus) {
  if (policy == BindPolicy::kNone || cpus.empty() || ranks_on_node < 1) return {};
  if (policy == BindPolicy::kAuto && ranks_on_node > static_cast<int>(cpus.size())) return {};
  std::vector<int> binding;
  binding.reserve(static_cast<std::size_t>(ranks_on_node));
  for (int local = 0; local < ranks_on_node; ++local) binding.push_back(cpus[static_cast<std::size_t>(local) % cpus.size()]);
  return binding;
}

bool each_rank_alone_on_its_cpu(const std::vector<int>& binding) {
  std::vector<int> sorted = binding;
  std::sort(sorted.begin(), sorted.end());
  return !sorted.empty() && std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace braid::launcher
