// What the GradSync/ZeRO scenarios check with: a failure line naming the rank, and "this must
// throw InvalidArgument" (zero_scenarios.cc, zeropp_scenarios.cc).
#pragma once

#include <string>

#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "scenario.h"

namespace braid::testing {

// Prints "FAIL rank R: what" and returns false, so checks read `return fail(comm, ...)`.
inline bool fail(Communicator& comm, const std::string& what) {
  RANK_SAY("FAIL rank %d: %s", comm.rank(), what.c_str());
  return false;
}

template <typename F>
bool throws_invalid(Communicator& comm, const std::string& what, F&& f) {
  try {
    f();
  } catch (const InvalidArgument&) {
    return true;
  }
  return fail(comm, what + " did not throw InvalidArgument");
}

}  // namespace braid::testing
