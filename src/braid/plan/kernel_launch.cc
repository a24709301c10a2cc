#include "braid/plan/kernel_launch.h"

#include <cmath>

#include <fmt/format.h>

#include "braid/plan/units.h"

namespace braid::plan {

Estimates kernel_launch(const KernelInput& in) {
  require_range("elements", in.elements, 1, 1e15);
  require_range("block-dim", in.block_dim, 1, 1024, "CUDA allows at most 1024 threads per block");
  require_range("items-per-thread", in.items_per_thread, 1, 1e6);
  require_range("cache-per-thread", in.cache_per_thread, 0, 1e6);
  require_range("dtype bytes", in.dtype_bytes, 0.125, 16);
  const double rounds = std::ceil(std::log2(static_cast<double>(in.block_dim)));
  const double smem = static_cast<double>(in.block_dim) * in.cache_per_thread * in.dtype_bytes;
  const double per_block = static_cast<double>(in.block_dim) * in.items_per_thread;
  return {{"reduction_rounds", rounds, Unit::kCount, "ceil(log2(blockDim))", fmt::format("ceil(log2({}))", in.block_dim)},
          {"shared_memory_bytes", smem, Unit::kBytes, "blockDim x cache_per_thread x sizeof(dtype)",
           fmt::format("{} x {} x {} B", in.block_dim, in.cache_per_thread, num(in.dtype_bytes))},
          {"grid_blocks", std::ceil(in.elements / per_block), Unit::kCount, "ceil(N / (blockDim x items_per_thread))",
           fmt::format("ceil({} / ({} x {}))", num(in.elements), in.block_dim, in.items_per_thread)},
          {"smem_fits", smem <= in.smem_limit ? 1.0 : 0.0, Unit::kCount, "smem <= per-block limit",
           fmt::format("{} <= {}", num(smem), num(in.smem_limit))}};
}

}  // namespace braid::plan
