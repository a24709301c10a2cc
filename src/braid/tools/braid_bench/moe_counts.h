// MoE-shaped alltoallv counts for braid-bench alltoallv (and, reimplemented in C with the same
// integers, for the OpenMPI peer bench/mpi/mpi_collectives.c): each rank sends `tokens` tokens
// of kMoeTokenElements elements; token t of rank s goes to the rank hosting its expert, drawn
// from a skewed routing distribution, Zipf's law with exponent 1 (rank e is chosen with
// probability proportional to 1 / (e + 1): rank 0 hosts the most popular expert), by
//
//   x = splitmix64(splitmix64(seed + s) + t),  pick = x mod W,  e = first e with pick < C(e)
//
// where w(e) = 720720 / (e + 1) (exact for n <= 16; 720720 = lcm(1..16)), C its running sum
// and W = C(n - 1). Integers only, so C and C++ draw the same counts on any machine, and a
// token's destination depends only on (seed, s, t): a larger size extends a smaller one's
// draws, so every rank's receive total grows with the size.
#pragma once

#include <cstdint>
#include <vector>

namespace braid::bench {

inline constexpr std::int64_t kMoeTokenElements = 1024;  // a 4 KiB f32 token (hidden size 1024)
inline constexpr std::uint64_t kMoeSeed = 2026;

// tokens[s * n + d]: how many of rank s's `tokens` tokens go to rank d.
std::vector<std::int64_t> moe_token_matrix(std::int64_t tokens, int n, std::uint64_t seed = kMoeSeed);

// FNV-1a over the matrix's values (as 8 little-endian bytes each): printed by braid-bench and
// the MPI peer, so that a comparison can check both drew the same counts.
std::uint64_t moe_digest(const std::vector<std::int64_t>& matrix);

// One rank's alltoallv arguments for a matrix, blocks packed in rank order on both sides (in
// elements), and where its block lies in each sender's buffer.
struct MoeLayout {
  std::vector<std::int64_t> send_counts, send_displs, recv_counts, recv_displs;
  std::vector<std::int64_t> offset_at_sender;  // by sender s: element offset of s's block for this rank
  std::int64_t received = 0;                   // elements this rank receives in all
};
MoeLayout moe_layout(const std::vector<std::int64_t>& tokens, int n, int rank);

}  // namespace braid::bench
