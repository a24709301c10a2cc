#include "collective_bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "braid/base/element_value.h"
#include "memcpy_probe.h"
#include "reference_values.h"
#include "result_table.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Buffers {
  void* send;
  void* recv;
};

double slowest(Communicator& comm, double mine) {
  double result = 0;
  allreduce(comm, &mine, &result, 1, DType::kF64, ReduceOp::kMax);
  return result;
}

// Seconds per call of the slowest rank, median of `repeats` batches of `iters` calls.
double time_calls(const CollectiveSpec& spec, const CollectiveCall& call, int iters, int repeats) {
  std::vector<double> batches;
  for (int r = 0; r < repeats; ++r) {
    call.comm.barrier();
    auto start = Clock::now();
    for (int i = 0; i < iters; ++i) spec.run(call);
    batches.push_back(slowest(call.comm, std::chrono::duration<double>(Clock::now() - start).count() / iters));
  }
  std::nth_element(batches.begin(), batches.begin() + static_cast<std::ptrdiff_t>(batches.size() / 2), batches.end());
  return batches[batches.size() / 2];
}

void fill_input(const CollectiveSpec& spec, void* send, std::int64_t elements, DType dtype, ReduceOp op, int rank, int n) {
  for (std::int64_t i = 0; i < elements; ++i) store_element(send, i, dtype, spec.input(op, rank, n, i));
}

std::int64_t count_wrong(const CollectiveSpec& spec, const CollectiveCall& call) {
  Communicator& comm = call.comm;
  const void* recv = spec.result ? spec.result(call) : call.recv;
  const std::int64_t count = call.count;
  const DType dtype = call.dtype;
  const ReduceOp op = call.op;
  const std::size_t elem = dtype_size(dtype);
  const int n = comm.size();
  std::vector<std::byte> expected(elem);
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < spec.recv_elements(count, n); ++i) {
    store_element(expected.data(), 0, dtype, spec.expected(op, comm.rank(), n, count, i, dtype));
    wrong += std::memcmp(static_cast<const std::byte*>(recv) + i * static_cast<std::int64_t>(elem), expected.data(), elem) != 0;
  }
  std::int64_t total = 0;
  allreduce(comm, &wrong, &total, 1, DType::kI64, ReduceOp::kSum);
  return total;
}

ResultTable make_table(const CollectiveSpec& spec, Communicator& comm, const SweepOptions& options, double memcpy_gbs) {
  ResultTable table(spec.name, {{"size", 12}, {"count", 11}, {"type", 5}, {"redop", 6}, {"time(us)", 11, 1},
                                {"algbw(GB/s)", 12, 2}, {"busbw(GB/s)", 12, 2}, {"#wrong", 7}});
  std::string algorithm = options.algorithm.empty() ? "default" : options.algorithm;
  table.set_meta("ranks", comm.size());
  table.set_meta("algorithm", algorithm);
  table.set_meta("memcpy_gbs", memcpy_gbs);
  if (comm.rank() == 0) {
    table.print_comment(fmt::format("braid-bench {}: {} ranks, algorithm {}, out-of-place", spec.name, comm.size(), algorithm));
    table.print_comment(fmt::format("memcpy (one thread, 64 MiB, median of 11): {:.2f} GB/s", memcpy_gbs));
    table.print_comment(fmt::format("time = slowest rank, median of {} batches; busbw = algbw * {:.3f}", options.repeats,
                                    spec.busbw_factor(comm.size())));
    table.print_header();
  }
  return table;
}

}  // namespace

int run_collective_bench(Communicator& comm, const CollectiveSpec& spec, const SweepOptions& options) {
  const DType dtype = options.dtype();
  const ReduceOp op = options.op();
  const std::size_t elem = dtype_size(dtype);
  const int n = comm.size();
  double memcpy_gbs = comm.rank() == 0 ? measure_memcpy_gbs() : 0;
  comm.barrier();
  ResultTable table = make_table(spec, comm, options, memcpy_gbs);
  CollectiveOptions collective_options{.algorithm = options.algorithm};

  std::vector<std::uint64_t> sizes = size_sweep(options, elem);
  std::int64_t largest_count = sizes.empty() ? 0 : spec.count_for(sizes.back(), n, elem);
  ScratchBuffer send_buffer, recv_buffer;
  void* send = send_buffer.get(std::max<std::size_t>(1, static_cast<std::size_t>(spec.send_elements(largest_count, n)) * elem));
  void* recv = recv_buffer.get(std::max<std::size_t>(1, static_cast<std::size_t>(spec.recv_elements(largest_count, n)) * elem));
  fill_input(spec, send, spec.send_elements(largest_count, n), dtype, op, comm.rank(), n);

  std::int64_t total_wrong = 0;
  for (std::uint64_t requested : sizes) {
    std::int64_t count = spec.count_for(requested, n, elem);
    std::uint64_t bytes = spec.size_of(count, n, elem);
    CollectiveCall call{comm, send, recv, count, dtype, op, collective_options};
    int iters = options.iters.value_or(default_iters(bytes, 256u << 20));
    int warmup = options.warmup.value_or(std::max(1, iters / 5));
    for (int i = 0; i < warmup; ++i) spec.run(call);
    double seconds = time_calls(spec, call, iters, options.repeats);
    std::int64_t wrong = options.check ? count_wrong(spec, call) : 0;
    total_wrong += wrong;
    if (comm.rank() == 0) {
      double algbw = static_cast<double>(bytes) / seconds / 1e9;
      table.add_row({static_cast<std::int64_t>(bytes), count, std::string(dtype_name(dtype)),
                     spec.reduces ? std::string(reduce_op_name(op)) : std::string("none"), seconds * 1e6, algbw,
                     algbw * spec.busbw_factor(n), wrong});
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
