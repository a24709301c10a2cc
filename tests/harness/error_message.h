// What a call that must be refused says: the message of the braid::Error it throws, or
// "no error". Header-only, for GoogleTest files that check the wording of their layer's errors.
#pragma once

#include <string>

#include "braid/base/error.h"

namespace braid::testing {

template <class ErrorKind = InvalidArgument>
std::string error_message_of(auto&& call) {
  try {
    call();
  } catch (const ErrorKind& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace braid::testing
