// What a message is about. Every message carries its envelope in its wire header, and every
// receive states the envelope it expects: a difference is how braid turns a broken ordering
// contract (ranks calling different operations, sizes or types) into braid::Mismatch
// instead of a hang or silently wrong numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "braid/base/dtype.h"
#include "braid/base/op_kind.h"  // OpKind: the operation a message belongs to
#include "braid/base/reduce_op.h"

namespace braid {

// Messages of user point-to-point calls and of collectives travel in separate matching spaces,
// so a user tag can never be confused with a collective's internal traffic.
enum class Channel : std::uint8_t { kUser = 0, kCollective = 1 };

// Where a message is delivered: its communicator, channel and tag. Receives match the oldest
// message from the same peer with the same key (MPI's non-overtaking rule).
struct MatchKey {
  std::uint64_t comm_id = 0;
  Channel channel = Channel::kUser;
  std::uint32_t tag = 0;

  friend bool operator==(const MatchKey&, const MatchKey&) = default;
};

// Sequence numbers of user point-to-point messages are informational (they appear in error
// messages) and are not compared, because tags legitimately reorder them.
inline constexpr std::int64_t kAnySeq = -1;
inline constexpr std::int32_t kNoRoot = -1;
inline constexpr std::uint8_t kNoAlgorithm = 0;

// The last three fields describe the call a collective message belongs to. Every rank of one
// call must agree on them, and a rank that disagrees may still exchange messages of the right
// size with its peers (sum vs max, root 0 vs root 2 where both trees share an edge), so they
// travel in every message too: the values are compared, never trusted for anything else.
struct Envelope {
  OpKind op = OpKind::kSendRecv;
  std::int64_t seq = kAnySeq;
  DType dtype = DType::kU8;
  std::uint64_t bytes = 0;
  std::optional<ReduceOp> reduce_op;      // reducing operations only
  std::int32_t root = kNoRoot;            // rooted operations only
  std::uint8_t algorithm = kNoAlgorithm;  // collectives: the algorithm's registry id (algorithm_registry.h)
};

// "allreduce #12, 4096 bytes of f32, sum, algorithm #1"
std::string describe(const Envelope& envelope);
// Empty when `actual` satisfies `expected`, else a sentence saying what differs.
std::string envelope_difference(const Envelope& expected, const Envelope& actual);

}  // namespace braid
