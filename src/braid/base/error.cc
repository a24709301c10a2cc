#include "braid/base/error.h"

#include <cstring>

#include <fmt/format.h>

namespace braid {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "InvalidArgument";
    case ErrorKind::kTimeout: return "Timeout";
    case ErrorKind::kPeerLost: return "PeerLost";
    case ErrorKind::kMismatch: return "Mismatch";
    case ErrorKind::kCorrupt: return "Corrupt";
    case ErrorKind::kSystem: return "SystemError";
  }
  return "Error";
}

std::string ErrorContext::describe() const {
  std::string out;
  auto add = [&out](const std::string& part) {
    if (!out.empty()) out += ", ";
    out += part;
  };
  if (rank >= 0) add(fmt::format("rank {}", rank));
  if (peer >= 0) add(fmt::format("peer {}", peer));
  if (!op.empty()) add(seq >= 0 ? fmt::format("op {} #{}", op, seq) : fmt::format("op {}", op));
  return out;
}

static std::string full_message(ErrorKind kind, const ErrorContext& context, const std::string& detail) {
  std::string where = context.describe();
  if (where.empty()) return fmt::format("braid::{}: {}", error_kind_name(kind), detail);
  return fmt::format("braid::{} [{}]: {}", error_kind_name(kind), where, detail);
}

Error::Error(ErrorKind kind, ErrorContext context, const std::string& detail)
    : std::runtime_error(full_message(kind, context, detail)),
      kind_(kind),
      context_(std::move(context)),
      detail_(detail) {}

void throw_error(ErrorKind kind, ErrorContext context, const std::string& detail) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: throw InvalidArgument(std::move(context), detail);
    case ErrorKind::kTimeout: throw Timeout(std::move(context), detail);
    case ErrorKind::kPeerLost: throw PeerLost(std::move(context), detail);
    case ErrorKind::kMismatch: throw Mismatch(std::move(context), detail);
    case ErrorKind::kCorrupt: throw Corrupt(std::move(context), detail);
    case ErrorKind::kSystem: throw SystemError(std::move(context), detail);
  }
  throw SystemError(std::move(context), detail);
}

void throw_system_error(ErrorContext context, const std::string& what, int errnum) {
  throw SystemError(std::move(context), fmt::format("{}: {}", what, std::strerror(errnum)));
}

}  // namespace braid
