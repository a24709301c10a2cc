#include "braid/collectives/collective_checks.h"

#include <limits>
#include <string>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::collective_checks {

namespace {

ErrorContext context(const Communicator& comm, OpKind op) {
  return {.rank = comm.rank(), .op = std::string(op_kind_name(op))};
}

}  // namespace

void check_common(const Communicator& comm, OpKind op, const void* send, const void* recv, std::int64_t count,
                  DType dtype) {
  if (count < 0) throw InvalidArgument(context(comm, op), fmt::format("count must be >= 0, got {}", count));
  if (count > 0 && (send == nullptr || recv == nullptr)) {
    throw InvalidArgument(context(comm, op), "null buffer with a non-zero count");
  }
  if (!is_valid_dtype(static_cast<std::uint8_t>(dtype))) {
    throw InvalidArgument(context(comm, op), fmt::format("invalid dtype value {}", static_cast<int>(dtype)));
  }
}

void check_reduce_op(const Communicator& comm, OpKind op, ReduceOp reduce_op) {
  if (static_cast<std::uint8_t>(reduce_op) > static_cast<std::uint8_t>(ReduceOp::kProd)) {
    throw InvalidArgument(context(comm, op), fmt::format("invalid reduction op value {}", static_cast<int>(reduce_op)));
  }
}

void check_total(const Communicator& comm, OpKind op, std::int64_t count, DType dtype) {
  const auto limit = std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(dtype_size(dtype));
  if (count > limit / comm.size()) {
    throw InvalidArgument(context(comm, op), fmt::format("count {} times {} ranks overflows", count, comm.size()));
  }
}

void check_root(const Communicator& comm, OpKind op, int root) {
  if (root < 0 || root >= comm.size()) {
    throw InvalidArgument(context(comm, op), fmt::format("root {} out of range [0, {})", root, comm.size()));
  }
}

}  // namespace braid::collective_checks
