// The reducing c10d operations of ProcessGroupBraid, each one task on braid's queue over
// braid's blocking collective of the same meaning (collectives.h), so the reduction order, and
// with it every bit of the result, is braid's and the same on every rank.
#include <fmt/format.h>

#include "braid/collectives/collectives.h"
#include "braid/python/process_group_braid.h"
#include "braid/python/staging.h"
#include "braid/python/tensor_mapping.h"

namespace braid::python {

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  const ErrorContext ctx = context("allreduce");
  Staged staged(only_tensor(tensors, ctx));
  const ReduceOp op = reduction_op(opts.reduceOp, ctx);
  const Buffer b = reduction_buffer(staged.work(), ctx);
  return enqueue(c10d::OpType::ALLREDUCE, "allreduce", tensors, [this, staged, op, b]() mutable {
    braid::allreduce(comm_, b.data, b.data, b.count, b.dtype, op);
    staged.finish();
  });
}

// One allreduce over the tensors laid end to end (one message per peer, not one per tensor).
c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                      const c10d::AllreduceCoalescedOptions& opts) {
  const ErrorContext ctx = context("allreduce_coalesced");
  if (tensors.empty()) throw InvalidArgument(ctx, "the tensor list is empty");
  for (const at::Tensor& t : tensors) check_dense_cpu(t, ctx);
  check_same_dtype(tensors, ctx);
  const ReduceOp op = reduction_op(opts.reduceOp, ctx);
  at::Tensor flat = concatenated(tensors);
  const Buffer b = reduction_buffer(flat, ctx);
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", tensors,
                 [this, tensors, flat, op, b] {
                   braid::allreduce(comm_, b.data, b.data, b.count, b.dtype, op);
                   scatter_back(flat, tensors);
                 });
}

// The result lands on the root only (c10d leaves the other ranks' tensors unspecified; braid
// leaves them as they were).
c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  const ErrorContext ctx = context("reduce");
  Staged staged(only_tensor(tensors, ctx));
  const ReduceOp op = reduction_op(opts.reduceOp, ctx);
  const int root = checked_root(opts.rootRank, ctx);
  const Buffer b = reduction_buffer(staged.work(), ctx);
  // Off the root braid only reads the tensor (recv may be null there).
  void* recv = root == rank_ ? b.data : nullptr;
  return enqueue(c10d::OpType::REDUCE, "reduce", tensors, [this, staged, op, b, root, recv]() mutable {
    braid::reduce(comm_, b.data, recv, b.count, b.dtype, op, root);
    if (recv != nullptr) staged.finish();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                 std::vector<std::vector<at::Tensor>>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) {
  const ErrorContext ctx = context("reduce_scatter");
  Staged out(only_tensor(outputs, ctx));
  check_count(inputs.size(), 1, "the input list of lists", ctx);
  check_count(inputs[0].size(), static_cast<std::size_t>(size_), "the input list", ctx);
  check_same_layout(inputs[0], outputs[0], ctx);
  const ReduceOp op = reduction_op(opts.reduceOp, ctx);
  at::Tensor flat = concatenated(inputs[0]);
  const Buffer send = reduction_buffer(flat, ctx);
  const Buffer recv = reduction_buffer(out.work(), ctx);
  return enqueue(c10d::OpType::REDUCE_SCATTER, "reduce_scatter", outputs, [this, out, flat, op, send, recv]() mutable {
    braid::reduce_scatter(comm_, send.data, recv.data, recv.count, recv.dtype, op);
    out.finish();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                       const c10d::ReduceScatterOptions& opts) {
  const ErrorContext ctx = context("_reduce_scatter_base");
  check_dense_cpu(output, ctx);
  check_dense_cpu(input, ctx);
  check_whole_multiple(input, output, size_, ctx);
  const ReduceOp op = reduction_op(opts.reduceOp, ctx);
  Staged out(output);
  const at::Tensor in = input.contiguous();
  const Buffer send = reduction_buffer(in, ctx);
  const Buffer recv = reduction_buffer(out.work(), ctx);
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, "_reduce_scatter_base", {output},
                 [this, out, in, op, send, recv]() mutable {
                   braid::reduce_scatter(comm_, send.data, recv.data, recv.count, recv.dtype, op);
                   out.finish();
                 });
}

}  // namespace braid::python
