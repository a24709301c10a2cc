// The braid::Error hierarchy. Every failure braid reports is one of these exceptions, and its
// message names where it happened: the rank, the peer, the operation and its sequence number
// (any of them may be absent when it does not apply, e.g. a parse error has no peer).
//
// Kinds (DESIGN.md, "Errors are exceptions"):
//   InvalidArgument  the caller passed something braid cannot act on
//   Timeout          a blocking wait ran past its deadline (BRAID_TIMEOUT, default 300 s)
//   PeerLost         a peer process died or closed its connection unexpectedly
//   Mismatch         ranks disagree on what they are doing (sizes, op kinds, sequence)
//   Corrupt          bytes failed a check (magic, version, checksum, bounds)
//   SystemError      the operating system refused something (errno is in the message)
//
// After a Communicator has thrown anything but InvalidArgument it is poisoned: every later
// call throws the first error again (as NCCL aborts a communicator), because the byte streams
// to its peers are no longer known to be in step.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace braid {

enum class ErrorKind : std::uint8_t {
  kInvalidArgument = 1,
  kTimeout = 2,
  kPeerLost = 3,
  kMismatch = 4,
  kCorrupt = 5,
  kSystem = 6,
};

const char* error_kind_name(ErrorKind kind);

// Where an error happened. Fields left at their defaults are omitted from the message.
struct ErrorContext {
  int rank = -1;
  int peer = -1;
  std::string op;      // "send", "recv", "barrier", "store.get", ...
  std::int64_t seq = -1;

  std::string describe() const;  // "rank 1, peer 3, op recv #17"
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, ErrorContext context, const std::string& detail);

  ErrorKind kind() const { return kind_; }
  const ErrorContext& context() const { return context_; }
  // The message without the context prefix.
  const std::string& detail() const { return detail_; }

 private:
  ErrorKind kind_;
  ErrorContext context_;
  std::string detail_;
};

class InvalidArgument : public Error {
 public:
  InvalidArgument(ErrorContext c, const std::string& d) : Error(ErrorKind::kInvalidArgument, std::move(c), d) {}
};
class Timeout : public Error {
 public:
  Timeout(ErrorContext c, const std::string& d) : Error(ErrorKind::kTimeout, std::move(c), d) {}
};
class PeerLost : public Error {
 public:
  PeerLost(ErrorContext c, const std::string& d) : Error(ErrorKind::kPeerLost, std::move(c), d) {}
};
class Mismatch : public Error {
 public:
  Mismatch(ErrorContext c, const std::string& d) : Error(ErrorKind::kMismatch, std::move(c), d) {}
};
class Corrupt : public Error {
 public:
  Corrupt(ErrorContext c, const std::string& d) : Error(ErrorKind::kCorrupt, std::move(c), d) {}
};
class SystemError : public Error {
 public:
  SystemError(ErrorContext c, const std::string& d) : Error(ErrorKind::kSystem, std::move(c), d) {}
};

// Throws the exception class that corresponds to `kind`.
[[noreturn]] void throw_error(ErrorKind kind, ErrorContext context, const std::string& detail);

// Throws SystemError with "<what>: <strerror(errnum)>".
[[noreturn]] void throw_system_error(ErrorContext context, const std::string& what, int errnum);

}  // namespace braid
