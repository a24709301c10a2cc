// Every rank's alltoallv counts, known to every rank: what the direct and hierarchical
// alltoallv algorithms (alltoallv_shm_direct.cc, alltoallv_hierarchical.cc) exchange before
// any payload. A rank alone knows only its own row (what it sends, what it expects); with the
// whole matrix every rank can (1) lay out the blocks it reads or forwards for other pairs,
// (2) compute the same round count as its peers, and (3) check every pair (s, d) for
// send[s][d] == recv[d][s] and so raise the same Mismatch, naming the same pair, on every
// rank, before a byte of payload moves.
#pragma once

#include <cstdint>
#include <exception>
#include <span>
#include <vector>

#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/collective_args.h"

namespace braid {

class AlltoallvCounts {
 public:
  // Zero counts for n ranks.
  explicit AlltoallvCounts(int n);

  int size() const { return n_; }
  // What rank s sends to rank d, and what rank d expects from rank s.
  std::int64_t sent(int s, int d) const { return values_[index(s, d)]; }
  std::int64_t expected(int d, int s) const { return values_[plane() + index(d, s)]; }
  // Elements rank s sends to ranks other than itself (its own block stays local).
  std::int64_t sent_to_peers(int s) const;

  // The 2n^2 values (sent plane, then expected plane), for a collective that fills them in.
  std::span<std::int64_t> values() { return values_; }
  // Writes `rank`'s row of both planes from its layout (other rows are left as they are).
  void set_row(int rank, const AlltoallvLayout& layout);
  // Reads rank `rank`'s row from `row` (n sent counts, then n expected ones; row_of's layout).
  void set_row(int rank, const std::int64_t* row);
  // `layout`'s row in that layout: n send counts, then n receive counts.
  static std::vector<std::int64_t> row_of(const AlltoallvLayout& layout, int n);

  // Mismatch for the first pair (s, d), in row-major order, whose counts disagree (null if
  // none): every rank holding the same matrix gets the same error. Its context names this rank,
  // the other rank of that pair as peer (or d when this rank is neither) and args' op and seq.
  std::exception_ptr disagreement(const CollectiveArgs& args) const;

 private:
  std::size_t index(int a, int b) const { return static_cast<std::size_t>(a) * static_cast<std::size_t>(n_) + static_cast<std::size_t>(b); }
  std::size_t plane() const { return static_cast<std::size_t>(n_) * static_cast<std::size_t>(n_); }

  int n_;
  std::vector<std::int64_t> values_;  // sent[s][d] at s*n+d, then expected[d][s] at n*n + d*n+s
};

}  // namespace braid
