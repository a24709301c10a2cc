// The sweep every collective subcommand of braid-bench shares (nccl-tests' common.cu): for
// each size, warm up, time --repeats batches of --iters calls (per-call time of the slowest
// rank, median over batches), check the last result against an exact reference, and print
// size, count, type, redop, time, algbw, busbw and #wrong. What differs per operation (how a
// size maps to counts and buffers, the busbw factor, the call, the reference) is a
// CollectiveSpec.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_options.h"
#include "braid/base/op_kind.h"
#include "braid/collectives/collectives.h"

namespace braid::bench {

struct CollectiveCall {
  Communicator& comm;
  const void* send;
  void* recv;
  std::int64_t count;  // the operation's count argument
  DType dtype;
  ReduceOp op;
  const CollectiveOptions& options;
};

struct CollectiveSpec {
  OpKind op = OpKind::kAllreduce;  // its subcommand's name, and its algorithms in the registry (--tune, --plot)
  bool reduces = false;      // prints the redop column's value, else "none"
  // busbw = algbw * factor(n) (nccl-tests' factors).
  std::function<double(int n)> busbw_factor;
  // The count argument for a message of `bytes` (as nccl-tests counts size) on n ranks.
  std::function<std::int64_t(std::uint64_t bytes, int n, std::size_t elem)> count_for;
  // The bytes a count stands for (the size column): count_for rounds sizes down to it.
  std::function<std::uint64_t(std::int64_t count, int n, std::size_t elem)> size_of;
  // Elements of the send and receive buffers for that count.
  std::function<std::int64_t(std::int64_t count, int n)> send_elements;
  std::function<std::int64_t(std::int64_t count, int n)> recv_elements;
  // This rank's input at element i of its send buffer.
  std::function<double(ReduceOp op, int rank, int n, std::int64_t i)> input;
  // The exact expected value at element i of this rank's receive buffer.
  std::function<double(ReduceOp op, int rank, int n, std::int64_t count, std::int64_t i, DType dtype)> expected;
  std::function<void(const CollectiveCall&)> run;
  // Where this rank's result is (default: the receive buffer).
  std::function<const void*(const CollectiveCall&)> result;
  // How many elements of it to check on `rank` (default: recv_elements), for rooted
  // operations whose non-root ranks receive nothing.
  std::function<std::int64_t(std::int64_t count, int n, int rank)> result_elements;
  // A comment line for the header (what the counts are), given the largest count of the sweep.
  std::function<std::string(int n, std::int64_t largest_count)> note;

  // "allreduce": the operation's name (base/op_kind.h), which is its subcommand.
  std::string name() const { return std::string(op_kind_name(op)); }
};

// Runs the sweep; returns the process exit status (1 if any result was wrong).
int run_collective_bench(Communicator& comm, const CollectiveSpec& spec, const SweepOptions& options);

// alltoallv at MoE-shaped counts (alltoallv_spec.cc).
CollectiveSpec alltoallv_spec();

// One spec per collective subcommand, in the order braid-bench lists them.
std::vector<CollectiveSpec> collective_specs();

}  // namespace braid::bench
