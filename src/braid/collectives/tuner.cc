#include "braid/collectives/tuner.h"

#include <array>
#include <atomic>
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
constexpr std::uint64_t MiB = 1024 * KiB;

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

  // The tuner's decision for a call without a request, remembered by (op, selection bytes):
  // the decision depends on nothing else for one communicator (tuner.h), and a lookup here is
  // one atomic load where selection scans the tables. Lock-free: the communicator's thread and
  // its background collective thread may both fill it; a slot holds one packed word, so a
  // reader sees a whole decision or another key's.
  const AlgorithmEntry* decided(OpKind op, std::uint64_t bytes) const {
    if (bytes >= kUncachedBytes) return nullptr;
    const std::uint64_t word = decisions_[slot_of(op, bytes)].load(std::memory_order_relaxed);
    if ((word >> 8) != key_of(op, bytes)) return nullptr;
    return algorithm_by_id(static_cast<std::uint8_t>(word & 0xff));
  }
  void remember(OpKind op, std::uint64_t bytes, const AlgorithmEntry& entry) const {
    const std::uint8_t id = algorithm_id(entry);
    if (bytes >= kUncachedBytes || id == kNoAlgorithm) return;
    decisions_[slot_of(op, bytes)].store(key_of(op, bytes) << 8 | id, std::memory_order_relaxed);
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

  // word = bytes (40 bits) | op (8) | algorithm id (8): sizes from 1 TiB up are not cached.
  static constexpr std::uint64_t kUncachedBytes = std::uint64_t{1} << 40;
  static constexpr std::size_t kDecisionSlots = 64;
  static std::uint64_t key_of(OpKind op, std::uint64_t bytes) { return bytes << 8 | static_cast<std::uint8_t>(op); }
  static std::size_t slot_of(OpKind op, std::uint64_t bytes) {
    return static_cast<std::size_t>((key_of(op, bytes) * 0x9E3779B97F4A7C15ull) >> 58);  // top 6 bits
  }
  mutable std::array<std::atomic<std::uint64_t>, kDecisionSlots> decisions_{};  // 0: empty (id 0 is none)
};

// The built-in rules, in order: the first matching rule whose algorithm is usable wins
// (tuner.h). Bounds are inclusive; one left out is open. Why each rule is there, with the
// measurements behind its bounds: docs/collectives.md, "The built-in table" (rows numbered in
// this order).
TuningTable make_builtin_table() {
  using enum OpKind;
  return {{
      {.op = kAllreduce,     .algorithm = "host_striped",       .min_bytes = 512 * KiB, .min_hosts = 2},
      {.op = kAllreduce,     .algorithm = "hierarchical",       .min_hosts = 2},
      {.op = kAllreduce,     .algorithm = "single_copy",        .min_bytes = 16 * KiB, .max_bytes = 64 * MiB - 1, .max_world = 2, .max_hosts = 1},
      {.op = kAllreduce,     .algorithm = "single_copy",        .min_bytes = 128 * KiB, .max_bytes = 32 * MiB - 1, .max_hosts = 1},
      {.op = kAllreduce,     .algorithm = "one_shot",           .max_bytes = 256 * KiB - 1, .max_world = 2, .max_hosts = 1},
      {.op = kAllreduce,     .algorithm = "one_shot",           .max_bytes = 16 * KiB - 1, .max_hosts = 1},
      {.op = kAllreduce,     .algorithm = "two_shot",           .max_bytes = 64 * KiB - 1, .min_world = 3, .max_hosts = 1},
      {.op = kAllreduce,     .algorithm = "shm_direct",         .max_hosts = 1},
      {.op = kAllreduce,     .algorithm = "recursive_doubling", .max_bytes = 64 * KiB - 1},
      {.op = kAllreduce,     .algorithm = "ring",               .min_bytes = 64 * KiB},
      {.op = kAllgather,     .algorithm = "shm_direct",         .min_bytes = 4 * KiB, .max_hosts = 1},
      {.op = kAllgather,     .algorithm = "recursive_doubling", .max_bytes = 32 * KiB - 1},
      {.op = kAllgather,     .algorithm = "bruck",              .max_bytes = 32 * KiB - 1},
      {.op = kAllgather,     .algorithm = "ring",               .min_bytes = 32 * KiB},
      {.op = kReduceScatter, .algorithm = "shm_direct",         .max_hosts = 1},
      {.op = kReduceScatter, .algorithm = "recursive_halving",  .max_bytes = 512 * KiB - 1},
      {.op = kReduceScatter, .algorithm = "ring"},
      {.op = kBroadcast,     .algorithm = "shm_direct",         .min_bytes = 16 * KiB, .max_hosts = 1},
      {.op = kBroadcast,     .algorithm = "chain",              .min_bytes = 512 * KiB, .min_world = 3},
      {.op = kBroadcast,     .algorithm = "binomial"},
      {.op = kGather,        .algorithm = "binomial",           .max_bytes = 64 * KiB - 1, .min_world = 3},
      {.op = kGather,        .algorithm = "linear"},
      {.op = kScatter,       .algorithm = "binomial",           .max_bytes = 64 * KiB - 1, .min_world = 3},
      {.op = kScatter,       .algorithm = "linear"},
      {.op = kReduce,        .algorithm = "binomial"},
      {.op = kAlltoall,      .algorithm = "shm_direct",         .max_hosts = 1},
      {.op = kAlltoall,      .algorithm = "scattered",          .max_world = 4, .min_hosts = 2},
      {.op = kAlltoall,      .algorithm = "pairwise"},
      {.op = kAlltoallv,     .algorithm = "hierarchical",       .min_hosts = 2},
      {.op = kAlltoallv,     .algorithm = "shm_direct",         .max_hosts = 1},
      {.op = kAlltoallv,     .algorithm = "pairwise"},
  }};
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
  if (!requested.empty()) return select_algorithm(args, algorithms_for(args.op), requested, SelectionSources{});
  const SelectionConfig& config = detail::CollectiveAccess(args.comm).attachment<SelectionConfig>();
  const std::uint64_t bytes = selection_bytes(args);
  if (const AlgorithmEntry* known = config.decided(args.op, bytes)) return *known;
  const AlgorithmEntry& chosen = select_algorithm(args, algorithms_for(args.op), requested, config.sources(args.op));
  config.remember(args.op, bytes, chosen);
  return chosen;
}

}  // namespace braid
