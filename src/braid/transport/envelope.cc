#include "braid/transport/envelope.h"

#include <fmt/format.h>

namespace braid {

std::string_view op_kind_name(OpKind op) {
  switch (op) {
    case OpKind::kSendRecv: return "send/recv";
    case OpKind::kBarrier: return "barrier";
    case OpKind::kSplit: return "split";
    case OpKind::kAllreduce: return "allreduce";
    case OpKind::kReduceScatter: return "reduce_scatter";
    case OpKind::kAllgather: return "allgather";
    case OpKind::kBroadcast: return "broadcast";
    case OpKind::kReduce: return "reduce";
    case OpKind::kAlltoall: return "alltoall";
    case OpKind::kAlltoallv: return "alltoallv";
    case OpKind::kGather: return "gather";
    case OpKind::kScatter: return "scatter";
  }
  return "unknown";
}

bool is_valid_op_kind(std::uint8_t raw) { return raw >= 1 && raw <= 12; }

std::string describe(const Envelope& e) {
  std::string seq = e.seq == kAnySeq ? "" : fmt::format(" #{}", e.seq);
  return fmt::format("{}{}, {} bytes of {}", op_kind_name(e.op), seq, e.bytes, dtype_name(e.dtype));
}

std::string envelope_difference(const Envelope& expected, const Envelope& actual) {
  bool seq_differs = expected.seq != kAnySeq && actual.seq != kAnySeq && expected.seq != actual.seq;
  if (expected.op == actual.op && !seq_differs && expected.dtype == actual.dtype && expected.bytes == actual.bytes) {
    return {};
  }
  std::string what;
  if (expected.op != actual.op || seq_differs) {
    what = "ranks called different operations (the ordering contract: every rank issues the same collectives in the same order)";
  } else if (expected.bytes != actual.bytes) {
    what = "the sender and the receiver disagree on the message size";
  } else {
    what = "the sender and the receiver disagree on the element type";
  }
  return fmt::format("{}: expected {}, received {}", what, describe(expected), describe(actual));
}

}  // namespace braid
