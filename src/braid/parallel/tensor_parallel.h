// Tensor- and sequence-parallel communication on flat buffers (Megatron-LM's mappings, torch-free):
// the building blocks of column- and row-parallel layers, vocabulary-parallel embeddings and
// cross-entropy, and sequence parallelism (torch/tensor_parallel_layers.h puts autograd on them).
//
// Megatron's two conjugate pairs, each a forward and the backward of the other:
//
//   copy to the TP region      forward: identity             backward: allreduce (sum)
//   reduce from the TP region  forward: allreduce (sum)      backward: identity
//
// so a column-parallel layer (input replicated, output split) is "copy" then a local matmul, and
// a row-parallel layer (input split, output replicated) is a local matmul then "reduce". The
// identity halves need no call; the allreduce halves are `tp_allreduce` below.
//
// Splitting and gathering along one dimension. A tensor of shape [..., n, ...] split along the
// dimension of n is described by a `SplitShape` {outer, local, inner}: `outer` = the product of
// the sizes before that dimension, `local` = this rank's share of it (n / tp), `inner` = the
// product after it. Along the last dimension inner is 1; along the sequence dimension of a
// [batch, seq, hidden] activation outer = batch and inner = hidden; along the first dimension
// outer is 1 and the gather is a plain allgather (no rearrangement).
//
//   gather_along       [outer, local, inner] on each rank -> [outer, tp * local, inner] on all
//                      (rank r's piece at local offset r * local): the forward of "gather the
//                      output" and of SP's allgather before a column-parallel layer
//   reduce_scatter_along  [outer, tp * local, inner] on each rank -> the sum over ranks of
//                      piece r on rank r: SP's reduce-scatter after a row-parallel layer, and the
//                      backward of gather_along
//   split_along        the local piece of a full tensor (no communication): the backward of
//                      gather_along when the full gradient is replicated
//
// Every rank of the TP group must call the same primitives in the same order with the same
// shape and dtype (the collectives' ordering contract, which braid checks: a disagreement is a
// braid::Mismatch on the ranks involved; a rank whose piece is empty, local 0, moves nothing
// and meets it at its next collective). Bad arguments (negative sizes, null buffers) are
// InvalidArgument naming the rank and the operation. The `i` forms return a Work at once; the
// buffers must stay untouched until it is waited for. A gather_along/reduce_scatter_along
// rearrangement (outer > 1) runs on the communicator's background thread as part of the
// operation: the result is in place once the Work has completed, and dropping every handle
// cancels nothing (the staging buffer lives until the collective is done with it).
//
// Thread-safety: as the collectives (one thread at a time per communicator).
#pragma once

#include <cstdint>

#include "braid/base/dtype.h"
#include "braid/comm/communicator.h"
#include "braid/comm/work.h"

namespace braid::parallel {

struct SplitShape {
  std::int64_t outer = 1;  // product of the sizes before the split dimension
  std::int64_t local = 0;  // this rank's share of the split dimension
  std::int64_t inner = 1;  // product of the sizes after it
  std::int64_t shard_elements() const { return outer * local * inner; }
};

// In-place sum over the TP group: the forward of "reduce from" and the backward of "copy to".
void tp_allreduce(Communicator& tp, void* data, std::int64_t count, DType dtype);
Work tp_iallreduce(Communicator& tp, void* data, std::int64_t count, DType dtype);

// shard: shape.shard_elements(); full: tp.size() times that. See the file comment.
void gather_along(Communicator& tp, const void* shard, void* full, SplitShape shape, DType dtype);
Work igather_along(Communicator& tp, const void* shard, void* full, SplitShape shape, DType dtype);

void reduce_scatter_along(Communicator& tp, const void* full, void* shard, SplitShape shape, DType dtype);
Work ireduce_scatter_along(Communicator& tp, const void* full, void* shard, SplitShape shape, DType dtype);

// Copies piece `rank` of `parts` of `full` ([outer, parts * local, inner]) into `shard`.
void split_along(const void* full, void* shard, SplitShape shape, DType dtype, int rank, int parts);

}  // namespace braid::parallel
