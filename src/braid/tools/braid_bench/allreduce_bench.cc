#include "allreduce_bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "braid/collectives/collectives.h"
#include "memcpy_probe.h"
#include "reference_values.h"
#include "result_table.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Seconds per call of the slowest rank for `iters` back-to-back allreduces.
double timed_batch(Communicator& comm, const void* send, void* recv, std::int64_t count, DType dtype, ReduceOp op, int iters) {
  comm.barrier();
  auto start = Clock::now();
  for (int i = 0; i < iters; ++i) allreduce(comm, send, recv, count, dtype, op);
  double mine = std::chrono::duration<double>(Clock::now() - start).count() / iters;
  double slowest = 0;
  allreduce(comm, &mine, &slowest, 1, DType::kF64, ReduceOp::kMax);
  return slowest;
}

std::int64_t count_wrong(Communicator& comm, const void* recv, std::int64_t count, DType dtype, ReduceOp op) {
  const std::size_t elem = dtype_size(dtype);
  std::vector<std::byte> expected(elem);
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    store_value(expected.data(), 0, dtype, expected_value(op, comm.size(), i, dtype));
    wrong += std::memcmp(static_cast<const std::byte*>(recv) + i * static_cast<std::int64_t>(elem), expected.data(), elem) != 0;
  }
  std::int64_t total = 0;
  allreduce(comm, &wrong, &total, 1, DType::kI64, ReduceOp::kSum);
  return total;
}

}  // namespace

int run_allreduce(Communicator& comm, const SweepOptions& options) {
  const DType dtype = options.dtype();
  const ReduceOp op = options.op();
  const std::size_t elem = dtype_size(dtype);
  const int n = comm.size();
  double memcpy_gbs = comm.rank() == 0 ? measure_memcpy_gbs() : 0;
  comm.barrier();

  ResultTable table("allreduce", {{"size", 12}, {"count", 11}, {"type", 5}, {"redop", 6}, {"time(us)", 11, 1},
                                   {"algbw(GB/s)", 12, 2}, {"busbw(GB/s)", 12, 2}, {"#wrong", 7}});
  if (comm.rank() == 0) {
    table.set_meta("ranks", n);
    table.set_meta("algorithm", "ring");
    table.set_meta("memcpy_gbs", memcpy_gbs);
    table.print_comment(fmt::format("braid-bench allreduce: {} ranks, ring algorithm, out-of-place", n));
    table.print_comment(fmt::format("memcpy (one thread, 64 MiB, median of 11): {:.2f} GB/s", memcpy_gbs));
    table.print_comment(fmt::format("time = slowest rank, median of {} batches; busbw = algbw * 2(n-1)/n", options.repeats));
    table.print_header();
  }
  std::vector<std::uint64_t> sizes = size_sweep(options, elem);
  std::uint64_t largest = sizes.empty() ? elem : std::max<std::uint64_t>(sizes.back(), elem);
  ScratchBuffer send_buffer, recv_buffer;
  void* send = send_buffer.get(largest);
  void* recv = recv_buffer.get(largest);
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(largest / elem); ++i) {
    store_value(send, i, dtype, input_value(op, comm.rank(), i));
  }
  std::int64_t total_wrong = 0;
  for (std::uint64_t bytes : sizes) {
    const auto count = static_cast<std::int64_t>(bytes / elem);
    int iters = options.iters.value_or(default_iters(bytes, 256u << 20));
    int warmup = options.warmup.value_or(std::max(1, iters / 5));
    for (int i = 0; i < warmup; ++i) allreduce(comm, send, recv, count, dtype, op);
    std::vector<double> batches;
    for (int r = 0; r < options.repeats; ++r) batches.push_back(timed_batch(comm, send, recv, count, dtype, op, iters));
    std::nth_element(batches.begin(), batches.begin() + static_cast<std::ptrdiff_t>(batches.size() / 2), batches.end());
    double seconds = batches[batches.size() / 2];
    std::int64_t wrong = options.check ? count_wrong(comm, recv, count, dtype, op) : 0;
    total_wrong += wrong;
    if (comm.rank() == 0) {
      double algbw = static_cast<double>(bytes) / seconds / 1e9;
      double busbw = algbw * 2.0 * (n - 1) / n;
      table.add_row({static_cast<std::int64_t>(bytes), count, std::string(dtype_name(dtype)),
                     std::string(reduce_op_name(op)), seconds * 1e6, algbw, busbw, wrong});
    }
  }
  if (comm.rank() == 0) {
    table.print_comment(fmt::format("Out of bounds values : {} {}", total_wrong, total_wrong == 0 ? "OK" : "FAILED"));
    if (!options.json_path.empty()) table.write_json(options.json_path);
    if (!options.csv_path.empty()) table.write_csv(options.csv_path);
  }
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace braid::bench
