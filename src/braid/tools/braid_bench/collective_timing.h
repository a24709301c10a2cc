// How braid-bench measures one collective at one size, shared by the plain sweep
// (collective_bench.cc) and the all-algorithms sweep behind --tune and --plot
// (algorithm_sweep.cc), so that a tuning file is made of exactly the numbers the plain sweep
// would print: warm-up, then --repeats batches of --iters calls, per-call time of the slowest
// rank, median over batches.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "bench_options.h"
#include "braid/comm/registered_buffer.h"
#include "braid/comm/scratch_buffer.h"
#include "collective_bench.h"

namespace braid::bench {

// Send and receive buffers sized for the largest message of a sweep, allocated and
// pre-faulted once (DESIGN.md: memory is allocated once and reused), the send side filled
// with this rank's inputs.
class SweepBuffers {
 public:
  // `registered`: from alloc_registered (registered memory) instead of scratch memory.
  SweepBuffers(Communicator& comm, const CollectiveSpec& spec, const std::vector<std::uint64_t>& sizes, DType dtype,
               ReduceOp op, bool registered = false);
  void* send() const { return send_; }
  void* recv() const { return recv_; }

 private:
  ScratchBuffer send_buffer_, recv_buffer_;
  RegisteredBuffer send_registered_, recv_registered_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
};

struct Timing {
  double seconds = 0;      // per call, slowest rank, median of the batches
  std::int64_t wrong = 0;  // elements differing from the reference, summed over ranks (0 unchecked)
};

// Seconds per call of the slowest rank, median of `repeats` batches of `iters` calls of `run`.
// Collective: every rank runs the same batches.
double time_batches(Communicator& comm, const std::function<void()>& run, int iters, int repeats);

// Warms up, times and (with options.check) checks `call` at a message of `bytes`. Collective:
// every rank must call it with the same arguments.
Timing time_collective(const CollectiveSpec& spec, const CollectiveCall& call, std::uint64_t bytes,
                       const SweepOptions& options);

}  // namespace braid::bench
