// Collective operations on a Communicator. The API is type-erased (a dtype tag and byte
// pointers) so each algorithm is compiled once rather than once per element type.
//
// In-place use: pass the same pointer as `send` and `recv`.
// Every rank must call the same collectives in the same order (communicator.h).
#pragma once

#include <cstdint>

#include "braid/base/dtype.h"
#include "braid/base/reduce_op.h"
#include "braid/comm/communicator.h"

namespace braid {

// recv = op over all ranks of send (count elements each). Ring algorithm: reduce-scatter then
// allgather, 2(n-1)/n of the data sent per rank. Every rank ends with identical bytes: each
// block is reduced by one owner in one fixed order and then copied to everyone.
void allreduce(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op);

}  // namespace braid
