// braid-bench allreduce: nccl-tests' all_reduce_perf for braid. For each size: time (µs per
// call, slowest rank, median of --repeats batches), algbw = size / time, busbw = algbw *
// 2(n-1)/n, and #wrong, the elements that differ from the exact expected result (-c 1).
#pragma once

#include "bench_options.h"
#include "braid/comm/communicator.h"

namespace braid::bench {

int run_allreduce(Communicator& comm, const SweepOptions& options);

}  // namespace braid::bench
