// One collective of the soak (soak_main.cc): drawn from a generator every rank seeds alike,
// so all ranks draw the same operation, dtype, size, root and algorithm, then run it on
// inputs whose every result element is known exactly (small integers, collective_reference.h),
// and count the result elements that differ from that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "braid/base/dtype.h"
#include "braid/base/op_kind.h"
#include "braid/base/reduce_op.h"
#include "braid/base/splitmix64.h"
#include "braid/comm/communicator.h"
#include "braid/comm/work.h"

namespace braid::soak {

struct SoakCall {
  OpKind op = OpKind::kAllreduce;  // a collective of collectives.h, kBarrier or kSendRecv (a ring shift)
  DType dtype = DType::kF32;
  ReduceOp reduce_op = ReduceOp::kSum;
  std::int64_t count = 0;  // the public call's count argument (per block where it is one)
  int root = 0;
  std::string algorithm;       // empty: the tuner's choice
  bool async = false;          // the i-variant, waited for after the whole batch was issued
  bool in_place = false;       // allreduce only
  std::int64_t salt = 0;       // shifts every input pattern: results of earlier calls never pass
  std::vector<std::int64_t> alltoallv_counts;  // n x n, [src * n + dst] elements; alltoallv only

  std::string describe() const;
};

// Draws the next call. Every rank must pass a generator in the same state and the same
// communicator size: the call depends on nothing else. max_bytes bounds every buffer.
SoakCall draw_call(SplitMix64& rng, Communicator& comm, std::size_t max_bytes, std::int64_t salt);

// A call's buffers on this rank, filled with its inputs; run() issues it (returning the Work of
// an async call, a completed Work otherwise), wrong_elements() compares the result.
class SoakCallRun {
 public:
  SoakCallRun(Communicator& comm, SoakCall call);
  Work run();
  std::int64_t wrong_elements() const;
  const SoakCall& call() const { return call_; }
  std::size_t bytes() const { return send_.size() + recv_.size(); }

 private:
  void fill_inputs();
  void fill_expected();
  Work run_p2p();

  Communicator& comm_;
  SoakCall call_;
  std::vector<std::byte> send_, recv_, expected_;
  std::vector<std::int64_t> send_counts_, send_displs_, recv_counts_, recv_displs_;
  bool expects_result_ = true;  // false where this rank receives nothing (a non-root of reduce, gather)
};

}  // namespace braid::soak
