#include "braid/collectives/tuner.h"

#include <array>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/tuning_file.h"
#include "braid/comm/communicator_internal.h"

namespace braid {

namespace {

constexpr std::uint64_t KiB = 1024;

// BRAID_ALGO_<OP> of every operation with algorithms in the registry.
constexpr std::array<std::pair<OpKind, const env::Variable*>, 9> kForcingVariables{{
    {OpKind::kAllreduce, &env::kAlgoAllreduce},         {OpKind::kAllgather, &env::kAlgoAllgather},
    {OpKind::kReduceScatter, &env::kAlgoReduceScatter}, {OpKind::kBroadcast, &env::kAlgoBroadcast},
    {OpKind::kReduce, &env::kAlgoReduce},               {OpKind::kGather, &env::kAlgoGather},
    {OpKind::kScatter, &env::kAlgoScatter},             {OpKind::kAlltoall, &env::kAlgoAlltoall},
    {OpKind::kAlltoallv, &env::kAlgoAlltoallv},
}};

// What the environment says about selection, read once per communicator (tuner.h says why).
// Immutable once constructed, so the communicator's thread and its background collective
// thread may both read it without a lock.
class SelectionConfig : public CommAttachment {
 public:
  SelectionConfig() {
    for (std::size_t i = 0; i < kForcingVariables.size(); ++i) forced_[i] = env::get(*kForcingVariables[i].second);
    if (auto path = env::get(env::kTuningFile)) file_ = load_tuning_file(*path);  // throws: nothing cached
  }

  SelectionSources sources(OpKind op) const {
    SelectionSources sources{.file = file_ ? &*file_ : nullptr, .builtin = &builtin_tuning_table()};
    for (std::size_t i = 0; i < kForcingVariables.size(); ++i) {
      if (kForcingVariables[i].first != op) continue;
      if (forced_[i]) sources.forced = *forced_[i];
      sources.forced_by = kForcingVariables[i].second->name;
    }
    return sources;
  }

