// Index arithmetic of Bruck's allgather (Bruck, Ho, Kipnis, Upfal & Weathersby, "Efficient
// Algorithms for All-to-All Communications in Multiport Message-Passing Systems", IEEE TPDS
// 1997), free of any data movement. Works for any n in ceil(log2 n) rounds, where ring needs
// n-1: the latency-optimal choice for small messages on non-power-of-two worlds.
//
// Each rank keeps a working array of n slots, slot i destined to hold the block of rank
// (rank + i) mod n; it starts with its own block in slot 0. In the round of distance d = 2^k
// it sends its first min(d, n - d) slots to rank (rank - d) mod n and receives as many slots,
// which land at slots [d, d + count), from rank (rank + d) mod n. A final local rotation moves
// slot i to block (rank + i) mod n.
#pragma once

#include <algorithm>

namespace braid::bruck {

inline int mod(int value, int n) { return ((value % n) + n) % n; }

// ceil(log2 n); 0 for n == 1.
inline int rounds(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

inline int distance(int round) { return 1 << round; }
inline int send_peer(int rank, int round, int n) { return mod(rank - distance(round), n); }
inline int recv_peer(int rank, int round, int n) { return mod(rank + distance(round), n); }
// Slots sent (from slot 0) and received (into slot distance(round)) in a round.
inline int slots_in_round(int round, int n) { return std::min(distance(round), n - distance(round)); }
// The rank whose block slot `slot` of rank `rank` holds after the last round.
inline int block_of_slot(int rank, int slot, int n) { return mod(rank + slot, n); }

}  // namespace braid::bruck
