// Index arithmetic of the pairwise-exchange alltoall (the MPICH long-message alltoall, Thakur,
// Rabenseifner & Gropp, "Optimization of Collective Communication Operations in MPICH", IJHPCA
// 2005), free of any data movement. In step s = 1..n-1 rank r sends its block for rank
// (r + s) mod n there and receives rank (r - s) mod n's block for it; its own block is a local
// copy. Every ordered pair of ranks exchanges exactly once, and in each step every rank sends
// one message and receives one, so no link carries two messages of the same step: n-1
// latencies and (n-1)/n of the send buffer on the wire, for any n.
#pragma once

namespace braid::pairwise {

inline int mod(int value, int n) { return ((value % n) + n) % n; }

// Steps are numbered 1..steps(n); 0 steps for n == 1.
inline int steps(int n) { return n - 1; }
inline int send_peer(int rank, int step, int n) { return mod(rank + step, n); }
inline int recv_peer(int rank, int step, int n) { return mod(rank - step, n); }

}  // namespace braid::pairwise
