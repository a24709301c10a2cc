#include "collective_bench.h"

#include <vector>

#include <fmt/format.h>

#include "collective_timing.h"
#include "memcpy_probe.h"
#include "result_table.h"

namespace braid::bench {

namespace {

// The two memory-bandwidth references of the run (memcpy_probe.h).
struct MemcpyReference {
  double one_thread_gbs = 0;   // measured on rank 0 alone
  double every_rank_gbs = 0;   // per rank, with every rank copying at once
};

ResultTable make_table(const CollectiveSpec& spec, Communicator& comm, const SweepOptions& options,
                       const MemcpyReference& reference, std::int64_t largest_count) {
  ResultTable table(spec.name(), {{"size", 12}, {"count", 11}, {"type", 5}, {"redop", 6}, {"time(us)", 11, 2},
                                {"algbw(GB/s)", 12, 2}, {"busbw(GB/s)", 12, 2}, {"#wrong", 7}});
  std::string algorithm = options.algorithm.empty() ? "default" : options.algorithm;
  table.set_meta("ranks", comm.size());
  table.set_meta("algorithm", algorithm);
  table.set_meta("memcpy_gbs", reference.one_thread_gbs);
  table.set_meta("memcpy_every_rank_gbs", reference.every_rank_gbs);
  if (comm.rank() == 0) {
    table.print_comment(fmt::format("braid-bench {}: {} ranks, algorithm {}, out-of-place", spec.name(), comm.size(), algorithm));
    table.print_comment(one_thread_memcpy_line(reference.one_thread_gbs));
    table.print_comment(every_rank_memcpy_line(reference.every_rank_gbs));
    if (options.registered) table.print_comment("Buffers: registered (alloc_registered)");
    if (spec.note) table.print_comment(spec.note(comm.size(), largest_count));
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
  MemcpyReference reference;
  if (comm.rank() == 0) reference.one_thread_gbs = measure_memcpy_gbs();
  reference.every_rank_gbs = measure_concurrent_memcpy_gbs(comm);  // starts with a barrier
  std::vector<std::uint64_t> sizes = size_sweep(options, elem);
  const std::int64_t largest_count = sizes.empty() ? 0 : spec.count_for(sizes.back(), n, elem);
  ResultTable table = make_table(spec, comm, options, reference, largest_count);
  CollectiveOptions collective_options{.algorithm = options.algorithm};

  SweepBuffers buffers(comm, spec, sizes, dtype, op, options.registered);
  std::int64_t total_wrong = 0;
  for (std::uint64_t requested : sizes) {
    std::int64_t count = spec.count_for(requested, n, elem);
    std::uint64_t bytes = spec.size_of(count, n, elem);
    CollectiveCall call{comm, buffers.send(), buffers.recv(), count, dtype, op, collective_options};
    Timing timing = time_collective(spec, call, bytes, options);
    total_wrong += timing.wrong;
    if (comm.rank() == 0) {
      double algbw = static_cast<double>(bytes) / timing.seconds / 1e9;
      table.add_row({static_cast<std::int64_t>(bytes), count, std::string(dtype_name(dtype)),
                     spec.reduces ? std::string(reduce_op_name(op)) : std::string("none"), timing.seconds * 1e6, algbw,
                     algbw * spec.busbw_factor(n), timing.wrong});
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
