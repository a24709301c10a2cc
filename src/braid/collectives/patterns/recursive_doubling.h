// Index arithmetic of recursive doubling and recursive halving on n = 2^k ranks, free of any
// data movement (Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication
// Operations in MPICH", 2005). Ranks are paired across a distance d that doubles (allgather)
// or halves (reduce-scatter) each round: partner = rank XOR d. Blocks are whole ranks' blocks
// (block b belongs to rank b), so every range below is contiguous in memory.
//
// Allgather (doubling): before the round of distance d, rank r holds the d blocks of its
// aligned group [r & ~(d-1), +d); it swaps them with its partner's group, doubling its range.
// Reduce-scatter (halving): rank r starts with the whole range [0, n); in the round of distance
// d it keeps the half that contains block r and sends the other half to rank r XOR d, whose
// kept half it is, so after log2 n rounds it holds block r reduced over every rank.
//
// Any n, by folding (MPICH's allreduce): with p the largest power of two <= n and
// extra = n - p, the first 2 * extra ranks pair up; each odd one hands its data to the even
// one below it and sits out, so p ranks take part (virtual ranks 0..p-1), and the odd ones
// receive the result afterwards.
#pragma once

namespace braid::recursive_doubling {

struct Range {
  int first;  // block index
  int count;  // blocks
  friend bool operator==(const Range&, const Range&) = default;
};

inline bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// log2 n. REQUIRES: is_power_of_two(n).
inline int rounds(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

inline int partner(int rank, int distance) { return rank ^ distance; }

// The largest power of two <= n (n >= 1).
inline int power_of_two_below(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}
// Ranks beyond the power of two: the first 2 * fold_extra(n) ranks fold in pairs.
inline int fold_extra(int n) { return n - power_of_two_below(n); }
// An odd rank of the folded prefix: hands its data to rank - 1 and waits for the result.
inline bool folds_away(int rank, int n) { return rank < 2 * fold_extra(n) && rank % 2 == 1; }
// The rank's number among the p taking part. REQUIRES: !folds_away(rank, n).
inline int virtual_rank(int rank, int n) { return rank < 2 * fold_extra(n) ? rank / 2 : rank - fold_extra(n); }
inline int real_rank(int virtual_rank, int n) {
  return virtual_rank < fold_extra(n) ? 2 * virtual_rank : virtual_rank + fold_extra(n);
}

// Allgather round `round` uses distance 2^round.
inline int doubling_distance(int round) { return 1 << round; }
inline Range doubling_held(int rank, int distance) { return {rank & ~(distance - 1), distance}; }

// Reduce-scatter round `round` uses distance n / 2^(round+1).
inline int halving_distance(int n, int round) { return n >> (round + 1); }
// The half of `current` that contains block `rank` (kept) and the other half (sent).
inline Range halving_kept(int rank, Range current) {
  int half = current.count / 2;
  return rank - current.first < half ? Range{current.first, half} : Range{current.first + half, half};
}
inline Range halving_sent(int rank, Range current) {
  int half = current.count / 2;
  return rank - current.first < half ? Range{current.first + half, half} : Range{current.first, half};
}

}  // namespace braid::recursive_doubling
