// Index arithmetic of a pipelined chain broadcast, free of any data movement. Ranks form the
// chain root -> root+1 -> ... -> root-1 (mod n) and the message moves in segments: while a rank
// forwards segment k it already receives k+1, so a large message costs about
// (segments + n - 2) segment times, i.e. close to one message time when segments >> n
// (the pipelined broadcast of Traff & Ripke, and NCCL's ring broadcast).
//
// Segment size trades pipeline fill (n - 2 extra segment times) against per-message cost:
// an eighth of the message, at least 16 KiB (so small messages go as one piece) and at most
// 256 KiB (so the chain fills quickly and a segment stays in L2 cache).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace braid::chain {

inline constexpr std::int64_t kMinSegmentBytes = 16 << 10;
inline constexpr std::int64_t kMaxSegmentBytes = 256 << 10;

struct Segment {
  std::int64_t offset;  // elements
  std::int64_t count;
};

// Elements per segment (>= 1) for a message of `count` elements of `elem` bytes.
inline std::int64_t segment_elements(std::int64_t count, std::size_t elem) {
  const auto size = static_cast<std::int64_t>(elem);
  std::int64_t bytes = std::clamp((count * size + 7) / 8, kMinSegmentBytes, kMaxSegmentBytes);
  return std::max<std::int64_t>(1, bytes / size);
}

inline std::int64_t segment_count(std::int64_t count, std::int64_t per_segment) {
  return (count + per_segment - 1) / per_segment;
}

inline Segment segment(std::int64_t count, std::int64_t per_segment, std::int64_t index) {
  std::int64_t offset = index * per_segment;
  return {offset, std::min(per_segment, count - offset)};
}

// Position in the chain (root = 0); previous / next are -1 at the ends.
inline int to_relative(int rank, int root, int n) { return ((rank - root) % n + n) % n; }
inline int to_absolute(int relative, int root, int n) { return (relative + root) % n; }
inline int previous(int relative) { return relative - 1; }
inline int next(int relative, int n) { return relative + 1 < n ? relative + 1 : -1; }

}  // namespace braid::chain
