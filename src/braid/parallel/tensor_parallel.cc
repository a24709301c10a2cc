#include "braid/parallel/tensor_parallel.h"

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/async_collectives.h"
#include "braid/collectives/collective_queue.h"
#include "braid/collectives/collectives.h"
#include "braid/comm/communicator_internal.h"

namespace braid::parallel {
namespace {

void check(const Communicator& tp, bool ok, const char* op, const std::string& what) {
  if (!ok) throw InvalidArgument({.rank = tp.rank(), .op = op}, what);
}

void check_shape(const Communicator& tp, const void* a, const void* b, SplitShape s, const char* op) {
  check(tp, s.outer >= 0 && s.local >= 0 && s.inner >= 0, op,
        fmt::format("negative split shape outer {} local {} inner {}", s.outer, s.local, s.inner));
  check(tp, s.shard_elements() == 0 || (a != nullptr && b != nullptr), op, "a null buffer");
}

// The bytes of one rank's piece of one outer row, and of one outer row of the full tensor.
struct RowBytes {
  std::size_t piece, full;
};
RowBytes row_bytes(SplitShape s, DType dtype, int parts) {
  std::size_t piece = static_cast<std::size_t>(s.local * s.inner) * dtype_size(dtype);
  return {piece, piece * static_cast<std::size_t>(parts)};
}

// [parts][outer][local][inner] (what allgather produces) -> [outer][parts * local][inner].
void interleave(const std::byte* by_rank, std::byte* full, SplitShape s, DType dtype, int parts) {
  RowBytes b = row_bytes(s, dtype, parts);
  for (int r = 0; r < parts; ++r) {
    for (std::int64_t o = 0; o < s.outer; ++o) {
      std::memcpy(full + o * b.full + r * b.piece, by_rank + (r * s.outer + o) * b.piece, b.piece);
    }
  }
}

// The inverse: [outer][parts * local][inner] -> [parts][outer][local][inner] (reduce_scatter's input).
void deinterleave(const std::byte* full, std::byte* by_rank, SplitShape s, DType dtype, int parts) {
  RowBytes b = row_bytes(s, dtype, parts);
  for (int r = 0; r < parts; ++r) {
    for (std::int64_t o = 0; o < s.outer; ++o) {
      std::memcpy(by_rank + (r * s.outer + o) * b.piece, full + o * b.full + r * b.piece, b.piece);
    }
  }
}

// Queues `task` on the communicator's background thread behind the collective just issued
// (the queue runs its tasks in submission order), as part of that operation: the Work it
// returns completes after the task, and the task's closure owns the staging buffer, so the
// buffer lives until the collective has used it even when every handle is dropped (Work's
// contract: dropping the handles cancels nothing).
Work then(Communicator& tp, const char* op, Work issued, std::function<void()> task) {
  return detail::CollectiveAccess(tp).attachment<CollectiveQueue>().submit(
      {.rank = tp.rank(), .op = op}, [issued, task = std::move(task)]() mutable {
        issued.wait();  // done already (queued before this task); rethrows its error
        task();
      });
}

std::size_t full_bytes(const Communicator& tp, SplitShape s, DType dtype) {
  return static_cast<std::size_t>(s.shard_elements()) * static_cast<std::size_t>(tp.size()) * dtype_size(dtype);
}

// The blocking forms' staging buffer: one per thread, grown to the largest tensor and reused
// (a layer's activations every micro-batch: allocating and first-touching them each time would
// cost more than the copy).
std::byte* blocking_staging(std::size_t bytes) {
  thread_local std::vector<std::byte> staging;
  if (staging.size() < bytes) staging.resize(bytes);
  return staging.data();
}

}  // namespace

void tp_allreduce(Communicator& tp, void* data, std::int64_t count, DType dtype) {
  allreduce(tp, data, data, count, dtype, ReduceOp::kSum);
}

Work tp_iallreduce(Communicator& tp, void* data, std::int64_t count, DType dtype) {
  return iallreduce(tp, data, data, count, dtype, ReduceOp::kSum);
}

// outer == 1: allgather lands every piece where it belongs. Otherwise it lands rank-major in a
// staging buffer and is interleaved from there.
void gather_along(Communicator& tp, const void* shard, void* full, SplitShape shape, DType dtype) {
  check_shape(tp, shard, full, shape, "gather_along");
  if (shape.outer <= 1) return allgather(tp, shard, full, shape.shard_elements(), dtype);
  std::byte* staging = blocking_staging(full_bytes(tp, shape, dtype));
  allgather(tp, shard, staging, shape.shard_elements(), dtype);
  interleave(staging, static_cast<std::byte*>(full), shape, dtype, tp.size());
}

Work igather_along(Communicator& tp, const void* shard, void* full, SplitShape shape, DType dtype) {
  check_shape(tp, shard, full, shape, "gather_along");
  if (shape.outer <= 1) return iallgather(tp, shard, full, shape.shard_elements(), dtype);
  auto staging = std::make_shared<std::vector<std::byte>>(full_bytes(tp, shape, dtype));
  Work gathered = iallgather(tp, shard, staging->data(), shape.shard_elements(), dtype);
  const int parts = tp.size();
  return then(tp, "gather_along", std::move(gathered), [=] {
    interleave(staging->data(), static_cast<std::byte*>(full), shape, dtype, parts);
  });
}

void reduce_scatter_along(Communicator& tp, const void* full, void* shard, SplitShape shape, DType dtype) {
  check_shape(tp, full, shard, shape, "reduce_scatter_along");
  if (shape.outer <= 1) return reduce_scatter(tp, full, shard, shape.shard_elements(), dtype, ReduceOp::kSum);
  std::byte* staging = blocking_staging(full_bytes(tp, shape, dtype));
  deinterleave(static_cast<const std::byte*>(full), staging, shape, dtype, tp.size());
  reduce_scatter(tp, staging, shard, shape.shard_elements(), dtype, ReduceOp::kSum);
}

// The input is rearranged rank-major before the reduce-scatter starts (outer > 1), so `full`
// may be reused as soon as this returns; `shard` is written by the collective.
Work ireduce_scatter_along(Communicator& tp, const void* full, void* shard, SplitShape shape, DType dtype) {
  check_shape(tp, full, shard, shape, "reduce_scatter_along");
  if (shape.outer <= 1) return ireduce_scatter(tp, full, shard, shape.shard_elements(), dtype, ReduceOp::kSum);
  auto staging = std::make_shared<std::vector<std::byte>>(full_bytes(tp, shape, dtype));
  deinterleave(static_cast<const std::byte*>(full), staging->data(), shape, dtype, tp.size());
  Work reduced = ireduce_scatter(tp, staging->data(), shard, shape.shard_elements(), dtype, ReduceOp::kSum);
  return then(tp, "reduce_scatter_along", std::move(reduced), [staging] {});
}

void split_along(const void* full, void* shard, SplitShape shape, DType dtype, int rank, int parts) {
  if (rank < 0 || rank >= parts || shape.outer < 0 || shape.local < 0 || shape.inner < 0) {
    throw InvalidArgument({.op = "split_along"},
                          fmt::format("piece {} of {} with split shape outer {} local {} inner {}", rank, parts,
                                      shape.outer, shape.local, shape.inner));
  }
  RowBytes b = row_bytes(shape, dtype, parts);
  for (std::int64_t o = 0; o < shape.outer; ++o) {
    std::memcpy(static_cast<std::byte*>(shard) + o * b.piece,
                static_cast<const std::byte*>(full) + o * b.full + rank * b.piece, b.piece);
  }
}

}  // namespace braid::parallel
