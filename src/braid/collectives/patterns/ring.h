// Index arithmetic of the ring pattern, free of any data movement (tested on its own).
//
// `count` elements are split into n blocks whose sizes differ by at most one (the first
// count % n blocks get the extra element), so any count works, 0 and counts below n included.
// In reduce-scatter step s (0 <= s < n-1) rank r sends block (r - s) mod n to its right
// neighbour and reduces block (r - s - 1) mod n arriving from its left; after n-1 steps rank r
// owns the fully reduced block (r + 1) mod n. Allgather then circulates the owned blocks: in
// step s rank r sends block (r + 1 - s) mod n and receives block (r - s) mod n.
//
// The "by rank" variants serve operations whose blocks belong to ranks (allgather, and
// reduce-scatter with MPI_Reduce_scatter_block semantics): rank r starts with (allgather) or
// must end owning (reduce-scatter) block r, so the schedule above is shifted by one.
#pragma once

#include <cstdint>

namespace braid::ring {

inline int right_of(int rank, int n) { return (rank + 1) % n; }
inline int left_of(int rank, int n) { return (rank - 1 + n) % n; }
inline int mod(int value, int n) { return ((value % n) + n) % n; }

struct Block {
  std::int64_t offset;  // in elements
  std::int64_t count;
};

inline Block block(std::int64_t count, int n, int index) {
  std::int64_t base = count / n, extra = count % n;
  std::int64_t offset = index * base + (index < extra ? index : extra);
  return {offset, base + (index < extra ? 1 : 0)};
}

inline int reduce_scatter_send_block(int rank, int step, int n) { return mod(rank - step, n); }
inline int reduce_scatter_recv_block(int rank, int step, int n) { return mod(rank - step - 1, n); }
inline int owned_block_after_reduce_scatter(int rank, int n) { return mod(rank + 1, n); }
inline int allgather_send_block(int rank, int step, int n) { return mod(rank + 1 - step, n); }
inline int allgather_recv_block(int rank, int step, int n) { return mod(rank - step, n); }

inline int allgather_by_rank_send_block(int rank, int step, int n) { return mod(rank - step, n); }
inline int allgather_by_rank_recv_block(int rank, int step, int n) { return mod(rank - step - 1, n); }
inline int reduce_scatter_by_rank_send_block(int rank, int step, int n) { return mod(rank - step - 1, n); }
inline int reduce_scatter_by_rank_recv_block(int rank, int step, int n) { return mod(rank - step - 2, n); }

}  // namespace braid::ring
