#include "braid/collectives/alltoallv_counts.h"

#include <string>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

AlltoallvCounts::AlltoallvCounts(int n) : n_(n), values_(2 * static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0) {}

std::int64_t AlltoallvCounts::sent_to_peers(int s) const {
  std::int64_t total = 0;
  for (int d = 0; d < n_; ++d) total += d == s ? 0 : sent(s, d);
  return total;
}

void AlltoallvCounts::set_row(int rank, const AlltoallvLayout& layout) {
  for (int p = 0; p < n_; ++p) {
    values_[index(rank, p)] = layout.send_counts[p];
    values_[plane() + index(rank, p)] = layout.recv_counts[p];
  }
}

void AlltoallvCounts::set_row(int rank, const std::int64_t* row) {
  for (int p = 0; p < n_; ++p) {
    values_[index(rank, p)] = row[p];
    values_[plane() + index(rank, p)] = row[n_ + p];
  }
}

std::vector<std::int64_t> AlltoallvCounts::row_of(const AlltoallvLayout& layout, int n) {
  std::vector<std::int64_t> row(layout.send_counts, layout.send_counts + n);
  row.insert(row.end(), layout.recv_counts, layout.recv_counts + n);
  return row;
}

std::exception_ptr AlltoallvCounts::disagreement(const CollectiveArgs& args) const {
  const int r = args.comm.rank();
  for (int s = 0; s < n_; ++s) {
    for (int d = 0; d < n_; ++d) {
      if (sent(s, d) == expected(d, s)) continue;
      const std::size_t elem = args.elem();
      ErrorContext ctx{.rank = r, .peer = r == s ? d : s, .op = std::string(op_kind_name(args.op)), .seq = args.seq};
      return std::make_exception_ptr(Mismatch(
          ctx, fmt::format("rank {} sends rank {} {} elements ({} bytes) of {} but rank {} expects {} ({} bytes)", s, d,
                           sent(s, d), static_cast<std::uint64_t>(sent(s, d)) * elem, dtype_name(args.dtype), d,
                           expected(d, s), static_cast<std::uint64_t>(expected(d, s)) * elem)));
    }
  }
  return nullptr;
}

}  // namespace braid