 private:
  std::array<std::optional<std::string>, kForcingVariables.size()> forced_;  // in kForcingVariables order
  std::optional<TuningTable> file_;                                           // BRAID_TUNING_FILE's rules
};

// A rule over every world size and host count unless narrowed by the caller.
TuningRule rule(OpKind op, std::string algorithm, std::uint64_t min_bytes, std::uint64_t max_bytes) {
  return {.op = op, .algorithm = std::move(algorithm), .min_bytes = min_bytes, .max_bytes = max_bytes};
}

// The crossovers were measured with `braid-bench tune` on the 2-core development VM (2, 3 and
// 4 ranks, shared memory and TCP; docs/collectives.md, "Choosing an algorithm") and rounded
// to powers of two: that machine is noisy, so only their order of magnitude is meaningful.
TuningTable make_builtin_table() {
  TuningTable table;
  auto& r = table.rules;
  // allreduce. Across hosts, reduce inside each host first. From 512 KiB, when every host has
  // the same number of ranks, every rank carries its shard of the host's sum across hosts at
  // once (host_striped); below, and on uneven hosts, the leader variant (hierarchical: one
  // inter-host stream per host; refuses unless some host has several ranks). Measured on 2
  // emulated hosts x 2 ranks in network namespaces joined by a veth shaped to 1 Gbit/s (tc
  // tbf, 256 KB burst), 4 ranks on 2 cores, f32 (2026-11-30, docs/collectives.md):
  // host_striped vs hierarchical 97.9 vs 123.5 ms at 8 MiB (ring 106.7; the link bound is
  // ~67 ms), 10.2 vs 11.7 ms at 1 MiB, 4.5 vs 6.0-6.6 ms at 512 KiB; but 2.5-2.6 vs 1.3-1.6 ms
  // at 128 KiB and 2.5-2.8 vs 2.2 ms at 256 KiB, where messages fit the shaper's burst and the
  // extra phases cost more than the striping saves; even within noise below.
  // On one host, reading the peers' data in one shared segment wins at every size on 2 and 4
  // ranks (quiet machine, 2026-11-29: 8 B 0.9 us vs 1.7 us for recursive doubling on 2 ranks,
  // 5.9 vs 16 us on 4; 512 KiB 77 vs 113 us). Over plain messages (TCP, or shared memory
  // refused), the fewest rounds below ~64 KiB, the ring above.
  r.push_back(rule(OpKind::kAllreduce, "host_striped", 512 * KiB, kNoByteLimit));
  r.back().min_hosts = 2;
  r.push_back(rule(OpKind::kAllreduce, "hierarchical", 0, kNoByteLimit));
  r.back().min_hosts = 2;
  r.push_back(rule(OpKind::kAllreduce, "shm_direct", 0, kNoByteLimit));
  r.back().max_hosts = 1;
  r.push_back(rule(OpKind::kAllreduce, "recursive_doubling", 0, 64 * KiB - 1));
  r.push_back(rule(OpKind::kAllreduce, "ring", 64 * KiB, kNoByteLimit));
  // allgather / reduce_scatter: log2(n) rounds for small buffers (recursive doubling / halving
  // where n is a power of two, else Bruck), the bandwidth-optimal ring for large ones.
  // Recursive halving keeps up with the ring longer, as it reduces half the data per round.
  // On one host, each block copied in once and out once per peer wins from 4 KiB (2026-11-29,
  // 4 ranks: 13 vs 24 us for Bruck at 4 KiB, 49 vs 85 us for the ring at 256 KiB).
  r.push_back(rule(OpKind::kAllgather, "shm_direct", 4 * KiB, kNoByteLimit));
  r.back().max_hosts = 1;
  r.push_back(rule(OpKind::kAllgather, "recursive_doubling", 0, 32 * KiB - 1));
  r.push_back(rule(OpKind::kAllgather, "bruck", 0, 32 * KiB - 1));
  r.push_back(rule(OpKind::kAllgather, "ring", 32 * KiB, kNoByteLimit));
  // reduce_scatter on one host: staging each block once and reducing every rank's staged copy
  // where it lies (shm_direct) wins or ties at every size (idle VM, 2026-11-30, f32, medians of
  // 3-6 runs; the best message-based algorithm in brackets): 2 ranks 1.2 us (2.6) at 256 B,
  // even within noise at 16-256 KiB, 1.3 ms (1.9) at 4 MiB, 17.4 ms (32.6) at 64 MiB; 3 ranks
  // 5.2 us (13.9) at 256 B, 16 us (23) at 16 KiB; 4 ranks 6.8 us (17.3) at 256 B, 26 us (28) at
  // 16 KiB, 0.56 ms (1.23) at 1 MiB, 30.6 ms (82.0) at 64 MiB. Inside host_striped allreduce on
  // 2 emulated hosts x 2 ranks (4 ranks on 2 cores): 24.0 ms (39.3) at 8 MiB.
  r.push_back(rule(OpKind::kReduceScatter, "shm_direct", 0, kNoByteLimit));
  r.back().max_hosts = 1;
  r.push_back(rule(OpKind::kReduceScatter, "recursive_halving", 0, 512 * KiB - 1));
  r.push_back(rule(OpKind::kReduceScatter, "ring", 0, kNoByteLimit));  // also small, for n not a power of two
  // broadcast: on one host, one copy in by the root and one copy out per rank from 16 KiB
  // (2026-11-29, 4 ranks: 16.7 vs 25.5 us for binomial at 32 KiB, 7.0 vs 12.6 ms for chain at
  // 16 MiB; below 16 KiB the binomial tree's pairwise hops beat synchronising all ranks: 2.8 vs
  // 5.6 us at 8 B). Elsewhere the pipelined chain pays off once several segments are in
  // flight on >= 3 ranks.
  r.push_back(rule(OpKind::kBroadcast, "shm_direct", 16 * KiB, kNoByteLimit));
  r.back().max_hosts = 1;
  r.push_back(rule(OpKind::kBroadcast, "chain", 512 * KiB, kNoByteLimit));
  r.back().min_world = 3;
  r.push_back(rule(OpKind::kBroadcast, "binomial", 0, kNoByteLimit));
  // gather / scatter: log2(n) rounds for small buffers, one direct transfer per rank beyond
  // (measured crossover 16-256 KiB with 4 ranks), where the binomial tree forwards data
  // through intermediate ranks.
  r.push_back(rule(OpKind::kGather, "binomial", 0, 64 * KiB - 1));
  r.back().min_world = 3;
  r.push_back(rule(OpKind::kGather, "linear", 0, kNoByteLimit));
  r.push_back(rule(OpKind::kScatter, "binomial", 0, 64 * KiB - 1));
  r.back().min_world = 3;
  r.push_back(rule(OpKind::kScatter, "linear", 0, kNoByteLimit));
  r.push_back(rule(OpKind::kReduce, "binomial", 0, kNoByteLimit));
  // alltoall: on one host, every block copied into the workspace once and out once wins at
  // every size measured (2026-11-29: 4 ranks 14 vs 26 us at 512 B, 10.1 vs 19.0 ms at 16 MiB;
  // 2 ranks 4.7 vs 6.5 ms at 16 MiB); pairwise exchange elsewhere.
  r.push_back(rule(OpKind::kAlltoall, "shm_direct", 0, kNoByteLimit));
  r.back().max_hosts = 1;
  r.push_back(rule(OpKind::kAlltoall, "pairwise", 0, kNoByteLimit));
  return table;
}

// Built only on the error paths: selection runs on every collective call.
ErrorContext context_of(const CollectiveArgs& args) {
  return {.rank = args.comm.rank(), .op = std::string(op_kind_name(args.op)), .seq = args.seq};
}

const AlgorithmEntry* find_in(std::span<const AlgorithmEntry* const> candidates, std::string_view name) {
  for (const AlgorithmEntry* entry : candidates) {
    if (entry->name == name) return entry;
  }
  return nullptr;
}

bool usable(const AlgorithmEntry* entry, const CollectiveArgs& args) {
  return entry != nullptr && (entry->supports == nullptr || entry->supports(args));
}

std::string names_of(std::span<const AlgorithmEntry* const> candidates) {
  std::string names;
  for (const AlgorithmEntry* c : candidates) names += fmt::format("{}{}", names.empty() ? "" : ", ", c->name);
  return names;
}

// The first rule of `table` matching the call whose algorithm is usable, or nullptr.
const AlgorithmEntry* from_table(const TuningTable* table, const CollectiveArgs& args,
                                 std::span<const AlgorithmEntry* const> candidates) {
  if (table == nullptr) return nullptr;
  const TuningKey key = tuning_key(args);
  for (const TuningRule& rule : table->rules) {  // not matching(): no allocation on every call
    if (!rule.matches(key)) continue;
    const AlgorithmEntry* entry = find_in(candidates, rule.algorithm);
    if (usable(entry, args)) return entry;
  }
  return nullptr;
}

const AlgorithmEntry& requested_algorithm(const CollectiveArgs& args, std::span<const AlgorithmEntry* const> candidates,
                                          std::string_view requested) {
  const AlgorithmEntry* entry = find_in(candidates, requested);
  if (entry == nullptr) {
    throw InvalidArgument(context_of(args), fmt::format("unknown algorithm '{}' (available: {})", requested,
                                                        names_of(candidates)));
  }
  if (!usable(entry, args)) {
    throw InvalidArgument(context_of(args), fmt::format("algorithm '{}' does not support these arguments", requested));
  }
  return *entry;
}

// BRAID_ALGO_<OP>'s algorithm when set and usable; nullptr when unset or refusing the call
// (the next step decides); InvalidArgument when it names no algorithm of the operation.
const AlgorithmEntry* forced_algorithm(const CollectiveArgs& args, std::span<const AlgorithmEntry* const> candidates,
                                       const SelectionSources& sources) {
  if (!sources.forced) return nullptr;
  const AlgorithmEntry* entry = find_in(candidates, *sources.forced);
  if (entry == nullptr) {
    throw InvalidArgument(context_of(args), fmt::format("{}='{}' is not an algorithm of {} (available: {})",
                                                        sources.forced_by, *sources.forced, op_kind_name(args.op),
                                                        names_of(candidates)));
  }
  return usable(entry, args) ? entry : nullptr;
}

}  // namespace

std::uint64_t selection_bytes(OpKind op, std::int64_t count, std::size_t elem, int world) {
  const std::uint64_t block = static_cast<std::uint64_t>(count) * elem;
  switch (op) {
    case OpKind::kAllgather:
    case OpKind::kReduceScatter:
    case OpKind::kAlltoall:
    case OpKind::kGather:
    case OpKind::kScatter:
      return block * static_cast<std::uint64_t>(world);
    default:
      return block;
  }
}

std::uint64_t selection_bytes(const CollectiveArgs& args) {
  return selection_bytes(args.op, args.count, args.elem(), args.comm.size());
}

TuningKey tuning_key(const CollectiveArgs& args) {
  return {.op = args.op, .bytes = selection_bytes(args), .world = args.comm.size(),
          .hosts = args.comm.topology().num_hosts()};
}

const TuningTable& builtin_tuning_table() {
  static const TuningTable table = make_builtin_table();  // immutable once built
  return table;
}

const env::Variable* forcing_variable(OpKind op) {
  for (const auto& [kind, variable] : kForcingVariables) {
    if (kind == op) return variable;
  }
  return nullptr;
}

SelectionSources selection_sources(Communicator& comm, OpKind op) {
  return detail::CollectiveAccess(comm).attachment<SelectionConfig>().sources(op);
}

const AlgorithmEntry& select_algorithm(const CollectiveArgs& args, std::span<const AlgorithmEntry* const> candidates,
                                       std::string_view requested, const SelectionSources& sources) {
  if (candidates.empty()) throw InvalidArgument(context_of(args), "no algorithm implements this operation");
  if (!requested.empty()) return requested_algorithm(args, candidates, requested);
  if (const AlgorithmEntry* entry = forced_algorithm(args, candidates, sources)) return *entry;
  if (const AlgorithmEntry* entry = from_table(sources.file, args, candidates)) return *entry;
  if (const AlgorithmEntry* entry = from_table(sources.builtin, args, candidates)) return *entry;
  for (const AlgorithmEntry* entry : candidates) {
    if (usable(entry, args)) return *entry;
  }
  throw InvalidArgument(context_of(args), "no algorithm supports these arguments");
}

const AlgorithmEntry& choose_algorithm(const CollectiveArgs& args, std::string_view requested) {
  // An explicit request needs neither the environment nor the tuning file.
  const SelectionSources sources = requested.empty() ? selection_sources(args.comm, args.op) : SelectionSources{};
  return select_algorithm(args, algorithms_for(args.op), requested, sources);
}

}  // namespace braid
