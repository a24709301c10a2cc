// What every collective algorithm receives: the arguments of the public call, checked once
// (checked(), collective_ops.h), plus the collective's sequence number. Algorithms are
// plain functions of this struct (algorithms.h), so each is compiled once, whatever the dtype.
#pragma once

#include <cstddef>
#include <cstdint>

#include "braid/base/dtype.h"
#include "braid/base/reduce_op.h"
#include "braid/comm/communicator.h"
#include "braid/transport/envelope.h"

namespace braid {

struct AlltoallvLayout;  // alltoallv_args.h

struct CollectiveArgs {
  Communicator& comm;
  OpKind op;
  std::int64_t seq;         // equal on every rank (detail::CollectiveAccess::begin_collective); -1 until numbered
  const std::byte* send;    // may equal recv: in place (see collectives.h per operation)
  std::byte* recv;
  std::int64_t count;       // elements; what it counts is stated per operation in collectives.h
  DType dtype;
  ReduceOp reduce_op = ReduceOp::kSum;
  int root = 0;
  // The running algorithm's registry id (algorithm_id, algorithm_registry.h), set by
  // run_collective once it has chosen: every message carries it, so ranks running different algorithms
  // of one call raise Mismatch.
  std::uint8_t algorithm = kNoAlgorithm;
  // alltoallv only (count is 0 there): the per-peer counts and displacements. A pointer, so the
  // other collectives' arguments do not grow by alltoallv's four arrays.
  const AlltoallvLayout* layout = nullptr;

  std::size_t elem() const { return dtype_size(dtype); }
  std::size_t bytes(std::int64_t elements) const { return static_cast<std::size_t>(elements) * elem(); }
  // The envelope of one message of `elements` elements of this collective. The reduction op
  // and root go in only where the operation has them (an allreduce composed of a reduce to
  // rank 0 still has no root to agree on).
  Envelope envelope(std::int64_t elements) const {
    Envelope e{.op = op, .seq = seq, .dtype = dtype, .bytes = static_cast<std::uint64_t>(bytes(elements)),
               .algorithm = algorithm};
    if (is_reducing(op)) e.reduce_op = reduce_op;
    if (is_rooted(op)) e.root = root;
    return e;
  }
};

}  // namespace braid
