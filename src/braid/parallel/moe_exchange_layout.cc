#include "braid/parallel/moe_exchange_layout.h"

#include <fmt/format.h>

#include <algorithm>

#include "braid/base/error.h"

namespace braid::parallel {
namespace {

[[noreturn]] void refuse(const std::string& detail) { throw InvalidArgument({.op = "moe exchange layout"}, detail); }

std::int64_t piece_rows(std::int64_t rows, int chunks, int c) {
  return moe_piece_begin(rows, chunks, c + 1) - moe_piece_begin(rows, chunks, c);
}

}  // namespace

std::int64_t moe_piece_begin(std::int64_t rows, int chunks, int chunk) { return rows * chunk / chunks; }

MoeExchangeLayout::MoeExchangeLayout(std::span<const std::int64_t> send_per_expert,
                                     std::span<const std::int64_t> recv_per_source_expert, int ep_size, int chunks)
    : ep_size_(ep_size) {
  if (chunks < 1) refuse(fmt::format("chunks must be >= 1, got {}", chunks));
  if (ep_size < 1) refuse(fmt::format("the EP group size must be >= 1, got {}", ep_size));
  const auto experts = static_cast<std::int64_t>(send_per_expert.size());
  if (experts == 0 || experts % ep_size != 0) {
    refuse(fmt::format("{} experts do not split evenly over {} ranks", experts, ep_size));
  }
  local_experts_ = static_cast<int>(experts / ep_size);
  if (static_cast<std::int64_t>(recv_per_source_expert.size()) != experts) {
    refuse(fmt::format("{} receive counts: expected ep x local experts = {} x {}", recv_per_source_expert.size(),
                       ep_size, local_experts_));
  }
  auto negative = [](std::int64_t n) { return n < 0; };
  if (std::ranges::any_of(send_per_expert, negative) || std::ranges::any_of(recv_per_source_expert, negative)) {
    refuse("row counts must be >= 0");
  }
  chunks_.resize(static_cast<std::size_t>(chunks));
  lay_out_sends(send_per_expert);
  lay_out_receives(recv_per_source_expert);
}

void MoeExchangeLayout::lay_out_sends(std::span<const std::int64_t> send_per_expert) {
  send_per_expert_.assign(send_per_expert.begin(), send_per_expert.end());
  const int experts = static_cast<int>(send_per_expert.size());
  const int n_chunks = chunks();
  piece_base_.assign(static_cast<std::size_t>(experts) * n_chunks, 0);
  std::int64_t row = 0;
  for (int c = 0; c < n_chunks; ++c) {
    MoeChunkLayout& chunk = chunks_[static_cast<std::size_t>(c)];
    chunk.send_counts.assign(static_cast<std::size_t>(ep_size_), 0);
    chunk.send_displs.assign(static_cast<std::size_t>(ep_size_), 0);
    // Experts are numbered rank by rank, so walking them in order walks the destinations in order.
    for (int e = 0; e < experts; ++e) {
      const auto peer = static_cast<std::size_t>(e / local_experts_);
      if (e % local_experts_ == 0) chunk.send_displs[peer] = row;
      const std::int64_t rows = piece_rows(send_per_expert[static_cast<std::size_t>(e)], n_chunks, c);
      piece_base_[static_cast<std::size_t>(e) * n_chunks + c] = row;
      chunk.send_counts[peer] += rows;
      row += rows;
    }
  }
  send_rows_ = row;
}

void MoeExchangeLayout::lay_out_receives(std::span<const std::int64_t> recv) {
  const int n_chunks = chunks();
  auto count = [&](int source, int le) {
    return recv[static_cast<std::size_t>(source) * local_experts_ + static_cast<std::size_t>(le)];
  };
  std::int64_t row = 0;
  for (int c = 0; c < n_chunks; ++c) {
    MoeChunkLayout& chunk = chunks_[static_cast<std::size_t>(c)];
    chunk.first_recv_row = row;
    chunk.recv_counts.assign(static_cast<std::size_t>(ep_size_), 0);
    chunk.recv_displs.assign(static_cast<std::size_t>(ep_size_), 0);
    // Receive order: source-major. Expert order: expert-major over the same rows of the chunk.
    std::vector<std::int64_t> recv_row_of(static_cast<std::size_t>(ep_size_) * local_experts_);
    std::int64_t at = row;
    for (int s = 0; s < ep_size_; ++s) {
      chunk.recv_displs[static_cast<std::size_t>(s)] = at;
      for (int le = 0; le < local_experts_; ++le) {
        const std::int64_t rows = piece_rows(count(s, le), n_chunks, c);
        recv_row_of[static_cast<std::size_t>(s) * local_experts_ + static_cast<std::size_t>(le)] = at;
        chunk.recv_counts[static_cast<std::size_t>(s)] += rows;
        at += rows;
      }
    }
    chunk.expert_offsets.assign(static_cast<std::size_t>(local_experts_) + 1, 0);
    std::int64_t to = row;
    for (int le = 0; le < local_experts_; ++le) {
      chunk.expert_offsets[static_cast<std::size_t>(le)] = to;
      for (int s = 0; s < ep_size_; ++s) {
        const std::int64_t rows = piece_rows(count(s, le), n_chunks, c);
        if (rows == 0) continue;
        chunk.recv_to_expert.push_back(
            {.from = recv_row_of[static_cast<std::size_t>(s) * local_experts_ + static_cast<std::size_t>(le)],
             .to = to,
             .rows = rows});
        to += rows;
      }
    }
    chunk.expert_offsets.back() = to;
    chunk.recv_rows = at - row;
    row = at;
  }
  recv_rows_ = row;
}

std::int64_t MoeExchangeLayout::send_row(int expert, std::int64_t position) const {
  const std::int64_t rows = send_per_expert_[static_cast<std::size_t>(expert)];
  const int n_chunks = chunks();
  // The piece holding `position`: the last c whose piece begins at or before it (that piece is
  // not empty, as the next one begins after it).
  const auto c = static_cast<int>(((position + 1) * n_chunks + rows - 1) / rows - 1);
  return piece_base_[static_cast<std::size_t>(expert) * n_chunks + c] + (position - moe_piece_begin(rows, n_chunks, c));
}

}  // namespace braid::parallel
