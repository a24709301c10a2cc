// Which CPU each rank of this node runs on (braid-run --bind-to).
//
// Why bind: on one host every collective is a race of memory copies between the ranks, and a
// rank the scheduler moves to another CPU arrives with cold caches and may share a core with a
// peer for a while; the 2-core VM lands in a "fast" or a "slow" mode from run to run
// (docs/performance.md). Binding one rank per CPU removes migration from the picture. Why only
// when ranks do not outnumber CPUs ("auto"): with more ranks than CPUs, a rank bound to a CPU
// whose other rank spins cannot escape to an idle one, and the wait loops rely on the scheduler
// running the peer that needs the core.
//
// The CPUs are braid-run's own affinity mask (what taskset, cgroups or Slurm gave it), in
// ascending order; local rank i gets the i-th. Pure, so the tests check the rule without forks.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace braid::launcher {

enum class BindPolicy {
  kNone,  // the scheduler places ranks (no affinity set)
  kCore,  // local rank i on CPU i of the mask, wrapping around when ranks outnumber CPUs
  kAuto,  // kCore when ranks <= CPUs, else kNone
};

// "none", "core", "auto"; nullopt for anything else.
std::optional<BindPolicy> parse_bind_policy(std::string_view text);
std::string_view bind_policy_name(BindPolicy policy);

// The CPU of each local rank, or empty when ranks are not bound. `cpus`: the allowed CPUs in
// ascending order (never empty for a running process; empty here means "unknown": no binding).
std::vector<int> cpu_binding(BindPolicy policy, int ranks_on_node, const std::vector<int>& cpus);

// Whether every rank of `binding` has its CPU to itself (no CPU appears twice): then braid-run
// tells each rank so (BRAID_OWN_CPU), since a rank sees only its own one-CPU mask and could
// not tell that from ranks crowded onto one CPU.
bool each_rank_alone_on_its_cpu(const std::vector<int>& binding);

// The CPUs in this process's affinity mask, ascending (sched_getaffinity).
std::vector<int> allowed_cpus();

}  // namespace braid::launcher
