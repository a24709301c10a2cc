#include "braid/base/op_kind.h"

#include <algorithm>
#include <array>

#include "braid/base/vocabulary.h"

namespace braid {

namespace {

constexpr std::array kOpKinds{OpKind::kSendRecv,  OpKind::kBarrier,   OpKind::kSplit,     OpKind::kAllreduce,
                              OpKind::kReduceScatter, OpKind::kAllgather, OpKind::kBroadcast, OpKind::kReduce,
                              OpKind::kAlltoall,  OpKind::kAlltoallv, OpKind::kGather,    OpKind::kScatter};

// "send/recv" is what Mismatch messages have always said; braid-bench's subcommand (and
// braid-plan's --op) have always been "sendrecv".
constexpr std::array kSpellings{
    spelling(OpKind::kSendRecv, "send/recv"),         spelling(OpKind::kSendRecv, "sendrecv"),
    spelling(OpKind::kBarrier, "barrier"),            spelling(OpKind::kSplit, "split"),
    spelling(OpKind::kAllreduce, "allreduce"),        spelling(OpKind::kReduceScatter, "reduce_scatter"),
    spelling(OpKind::kReduceScatter, "reduce-scatter"), spelling(OpKind::kAllgather, "allgather"),
    spelling(OpKind::kBroadcast, "broadcast"),        spelling(OpKind::kReduce, "reduce"),
    spelling(OpKind::kAlltoall, "alltoall"),          spelling(OpKind::kAlltoallv, "alltoallv"),
    spelling(OpKind::kGather, "gather"),              spelling(OpKind::kScatter, "scatter"),
};

constexpr Vocabulary kVocabulary{"operation", kSpellings};

Vocabulary::Accepts one_of(std::span<const OpKind> kinds) {
  return [kinds](int value) { return std::find(kinds.begin(), kinds.end(), static_cast<OpKind>(value)) != kinds.end(); };
}

}  // namespace

std::span<const OpKind> all_op_kinds() { return kOpKinds; }

std::string_view op_kind_name(OpKind op) { return kVocabulary.name(static_cast<int>(op)); }

std::optional<OpKind> find_op_kind(std::string_view name) {
  std::optional<int> value = kVocabulary.find(name);
  if (!value) return std::nullopt;
  return static_cast<OpKind>(*value);
}

OpKind parse_op_kind(std::string_view name, std::string_view field, std::span<const OpKind> accepted) {
  return static_cast<OpKind>(kVocabulary.parse(name, field, one_of(accepted)));
}

std::vector<std::string_view> op_kind_aliases(OpKind op) {
  std::vector<std::string_view> aliases = kVocabulary.spellings(one_of(std::span(&op, 1)));
  aliases.erase(aliases.begin());  // the canonical name
  return aliases;
}

std::string op_kind_names(std::span<const OpKind> kinds) { return kVocabulary.accepted_names(one_of(kinds)); }

bool is_valid_op_kind(std::uint8_t raw) {
  return raw >= static_cast<std::uint8_t>(kOpKinds.front()) && raw <= static_cast<std::uint8_t>(kOpKinds.back());
}

bool is_reducing(OpKind op) {
  return op == OpKind::kAllreduce || op == OpKind::kReduceScatter || op == OpKind::kReduce;
}

bool is_rooted(OpKind op) {
  return op == OpKind::kBroadcast || op == OpKind::kReduce || op == OpKind::kGather || op == OpKind::kScatter;
}

}  // namespace braid
