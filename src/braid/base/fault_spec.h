// A fault to inject (BRAID_FAULT, docs/reliability.md#fault-injection): which rank, at which of
// its calls of which operation, does what. Pure data and its parser; fault_injector.h counts the
// calls and acts, transport/fabric.h arms the faults that need a connection (flip, close).
//
//   rank=R,op=OP,nth=N,kind=KIND      KIND: kill | freeze | stall:T | flip | close
//
// OP is a collective's name (op_kind.h: allreduce, reduce_scatter, allgather, broadcast, reduce,
// alltoall, alltoallv, gather, scatter) or `send` (point-to-point sends). nth counts that rank's
// calls of OP from 1 (default 1); a compressed allreduce counts as an allreduce, and collectives a
// collective runs inside itself (hierarchical's sub-communicator calls) do not count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "braid/base/op_kind.h"

namespace braid {

enum class FaultKind : std::uint8_t {
  kKill,    // SIGKILL to itself: the process is gone (pidfd / socket reset on the peers)
  kFreeze,  // SIGSTOP to itself: alive but silent until someone kills it
  kStall,   // sleep stall_seconds, then carry on
  kFlip,    // flip a bit of the next frame it sends (its header's CRC32C then fails)
  kClose,   // shut down the TCP connection of the next frame it sends to a TCP peer
};

struct FaultSpec {
  int rank = -1;
  OpKind op = OpKind::kAllreduce;  // kSendRecv: point-to-point sends
  std::int64_t nth = 1;            // >= 1
  FaultKind kind = FaultKind::kKill;
  double stall_seconds = 0;        // kStall only, > 0

  bool operator==(const FaultSpec&) const = default;
};

// Parses a specification; throws InvalidArgument naming BRAID_FAULT, the offending field and
// what is accepted (an unknown or repeated key, a missing rank/op/kind, nth < 1, a stall
// without a positive duration, a kind or operation braid does not know).
FaultSpec parse_fault_spec(std::string_view text);

// "kill", "freeze", "stall:2.5", "flip", "close".
std::string fault_kind_name(const FaultSpec& spec);
// "rank=1,op=allreduce,nth=3,kind=stall:2.5": parse_fault_spec(describe(s)) == s.
std::string describe(const FaultSpec& spec);

}  // namespace braid
