#include "braid/collectives/failure_agreement.h"

#include <cstdint>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"

namespace braid {
namespace {

struct Described {
  ErrorKind kind = ErrorKind::kSystem;
  std::string detail;
};

Described describe(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const Error& e) {
    return {e.kind(), e.detail()};
  } catch (const std::exception& e) {
    return {ErrorKind::kSystem, e.what()};
  } catch (...) {
    return {ErrorKind::kSystem, "an unknown exception"};
  }
}

}  // namespace

void rethrow_first_failure(Communicator& comm, const std::exception_ptr& failure, const std::string& op) {
  std::int32_t first = failure ? comm.rank() : comm.size();
  allreduce(comm, &first, &first, 1, DType::kI32, ReduceOp::kMin);
  if (first == comm.size()) return;
  Described cause = first == comm.rank() ? describe(failure) : Described{};
  // The kind and the message's length travel together, then the message.
  std::int64_t header[2] = {static_cast<std::int64_t>(cause.kind), static_cast<std::int64_t>(cause.detail.size())};
  broadcast(comm, header, 2, DType::kI64, first);
  cause.detail.resize(static_cast<std::size_t>(header[1]));
  broadcast(comm, cause.detail.data(), header[1], DType::kU8, first);
  if (failure) std::rethrow_exception(failure);
  throw_error(static_cast<ErrorKind>(header[0]), {.rank = comm.rank(), .peer = first, .op = op},
              fmt::format("rank {} failed: {}", first, cause.detail));
}

}  // namespace braid
