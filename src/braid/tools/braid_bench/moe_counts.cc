#include "moe_counts.h"

#include "braid/base/fnv1a.h"
#include "braid/base/splitmix64.h"

namespace braid::bench {

namespace {

// The first output of SplitMix64 seeded with x (the C peer's splitmix64(x)).
std::uint64_t splitmix64(std::uint64_t x) { return SplitMix64(x).next(); }

}  // namespace

std::vector<std::int64_t> moe_token_matrix(std::int64_t tokens, int n, std::uint64_t seed) {
  std::vector<std::uint64_t> cumulative;
  std::uint64_t total = 0;
  for (int e = 0; e < n; ++e) cumulative.push_back(total += 720720u / static_cast<std::uint64_t>(e + 1));
  std::vector<std::int64_t> matrix(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0);
  for (int s = 0; s < n; ++s) {
    const std::uint64_t stream = splitmix64(seed + static_cast<std::uint64_t>(s));
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::uint64_t pick = splitmix64(stream + static_cast<std::uint64_t>(t)) % total;
      int e = 0;
      while (pick >= cumulative[static_cast<std::size_t>(e)]) ++e;
      ++matrix[static_cast<std::size_t>(s * n + e)];
    }
  }
  return matrix;
}

std::uint64_t moe_digest(const std::vector<std::int64_t>& matrix) {
  Fnv1a digest;
  for (std::int64_t v : matrix) digest.add(v);
  return digest.value();
}

MoeLayout moe_layout(const std::vector<std::int64_t>& tokens, int n, int rank) {
  MoeLayout l;
  auto at = [&](int s, int d) { return tokens[static_cast<std::size_t>(s * n + d)] * kMoeTokenElements; };
  std::int64_t sent = 0;
  for (int p = 0; p < n; ++p) {
    l.send_displs.push_back(sent);
    l.send_counts.push_back(at(rank, p));
    sent += at(rank, p);
    l.recv_displs.push_back(l.received);
    l.recv_counts.push_back(at(p, rank));
    l.received += at(p, rank);
    std::int64_t offset = 0;
    for (int d = 0; d < rank; ++d) offset += at(p, d);
    l.offset_at_sender.push_back(offset);
  }
  return l;
}

}  // namespace braid::bench
