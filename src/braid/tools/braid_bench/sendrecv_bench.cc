#include "sendrecv_bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/comm/scratch_buffer.h"
#include "memcpy_probe.h"
#include "result_table.h"

namespace braid::bench {

namespace {

using Clock = std::chrono::steady_clock;

void fill(std::byte* data, std::uint64_t bytes, int salt) {
  for (std::uint64_t i = 0; i < bytes; ++i) data[i] = static_cast<std::byte>((i * 131 + static_cast<std::uint64_t>(salt)) & 0xff);
}

std::int64_t count_wrong(const std::byte* data, std::uint64_t bytes, int salt) {
  std::int64_t wrong = 0;
  for (std::uint64_t i = 0; i < bytes; ++i) wrong += data[i] != static_cast<std::byte>((i * 131 + static_cast<std::uint64_t>(salt)) & 0xff);
  return wrong;
}

// One ping-pong per iteration; returns every round trip's duration in seconds (rank 0).
std::vector<double> ping_pong(Communicator& comm, std::byte* out, std::byte* in, std::uint64_t bytes, int iters, int warmup) {
  std::vector<double> round_trips;
  const auto count = static_cast<std::int64_t>(bytes);
  for (int i = 0; i < warmup + iters; ++i) {
    auto start = Clock::now();
    if (comm.rank() == 0) {
      comm.send(out, count, DType::kU8, 1);
      comm.recv(in, count, DType::kU8, 1);
    } else {
      comm.recv(in, count, DType::kU8, 0);
      comm.send(out, count, DType::kU8, 0);
    }
    if (i >= warmup) round_trips.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return round_trips;
}

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

}  // namespace

int run_sendrecv(Communicator& comm, const SweepOptions& options) {
  if (comm.size() < 2) {
    throw InvalidArgument({.rank = comm.rank(), .op = "braid-bench sendrecv"}, "needs at least 2 ranks (braid-run -n 2 ...)");
  }
  double memcpy_gbs = comm.rank() == 0 ? measure_memcpy_gbs() : 0;
  comm.barrier();
  ResultTable table("sendrecv", {{"size", 12}, {"iters", 7}, {"time(us)", 11, 2}, {"algbw(GB/s)", 12, 2},
                                  {"%memcpy", 8, 1}, {"#wrong", 7}});
  const std::string transport(comm.transport_to(comm.rank() == 0 ? 1 : 0));
  if (comm.rank() == 0) {
    table.set_meta("ranks", comm.size());
    table.set_meta("transport", transport);
    table.set_meta("memcpy_gbs", memcpy_gbs);
    table.print_comment(fmt::format("braid-bench sendrecv: ping-pong between ranks 0 and 1 of {}, over {}", comm.size(), transport));
    table.print_comment(one_thread_memcpy_line(memcpy_gbs));
    table.print_comment("time = median one-way time (half a round trip); algbw = size / time");
    table.print_header();
  }
  std::vector<std::uint64_t> sizes = size_sweep(options, 1);
  std::uint64_t largest = sizes.empty() ? 1 : std::max<std::uint64_t>(sizes.back(), 1);
  ScratchBuffer out_buffer, in_buffer;
  std::byte* out = out_buffer.get(largest);
  std::byte* in = in_buffer.get(largest);
  fill(out, largest, comm.rank());
  std::int64_t total_wrong = 0;
  for (std::uint64_t bytes : sizes) {
    int iters = options.iters.value_or(default_iters(bytes, 2u << 30));
    int warmup = options.warmup.value_or(std::max(2, iters / 10));
    std::vector<double> round_trips;
    std::int64_t wrong = 0;
    if (comm.rank() <= 1) {
      round_trips = ping_pong(comm, out, in, bytes, iters, warmup);
      if (options.check) wrong = count_wrong(in, bytes, 1 - comm.rank());
      if (comm.rank() == 1) comm.send(&wrong, 1, DType::kI64, 0, 1);
    }
    if (comm.rank() == 0) {
      std::int64_t peer_wrong = 0;
      comm.recv(&peer_wrong, 1, DType::kI64, 1, 1);
      double one_way = median(round_trips) / 2;
      double gbs = static_cast<double>(bytes) / one_way / 1e9;
      table.add_row({static_cast<std::int64_t>(bytes), static_cast<std::int64_t>(iters), one_way * 1e6, gbs,
                     100.0 * gbs / memcpy_gbs, wrong + peer_wrong});
      total_wrong += wrong + peer_wrong;
    }
    comm.barrier();
  }
  if (comm.rank() == 0) {
    if (!options.json_path.empty()) table.write_json(options.json_path);
    if (!options.csv_path.empty()) table.write_csv(options.csv_path);
  }
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace braid::bench
