#include "braid/transport/envelope.h"

#include <utility>

#include <fmt/format.h>

namespace braid {

namespace {

std::string algorithm_text(std::uint8_t algorithm) {
  return algorithm == kNoAlgorithm ? "no algorithm" : fmt::format("algorithm #{}", algorithm);
}

std::string reduce_op_text(const std::optional<ReduceOp>& op) {
  return op ? std::string(reduce_op_name(*op)) : "no reduction";
}

std::string root_text(std::int32_t root) { return root == kNoRoot ? "no root" : fmt::format("root {}", root); }

// What differs in the call itself (algorithm, root, reduction op), said from the receiver's
// side: "the peer runs allreduce with max, this rank with sum". Empty when they agree.
std::string call_difference(const Envelope& expected, const Envelope& actual) {
  const std::string_view op = op_kind_name(expected.op);
  if (expected.algorithm != actual.algorithm) {
    // Ids number the algorithm table (algorithm_registry.cc); the same binary on every rank
    // gives them the same meaning.
    return fmt::format("the peer runs {} with {}, this rank with {} (every rank must choose the same algorithm)", op,
                       algorithm_text(actual.algorithm), algorithm_text(expected.algorithm));
  }
  if (expected.root != actual.root) {
    return fmt::format("the peer runs {} with {}, this rank with {}", op, root_text(actual.root),
                       root_text(expected.root));
  }
  if (expected.reduce_op != actual.reduce_op) {
    return fmt::format("the peer runs {} with {}, this rank with {}", op, reduce_op_text(actual.reduce_op),
                       reduce_op_text(expected.reduce_op));
  }
  return {};
}

}  // namespace

std::string describe(const Envelope& e) {
  std::string seq = e.seq == kAnySeq ? "" : fmt::format(" #{}", e.seq);
  std::string text = fmt::format("{}{}, {} bytes of {}", op_kind_name(e.op), seq, e.bytes, dtype_name(e.dtype));
  if (e.reduce_op) text += fmt::format(", {}", reduce_op_name(*e.reduce_op));
  if (e.root != kNoRoot) text += fmt::format(", root {}", e.root);
  if (e.algorithm != kNoAlgorithm) text += ", " + algorithm_text(e.algorithm);
  return text;
}

// The most telling difference first: another operation explains everything else; another
// algorithm, root or reduction op explains a size difference; a dtype explains one too.
std::string envelope_difference(const Envelope& expected, const Envelope& actual) {
  bool seq_differs = expected.seq != kAnySeq && actual.seq != kAnySeq && expected.seq != actual.seq;
  std::string what;
  if (expected.op != actual.op || seq_differs) {
    what = "ranks called different operations (the ordering contract: every rank issues the same collectives in the same order)";
  } else if (std::string call = call_difference(expected, actual); !call.empty()) {
    what = std::move(call);
  } else if (expected.dtype != actual.dtype) {
    what = "the sender and the receiver disagree on the element type";
  } else if (expected.bytes != actual.bytes) {
    what = "the sender and the receiver disagree on the message size";
  } else {
    return {};
  }
  return fmt::format("{}: expected {}, received {}", what, describe(expected), describe(actual));
}

}  // namespace braid
