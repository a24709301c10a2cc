// CUDA kernel launch arithmetic (seeds/004, "CUDA Kernel 参数速算"):
//   reduction rounds  ceil(log2(blockDim))          a tree reduction halves the active threads
//   shared memory     blockDim x cache_per_thread x sizeof(dtype)
//   grid              ceil(N / (blockDim x items_per_thread))
#pragma once

#include "braid/plan/estimate.h"

namespace braid::plan {

struct KernelInput {
  double elements = 1 << 20;  // N
  int block_dim = 256;        // 1..1024 threads
  int items_per_thread = 4;
  int cache_per_thread = 1;   // elements each thread keeps in shared memory
  double dtype_bytes = 4;
  double smem_limit = 48 * 1024;  // default per-block limit without opt-in
};

// reduction_rounds, shared_memory_bytes, grid_blocks, and smem_fits (1 or 0 against the limit).
Estimates kernel_launch(const KernelInput& input);

}  // namespace braid::plan
