// braid-bench alltoallv: alltoallv at MoE-shaped, uneven counts (moe_counts.h). Size = the bytes
// each rank sends in all, its own block included (whole tokens of kMoeTokenElements elements),
// as alltoall's size; busbw = algbw * (n-1)/n, alltoall's factor, so the column is comparable
// with alltoall's and with the MPI peer's MPI_Alltoallv at the same counts. With skewed counts
// the hot rank receives more than `size`: its time bounds the call, as in an MoE layer.
//
// The element j of the block rank s sends to rank d is s's input at its position in s's send
// buffer, so each receiver knows every expected byte from the matrix alone.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "collective_bench.h"
#include "moe_counts.h"
#include "reference_values.h"

namespace braid::bench {

namespace {

// The layout of the last count asked for: every size calls run, then checks, at one count.
class MoePlans {
 public:
  const MoeLayout& at(std::int64_t count, int n, int rank) {
    if (count != count_ || n != n_ || rank != rank_) {
      count_ = count, n_ = n, rank_ = rank;
      layout_ = moe_layout(moe_token_matrix(count / kMoeTokenElements, n), n, rank);
    }
    return layout_;
  }

 private:
  std::int64_t count_ = -1;
  int n_ = 0, rank_ = -1;
  MoeLayout layout_;
};

// The most any rank receives at `count` (the receive buffers are sized for it).
std::int64_t largest_receive(std::int64_t count, int n) {
  const std::vector<std::int64_t> tokens = moe_token_matrix(count / kMoeTokenElements, n);
  std::int64_t most = 0;
  for (int d = 0; d < n; ++d) {
    std::int64_t received = 0;
    for (int s = 0; s < n; ++s) received += tokens[static_cast<std::size_t>(s * n + d)];
    most = std::max(most, received);
  }
  return most * kMoeTokenElements;
}

}  // namespace

CollectiveSpec alltoallv_spec() {
  CollectiveSpec spec;
  auto plans = std::make_shared<MoePlans>();
  spec.op = OpKind::kAlltoallv;
  spec.busbw_factor = [](int n) { return static_cast<double>(n - 1) / n; };
  spec.count_for = [](std::uint64_t bytes, int, std::size_t elem) {
    return static_cast<std::int64_t>(bytes / elem) / kMoeTokenElements * kMoeTokenElements;
  };
  spec.size_of = [](std::int64_t count, int, std::size_t elem) { return static_cast<std::uint64_t>(count) * elem; };
  spec.send_elements = [](std::int64_t count, int) { return count; };
  spec.recv_elements = [](std::int64_t count, int n) { return largest_receive(count, n); };
  spec.result_elements = [plans](std::int64_t count, int n, int rank) { return plans->at(count, n, rank).received; };
  spec.input = [](ReduceOp, int rank, int, std::int64_t i) { return input_value(ReduceOp::kSum, rank, i); };
  spec.expected = [plans](ReduceOp, int rank, int n, std::int64_t count, std::int64_t i, DType) {
    const MoeLayout& l = plans->at(count, n, rank);
    // Packed blocks: the sender is the last rank whose block starts at or before i.
    const auto s = static_cast<std::size_t>(std::upper_bound(l.recv_displs.begin(), l.recv_displs.end(), i) -
                                            l.recv_displs.begin() - 1);
    return input_value(ReduceOp::kSum, static_cast<int>(s), l.offset_at_sender[s] + i - l.recv_displs[s]);
  };
  spec.run = [plans](const CollectiveCall& c) {
    const MoeLayout& l = plans->at(c.count, c.comm.size(), c.comm.rank());
    alltoallv(c.comm, c.send, l.send_counts.data(), l.send_displs.data(), c.recv, l.recv_counts.data(),
              l.recv_displs.data(), c.dtype, c.options);
  };
  spec.note = [](int n, std::int64_t largest_count) {
    return fmt::format("counts: MoE routing, {}-element tokens to rank e with probability ~ 1/(e+1), seed {}; "
                       "token matrix digest at the largest size {:016x}",
                       kMoeTokenElements, kMoeSeed, moe_digest(moe_token_matrix(largest_count / kMoeTokenElements, n)));
  };
  return spec;
}

}  // namespace braid::bench
