// Turning one rank's failure into every rank's. When a check passes on some ranks and fails on
// others (a file only one rank cannot read, an output only rank 0 writes), the ranks that
// passed must not go on into the next collective and wait there for a peer that has given up:
// they agree first, and every rank throws, naming the real cause.
#pragma once

#include <exception>
#include <string>

#include "braid/comm/communicator.h"

namespace braid {

// Collective: every rank of `comm` calls it at the same point, with its own outcome (`failure`
// null when this rank succeeded). Returns when no rank failed. Otherwise a rank that failed
// rethrows its own error; every other rank throws an error of the same kind as the lowest
// failing rank's, with that rank's message ("rank 0 failed: ..."), `op` and the failing rank as
// the peer. An exception that is not a braid::Error travels as SystemError.
void rethrow_first_failure(Communicator& comm, const std::exception_ptr& failure, const std::string& op);

}  // namespace braid
