#include "collective_timing.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "braid/base/element_value.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

// The bookkeeping reductions name their algorithm, so that BRAID_ALGO_ALLREDUCE or a tuning
// file aimed at the measured calls cannot change them.
double slowest(Communicator& comm, double mine) {
  double result = 0;
  allreduce(comm, &mine, &result, 1, DType::kF64, ReduceOp::kMax, {.algorithm = "recursive_doubling"});
  return result;
}

}  // namespace

double time_batches(Communicator& comm, const std::function<void()>& run, int iters, int repeats) {
  std::vector<double> batches;
  for (int r = 0; r < repeats; ++r) {
    comm.barrier();
    auto start = Clock::now();
    for (int i = 0; i < iters; ++i) run();
    batches.push_back(slowest(comm, std::chrono::duration<double>(Clock::now() - start).count() / iters));
  }
  std::nth_element(batches.begin(), batches.begin() + static_cast<std::ptrdiff_t>(batches.size() / 2), batches.end());
  return batches[batches.size() / 2];
}

namespace {

void fill_input(const CollectiveSpec& spec, void* send, std::int64_t elements, DType dtype, ReduceOp op, int rank, int n) {
  for (std::int64_t i = 0; i < elements; ++i) store_element(send, i, dtype, spec.input(op, rank, n, i));
}

std::int64_t count_wrong(const CollectiveSpec& spec, const CollectiveCall& call) {
  Communicator& comm = call.comm;
  const void* recv = spec.result ? spec.result(call) : call.recv;
  const std::size_t elem = dtype_size(call.dtype);
  const int n = comm.size();
  std::vector<std::byte> expected(elem);
  std::int64_t wrong = 0;
  const std::int64_t checked = spec.result_elements ? spec.result_elements(call.count, n, comm.rank())
                                                     : spec.recv_elements(call.count, n);
  for (std::int64_t i = 0; i < checked; ++i) {
    store_element(expected.data(), 0, call.dtype, spec.expected(call.op, comm.rank(), n, call.count, i, call.dtype));
    wrong += std::memcmp(static_cast<const std::byte*>(recv) + i * static_cast<std::int64_t>(elem), expected.data(), elem) != 0;
  }
  std::int64_t total = 0;
  allreduce(comm, &wrong, &total, 1, DType::kI64, ReduceOp::kSum, {.algorithm = "recursive_doubling"});
  return total;
}

}  // namespace

SweepBuffers::SweepBuffers(Communicator& comm, const CollectiveSpec& spec, const std::vector<std::uint64_t>& sizes,
                           DType dtype, ReduceOp op, bool registered) {
  const std::size_t elem = dtype_size(dtype);
  const int n = comm.size();
  const std::int64_t largest_count = sizes.empty() ? 0 : spec.count_for(sizes.back(), n, elem);
  const std::size_t send_bytes = std::max<std::size_t>(1, static_cast<std::size_t>(spec.send_elements(largest_count, n)) * elem);
  const std::size_t recv_bytes = std::max<std::size_t>(1, static_cast<std::size_t>(spec.recv_elements(largest_count, n)) * elem);
  if (registered) {
    send_registered_ = alloc_registered(comm, send_bytes);  // zero-filled and faulted in by the pool
    recv_registered_ = alloc_registered(comm, recv_bytes);
    send_ = send_registered_.data();
    recv_ = recv_registered_.data();
  } else {
    send_ = send_buffer_.get(send_bytes);
    recv_ = recv_buffer_.get(recv_bytes);
  }
  fill_input(spec, send_, spec.send_elements(largest_count, n), dtype, op, comm.rank(), n);
}

Timing time_collective(const CollectiveSpec& spec, const CollectiveCall& call, std::uint64_t bytes,
                       const SweepOptions& options) {
  const int iters = options.iters.value_or(default_iters(bytes, 256u << 20));
  const int warmup = options.warmup.value_or(std::max(1, iters / 5));
  for (int i = 0; i < warmup; ++i) spec.run(call);
  Timing timing;
  timing.seconds = time_batches(call.comm, [&] { spec.run(call); }, iters, options.repeats);
  if (options.check) timing.wrong = count_wrong(spec, call);
  return timing;
}

}  // namespace braid::bench
