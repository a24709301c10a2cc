// The operations braid performs between ranks (point-to-point, barrier, split and the
// collectives): the one definition every layer shares. The wire envelope carries them
// (transport/envelope.h), the tuner keys its table by them, the planner's cost model prices
// them (plan/cost_model.h) and the tools take them by name (braid-bench, braid-plan).
//
// Names (op_kind_name prints the first; parse_op_kind accepts all, docs/architecture.md):
//   send/recv (alias sendrecv), barrier, split, allreduce, reduce_scatter (alias
//   reduce-scatter), allgather, broadcast, reduce, alltoall, alltoallv, gather, scatter
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace braid {

// Values are part of the wire format (every message header carries one): never renumber.
enum class OpKind : std::uint8_t {
  kSendRecv = 1,  // user point-to-point
  kBarrier = 2,
  kSplit = 3,
  kAllreduce = 4,
  kReduceScatter = 5,
  kAllgather = 6,
  kBroadcast = 7,
  kReduce = 8,
  kAlltoall = 9,
  kAlltoallv = 10,
  kGather = 11,
  kScatter = 12,
};

// Every kind, in wire order.
std::span<const OpKind> all_op_kinds();
// The canonical name ("allreduce", "send/recv"); "unknown" for a value that is no OpKind.
std::string_view op_kind_name(OpKind op);
// The kind `name` spells (a canonical name or an alias), if any.
std::optional<OpKind> find_op_kind(std::string_view name);
// The kind `name` spells, provided it is one of `accepted` (a tool's own subset: the
// collectives braid-bench measures, the ones the cost model prices). Otherwise throws
// InvalidArgument "<field>: unknown operation '<name>' (accepted: ...)" listing `accepted`.
OpKind parse_op_kind(std::string_view name, std::string_view field, std::span<const OpKind> accepted = all_op_kinds());

// The other names `op` is accepted by ("reduce-scatter" for reduce_scatter), never printed.
std::vector<std::string_view> op_kind_aliases(OpKind op);
// "allreduce, reduce_scatter (alias reduce-scatter), ...": the names of `kinds`, as
// parse_op_kind's refusal lists them.
std::string op_kind_names(std::span<const OpKind> kinds);

// Whether a raw byte off the wire names an OpKind.
bool is_valid_op_kind(std::uint8_t raw);
// Operations whose calls name a reduction op (allreduce, reduce_scatter, reduce) and a root
// (broadcast, reduce, gather, scatter): only their envelopes carry those fields.
bool is_reducing(OpKind op);
bool is_rooted(OpKind op);

}  // namespace braid
