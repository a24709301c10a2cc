// How c10d's tensors, dtypes and reduction ops map onto braid's type-erased collectives
// (collectives.h takes a pointer, an element count and a DType tag).
//
// - A reduction needs a dtype braid's kernels reduce (f32, f64, f16, bf16, i32, i64, u8) and
//   one of SUM, AVG, PRODUCT, MIN, MAX. Anything else is an InvalidArgument at the call.
// - Operations that only move bytes (broadcast, gathers, scatter, all-to-all, send/recv) take
//   any dtype: a tensor braid cannot reduce travels as its raw bytes (u8 x element size).
// Contiguous staging of the caller's tensors is in staging.h.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "braid/base/dtype.h"
#include "braid/base/error.h"
#include "braid/base/reduce_op.h"

namespace braid::python {

// A tensor as braid sees it: `count` elements of `dtype` at `data`.
struct Buffer {
  void* data = nullptr;
  std::int64_t count = 0;
  DType dtype = DType::kU8;
};

// The braid dtype that reduces `type`; InvalidArgument naming the dtype and the op otherwise.
DType reduction_dtype(at::ScalarType type, const ErrorContext& ctx);
// The braid reduction op for `op`; InvalidArgument for the bitwise ops and PREMUL_SUM.
ReduceOp reduction_op(const c10d::ReduceOp& op, const ErrorContext& ctx);

// `tensor` (contiguous) as elements to reduce, or as bytes to move.
Buffer reduction_buffer(const at::Tensor& tensor, const ErrorContext& ctx);
Buffer byte_buffer(const at::Tensor& tensor);

// A dense CPU tensor, or InvalidArgument naming the op (sparse, CUDA, ... are not braid's).
void check_dense_cpu(const at::Tensor& tensor, const ErrorContext& ctx);
// Every tensor of `tensors` has the dtype and shape of `like`, else InvalidArgument.
void check_same_layout(const std::vector<at::Tensor>& tensors, const at::Tensor& like, const ErrorContext& ctx);
// Exactly `expected` tensors, else InvalidArgument ("<what> holds 3 tensors, expected 1").
void check_count(std::size_t got, std::size_t expected, const char* what, const ErrorContext& ctx);

// Every tensor of `tensors` has the dtype of the first, else InvalidArgument.
void check_same_dtype(const std::vector<at::Tensor>& tensors, const ErrorContext& ctx);
// `big` has the dtype of `small` and exactly n times its elements (a _base collective's
// flat buffer), else InvalidArgument.
void check_whole_multiple(const at::Tensor& big, const at::Tensor& small, int n, const ErrorContext& ctx);

}  // namespace braid::python
