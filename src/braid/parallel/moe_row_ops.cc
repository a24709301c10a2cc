#include "braid/parallel/moe_row_ops.h"

#include <cstring>

namespace braid::parallel::moe_rows {
namespace {

template <class T>
void weighted_sum_of(const T* rows, std::span<const std::int64_t> row_of_choice, const float* gates,
                     std::int64_t tokens, int top_k, std::int64_t hidden, T* out) {
  const auto h = static_cast<std::size_t>(hidden);
  for (std::int64_t t = 0; t < tokens; ++t) {
    T* acc = out + static_cast<std::size_t>(t) * h;
    for (std::size_t i = 0; i < h; ++i) acc[i] = T(0);
    for (int j = 0; j < top_k; ++j) {
      const auto choice = static_cast<std::size_t>(t * top_k + j);
      const std::int64_t row = row_of_choice[choice];
      if (row < 0) continue;
      const T* y = rows + static_cast<std::size_t>(row) * h;
      if (gates == nullptr) {
        for (std::size_t i = 0; i < h; ++i) acc[i] = acc[i] + y[i];
      } else {
        const T w = static_cast<T>(gates[choice]);
        for (std::size_t i = 0; i < h; ++i) acc[i] = acc[i] + w * y[i];
      }
    }
  }
}

}  // namespace

void gather(const void* src, std::span<const std::int64_t> index, std::int64_t row_bytes, void* dst) {
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dst);
  const auto bytes = static_cast<std::size_t>(row_bytes);
  for (std::size_t i = 0; i < index.size(); ++i) {
    std::memcpy(to + i * bytes, from + static_cast<std::size_t>(index[i]) * bytes, bytes);
  }
}

void move_blocks(const void* src, std::span<const MoeRowBlock> blocks, std::int64_t row_bytes, void* dst,
                 bool backward) {
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dst);
  for (const MoeRowBlock& b : blocks) {
    const std::int64_t src_row = backward ? b.to : b.from;
    const std::int64_t dst_row = backward ? b.from : b.to;
    std::memcpy(to + dst_row * row_bytes, from + src_row * row_bytes, static_cast<std::size_t>(b.rows * row_bytes));
  }
}

void weighted_sum(DType dtype, const void* rows, std::span<const std::int64_t> row_of_choice, const float* gates,
                  std::int64_t tokens, int top_k, std::int64_t hidden, void* out) {
  if (dtype == DType::kF64) {
    weighted_sum_of(static_cast<const double*>(rows), row_of_choice, gates, tokens, top_k, hidden,
                    static_cast<double*>(out));
  } else {
    weighted_sum_of(static_cast<const float*>(rows), row_of_choice, gates, tokens, top_k, hidden,
                    static_cast<float*>(out));
  }
}

void scatter_choices(const void* rows, std::span<const std::int64_t> row_of_choice, std::int64_t row_bytes, void* out) {
  const auto* from = static_cast<const std::byte*>(rows);
  auto* to = static_cast<std::byte*>(out);
  const auto bytes = static_cast<std::size_t>(row_bytes);
  for (std::size_t i = 0; i < row_of_choice.size(); ++i) {
    if (row_of_choice[i] < 0) {
      std::memset(to + i * bytes, 0, bytes);
    } else {
      std::memcpy(to + i * bytes, from + static_cast<std::size_t>(row_of_choice[i]) * bytes, bytes);
    }
  }
}

}  // namespace braid::parallel::moe_rows
