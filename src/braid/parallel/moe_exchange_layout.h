// Where every row of an MoE dispatch sits, chunk by chunk: the alltoallv counts and
// displacements of each chunk, forward and back, and the re-ordering of what arrives into one
// contiguous run of rows per local expert. Pure arithmetic over the counts (tested alone); the
// dispatcher (moe_dispatcher.h) is its one executor.
//
// A row is one routed token copy (hidden elements). Each (EP rank, local expert) segment of n
// rows is cut into `chunks` pieces, piece c = rows [floor(n c / C), floor(n (c+1) / C)), and
// chunk c of the exchange moves piece c of every segment (Tutel's pipelining: experts compute
// on chunk c while chunk c + 1 is on the wire). Buffers, all chunk-major so that each chunk's
// rows are contiguous and each chunk is one alltoallv:
//
//   send buffer     [chunk][destination rank][its local expert][piece rows]   (this rank's copies)
//   receive buffer  [chunk][source rank][local expert][piece rows]            (alltoallv's order)
//   expert buffer   [chunk][local expert][source rank][piece rows]            (what experts read)
//
// The receive and expert buffers hold the same rows per chunk in another order; recv_to_expert
// lists the block copies between them (one per non-empty (source, expert) piece). Combine runs
// it backwards: expert buffer -> receive order -> reverse alltoallv -> send buffer's rows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace braid::parallel {

// `rows` rows from row `from` of one buffer to row `to` of another.
struct MoeRowBlock {
  std::int64_t from = 0;
  std::int64_t to = 0;
  std::int64_t rows = 0;
  bool operator==(const MoeRowBlock&) const = default;
};

struct MoeChunkLayout {
  // Rows per EP rank, displacements absolute in the send / receive buffer.
  std::vector<std::int64_t> send_counts, send_displs;
  std::vector<std::int64_t> recv_counts, recv_displs;
  // local_experts + 1 absolute row offsets in the expert buffer: local expert le's rows of this
  // chunk are [expert_offsets[le], expert_offsets[le + 1]).
  std::vector<std::int64_t> expert_offsets;
  std::vector<MoeRowBlock> recv_to_expert;
  std::int64_t first_recv_row = 0;  // the chunk's rows in the receive (= expert) buffer
  std::int64_t recv_rows = 0;
};

// [begin, end) of piece `chunk` of a segment of `rows` rows cut into `chunks` pieces.
std::int64_t moe_piece_begin(std::int64_t rows, int chunks, int chunk);

class MoeExchangeLayout {
 public:
  MoeExchangeLayout() = default;
  // send_per_expert: E counts, the rows this rank sends to each (global) expert; experts are
  // split evenly, rank r hosting [r E/ep, (r+1) E/ep). recv_per_source_expert: ep x E/ep counts,
  // row-major by source rank, the rows each rank sends to each local expert of this rank.
  // InvalidArgument (op "moe exchange layout") for chunks < 1, ep_size < 1, sizes that do not
  // fit, a negative count.
  MoeExchangeLayout(std::span<const std::int64_t> send_per_expert, std::span<const std::int64_t> recv_per_source_expert,
                    int ep_size, int chunks);

  int chunks() const { return static_cast<int>(chunks_.size()); }
  int ep_size() const { return ep_size_; }
  int local_experts() const { return local_experts_; }
  const MoeChunkLayout& chunk(int c) const { return chunks_[static_cast<std::size_t>(c)]; }
  std::int64_t send_rows() const { return send_rows_; }
  std::int64_t recv_rows() const { return recv_rows_; }
  // The send-buffer row of slot `position` (0 <= position < send_per_expert[expert]) of `expert`.
  std::int64_t send_row(int expert, std::int64_t position) const;

 private:
  void lay_out_sends(std::span<const std::int64_t> send_per_expert);
  void lay_out_receives(std::span<const std::int64_t> recv_per_source_expert);

  int ep_size_ = 1;
  int local_experts_ = 0;
  std::vector<MoeChunkLayout> chunks_;
  std::vector<std::int64_t> send_per_expert_;
  std::vector<std::int64_t> piece_base_;  // experts x chunks: send row of each expert's piece c
  std::int64_t send_rows_ = 0;
  std::int64_t recv_rows_ = 0;
};

}  // namespace braid::parallel
