// Inputs whose reductions are exact in every dtype (small integers), so -c can demand the
// exact expected bytes from every algorithm rather than a tolerance.
#pragma once

#include <cstddef>
#include <cstdint>

#include "braid/base/dtype.h"
#include "braid/base/reduce_op.h"

namespace braid::bench {

// The value rank `rank` contributes at element `index`.
double input_value(ReduceOp op, int rank, std::int64_t index);
// The exact result at element `index` over `ranks` ranks.
double expected_value(ReduceOp op, int ranks, std::int64_t index, DType dtype);

}  // namespace braid::bench
