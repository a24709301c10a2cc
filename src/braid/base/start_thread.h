// std::thread, with the std::system_error the standard library throws when the system refuses
// a thread (EAGAIN: out of threads or memory) turned into braid::SystemError, so that no
// exception outside braid::Error leaves the library (docs/errors.md).
//
//   worker_ = start_thread({.rank = rank, .op = "collective queue"}, [this] { run_worker(); });
#pragma once

#include <system_error>
#include <thread>
#include <utility>

#include "braid/base/error.h"

namespace braid {

template <class Function>
std::thread start_thread(const ErrorContext& context, Function&& function) {
  try {
    return std::thread(std::forward<Function>(function));
  } catch (const std::system_error& e) {
    throw_system_error(context, "cannot start a thread", e.code().value());
  }
}

}  // namespace braid
