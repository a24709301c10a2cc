// The c10d operations of ProcessGroupBraid that move data without reducing it: each is one
// task on braid's queue over braid's collective of the same meaning (collectives.h). Any dtype
// travels (as bytes where braid has no tag for it: tensor_mapping.h's byte_buffer). Lists of
// tensors go through one flat buffer (staging.h), so each is one braid collective.
#include <numeric>

#include <fmt/format.h>

#include "braid/collectives/collectives.h"
#include "braid/python/process_group_braid.h"
#include "braid/python/staging.h"
#include "braid/python/tensor_mapping.h"

namespace braid::python {

namespace {

// alltoallv's counts and displacements in braid's wire elements, from c10d's split sizes
// (rows of dim 0; empty: equal rows per rank).
struct Splits {
  std::vector<std::int64_t> counts;
  std::vector<std::int64_t> displs;
};

Splits wire_splits(const at::Tensor& t, const std::vector<std::int64_t>& rows, int size, const char* which,
                   const ErrorContext& ctx) {
  const std::int64_t dim0 = t.dim() == 0 ? 1 : t.size(0);
  const std::int64_t wire_per_row = dim0 == 0 ? 0 : byte_buffer(t).count / dim0;
  std::vector<std::int64_t> per_rank = rows;
  if (per_rank.empty()) {
    if (dim0 % size != 0) {
      throw InvalidArgument(ctx, fmt::format("the {} tensor's {} rows do not split equally over {} ranks", which, dim0,
                                             size));
    }
    per_rank.assign(static_cast<std::size_t>(size), dim0 / size);
  }
  check_count(per_rank.size(), static_cast<std::size_t>(size), which, ctx);
  if (std::accumulate(per_rank.begin(), per_rank.end(), std::int64_t{0}) != dim0) {
    throw InvalidArgument(ctx, fmt::format("the {} split sizes add up to {} rows, but the tensor has {}", which,
                                           std::accumulate(per_rank.begin(), per_rank.end(), std::int64_t{0}), dim0));
  }
  Splits s;
  std::int64_t offset = 0;
  for (std::int64_t r : per_rank) {
    s.counts.push_back(r * wire_per_row);
    s.displs.push_back(offset);
    offset += r * wire_per_row;
  }
  return s;
}

Splits wire_splits(const std::vector<at::Tensor>& tensors) {
  Splits s;
  std::int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    const std::int64_t n = byte_buffer(t).count;
    s.counts.push_back(n);
    s.displs.push_back(offset);
    offset += n;
  }
  return s;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  const ErrorContext ctx = context("broadcast");
  Staged staged(only_tensor(tensors, ctx));
  const int root = checked_root(opts.rootRank, ctx);
  const Buffer b = byte_buffer(staged.work());
  return enqueue(c10d::OpType::BROADCAST, "broadcast", tensors, [this, staged, b, root]() mutable {
    braid::broadcast(comm_, b.data, b.count, b.dtype, root);
    staged.finish();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllgatherOptions& /*opts*/) {
  const ErrorContext ctx = context("allgather");
  const at::Tensor in = only_tensor(inputs, ctx).contiguous();
  check_count(outputs.size(), 1, "the output list of lists", ctx);
  check_count(outputs[0].size(), static_cast<std::size_t>(size_), "the output list", ctx);
  check_same_layout(outputs[0], in, ctx);
  const at::Tensor flat = flat_like(in, in.numel() * size_);
  std::vector<at::Tensor> results = outputs[0];
  return enqueue(c10d::OpType::ALLGATHER, "allgather", results, [this, in, flat, results] {
    const Buffer send = byte_buffer(in);
    braid::allgather(comm_, send.data, byte_buffer(flat).data, send.count, send.dtype);
    scatter_back(flat, results);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                  const c10d::AllgatherOptions& /*opts*/) {
  const ErrorContext ctx = context("_allgather_base");
  check_dense_cpu(output, ctx);
  check_dense_cpu(input, ctx);
  check_whole_multiple(output, input, size_, ctx);
  const at::Tensor in = input.contiguous();
  Staged out(output);
  return enqueue(c10d::OpType::_ALLGATHER_BASE, "_allgather_base", {output}, [this, in, out]() mutable {
    const Buffer send = byte_buffer(in);
    braid::allgather(comm_, send.data, byte_buffer(out.work()).data, send.count, send.dtype);
    out.finish();
  });
}

// One allgather of the inputs laid end to end; rank r's block is then cut back into
// output_lists[r] (each list shaped like the inputs).
c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  const ErrorContext ctx = context("allgather_coalesced");
  if (inputs.empty()) throw InvalidArgument(ctx, "the input list is empty");
  for (const at::Tensor& t : inputs) check_dense_cpu(t, ctx);
  check_same_dtype(inputs, ctx);
  check_count(output_lists.size(), static_cast<std::size_t>(size_), "the output list of lists", ctx);
  std::vector<at::Tensor> results;
  for (const std::vector<at::Tensor>& list : output_lists) {
    check_count(list.size(), inputs.size(), "an output list", ctx);
    for (std::size_t i = 0; i < list.size(); ++i) check_same_layout({list[i]}, inputs[i], ctx);
    results.insert(results.end(), list.begin(), list.end());
  }
  const at::Tensor in = concatenated(inputs);
  const at::Tensor flat = flat_like(in, in.numel() * size_);
  return enqueue(c10d::OpType::ALLGATHER_COALESCED, "allgather_coalesced", results, [this, in, flat, results] {
    const Buffer send = byte_buffer(in);
    braid::allgather(comm_, send.data, byte_buffer(flat).data, send.count, send.dtype);
    scatter_back(flat, results);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::GatherOptions& opts) {
  const ErrorContext ctx = context("gather");
  const at::Tensor in = only_tensor(inputs, ctx).contiguous();
  const int root = checked_root(opts.rootRank, ctx);
  std::vector<at::Tensor> results;
  if (root == rank_) {
    check_count(outputs.size(), 1, "the root's output list of lists", ctx);
    check_count(outputs[0].size(), static_cast<std::size_t>(size_), "the root's output list", ctx);
    check_same_layout(outputs[0], in, ctx);
    results = outputs[0];
  } else if (!outputs.empty()) {
    throw InvalidArgument(ctx, fmt::format("only the root (rank {}) passes an output list", root));
  }
  const at::Tensor flat = results.empty() ? at::Tensor() : flat_like(in, in.numel() * size_);
  return enqueue(c10d::OpType::GATHER, "gather", results, [this, in, flat, results, root] {
    const Buffer send = byte_buffer(in);
    braid::gather(comm_, send.data, flat.defined() ? byte_buffer(flat).data : nullptr, send.count, send.dtype, root);
    if (flat.defined()) scatter_back(flat, results);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::scatter(std::vector<at::Tensor>& outputs,
                                                          std::vector<std::vector<at::Tensor>>& inputs,
                                                          const c10d::ScatterOptions& opts) {
  const ErrorContext ctx = context("scatter");
  Staged out(only_tensor(outputs, ctx));
  const int root = checked_root(opts.rootRank, ctx);
  at::Tensor flat;
  if (root == rank_) {
    check_count(inputs.size(), 1, "the root's input list of lists", ctx);
    check_count(inputs[0].size(), static_cast<std::size_t>(size_), "the root's input list", ctx);
    check_same_layout(inputs[0], outputs[0], ctx);
    flat = concatenated(inputs[0]);
  } else if (!inputs.empty()) {
    throw InvalidArgument(ctx, fmt::format("only the root (rank {}) passes an input list", root));
  }
  return enqueue(c10d::OpType::SCATTER, "scatter", outputs, [this, out, flat, root]() mutable {
    const Buffer recv = byte_buffer(out.work());
    braid::scatter(comm_, flat.defined() ? byte_buffer(flat).data : nullptr, recv.data, recv.count, recv.dtype, root);
    out.finish();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                std::vector<int64_t>& output_splits,
                                                                std::vector<int64_t>& input_splits,
                                                                const c10d::AllToAllOptions& /*opts*/) {
  const ErrorContext ctx = context("alltoall_base");
  check_dense_cpu(output, ctx);
  check_dense_cpu(input, ctx);
  if (output.scalar_type() != input.scalar_type()) {
    throw InvalidArgument(ctx, "the input and output tensors differ in dtype");
  }
  const Splits send = wire_splits(input, input_splits, size_, "input", ctx);
  const Splits recv = wire_splits(output, output_splits, size_, "output", ctx);
  const at::Tensor in = input.contiguous();
  Staged out(output);
  return enqueue(c10d::OpType::ALLTOALL_BASE, "alltoall_base", {output}, [this, in, out, send, recv]() mutable {
    const Buffer s = byte_buffer(in);
    braid::alltoallv(comm_, s.data, send.counts.data(), send.displs.data(), byte_buffer(out.work()).data,
                     recv.counts.data(), recv.displs.data(), s.dtype);
    out.finish();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions& /*opts*/) {
  const ErrorContext ctx = context("alltoall");
  check_count(inputs.size(), static_cast<std::size_t>(size_), "the input list", ctx);
  check_count(outputs.size(), static_cast<std::size_t>(size_), "the output list", ctx);
  for (const at::Tensor& t : inputs) check_dense_cpu(t, ctx);
  for (const at::Tensor& t : outputs) check_dense_cpu(t, ctx);
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  check_same_dtype(all, ctx);
  const Splits send = wire_splits(inputs);
  const Splits recv = wire_splits(outputs);
  const at::Tensor in = concatenated(inputs);
  std::int64_t out_count = 0;
  for (const at::Tensor& t : outputs) out_count += t.numel();
  const at::Tensor flat = flat_like(in, out_count);
  return enqueue(c10d::OpType::ALLTOALL, "alltoall", outputs, [this, in, flat, outputs, send, recv] {
    const Buffer s = byte_buffer(in);
    braid::alltoallv(comm_, s.data, send.counts.data(), send.displs.data(), byte_buffer(flat).data,
                     recv.counts.data(), recv.displs.data(), s.dtype);
    scatter_back(flat, outputs);
  });
}

}  // namespace braid::python
