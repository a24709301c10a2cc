// The argument checks a collective can make alone, before any message: the pieces each
// operation's rule is made of (checked(), collective_ops.h, applies them as the operation's
// row says). Checks that need every rank's view (equal counts, dtypes, roots) happen on the
// wire instead: each message's envelope carries them and the receiver compares.
#pragma once

#include <cstdint>

#include "braid/base/dtype.h"
#include "braid/base/reduce_op.h"
#include "braid/comm/communicator.h"
#include "braid/transport/envelope.h"

namespace braid::collective_checks {

// count >= 0, non-null buffers when count > 0, a valid dtype.
void check_common(const Communicator& comm, OpKind op, const void* send, const void* recv, std::int64_t count,
                  DType dtype);
// A valid reduction op.
void check_reduce_op(const Communicator& comm, OpKind op, ReduceOp reduce_op);
// The element count of the whole buffer (count per rank times size) does not overflow.
void check_total(const Communicator& comm, OpKind op, std::int64_t count, DType dtype);
// root in [0, size).
void check_root(const Communicator& comm, OpKind op, int root);

}  // namespace braid::collective_checks
