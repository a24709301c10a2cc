#include "braid/torch/paged_kv_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "braid/base/error.h"

namespace braid::torch {
namespace {

constexpr const char* kOp = "paged kv cache";

::torch::Dtype dtype_of(const KvBlockLayout& layout, int rank) {
  if (layout.element_bytes == 4) return ::torch::kFloat32;
  if (layout.element_bytes == 2) return ::torch::kBFloat16;
  throw InvalidArgument({.rank = rank, .op = kOp},
                        fmt::format("element_bytes {}: only 4 (f32) and 2 (bf16) are supported", layout.element_bytes));
}

}  // namespace

PagedKvCache::PagedKvCache(const KvBlockLayout& layout, HeadRange heads, std::int64_t num_blocks, int rank)
    : layout_(layout), heads_(heads), num_blocks_(num_blocks), rank_(rank) {
  layout_.validate(kOp);
  dtype_ = dtype_of(layout_, rank_);
  if (heads_.first < 0 || heads_.count < 1 || heads_.first + heads_.count > layout_.kv_heads) {
    throw InvalidArgument({.rank = rank_, .op = kOp},
                          fmt::format("head range [{}, {}) is not inside the model's {} KV heads", heads_.first,
                                      heads_.first + heads_.count, layout_.kv_heads));
  }
  if (num_blocks_ < 1) {
    throw InvalidArgument({.rank = rank_, .op = kOp}, fmt::format("a pool of {} blocks: need at least 1", num_blocks_));
  }
  pools_.reserve(static_cast<std::size_t>(layout_.layers));
  for (int l = 0; l < layout_.layers; ++l) {
    // Zeroed so that the unused slots of a last block are deterministic bytes (a transfer moves them).
    pools_.push_back(::torch::zeros({num_blocks_, 2, heads_.count, layout_.block_tokens, layout_.head_dim}, dtype_));
  }
  free_.reserve(static_cast<std::size_t>(num_blocks_));
  for (std::int64_t b = num_blocks_ - 1; b >= 0; --b) free_.push_back(b);
}

void PagedKvCache::add_sequence(SequenceId id) {
  if (!sequences_.emplace(id, Sequence{}).second) {
    throw InvalidArgument({.rank = rank_, .op = kOp}, fmt::format("sequence {} is already in the cache", id));
  }
}

const PagedKvCache::Sequence& PagedKvCache::sequence(SequenceId id, const char* op) const {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) {
    throw InvalidArgument({.rank = rank_, .op = kOp}, fmt::format("{}: no sequence {} in the cache", op, id));
  }
  return it->second;
}

PagedKvCache::Sequence& PagedKvCache::sequence(SequenceId id, const char* op) {
  return const_cast<Sequence&>(static_cast<const PagedKvCache&>(*this).sequence(id, op));
}

void PagedKvCache::extend(SequenceId id, std::int64_t tokens) {
  Sequence& s = sequence(id, "extend");
  if (tokens < 0) {
    throw InvalidArgument({.rank = rank_, .op = kOp}, fmt::format("extend sequence {} by {} tokens", id, tokens));
  }
  std::int64_t needed = layout_.blocks_for(s.length + tokens) - static_cast<std::int64_t>(s.blocks.size());
  if (needed > free_blocks()) {
    throw InvalidArgument({.rank = rank_, .op = kOp},
                          fmt::format("sequence {} needs {} more blocks for {} tokens, the pool has {} free of {} "
                                      "({}-token blocks)",
                                      id, needed, s.length + tokens, free_blocks(), num_blocks_, layout_.block_tokens));
  }
  for (std::int64_t i = 0; i < needed; ++i) {
    s.blocks.push_back(free_.back());
    free_.pop_back();
  }
  s.length += tokens;
}

std::int64_t PagedKvCache::length(SequenceId id) const { return sequence(id, "length").length; }

const std::vector<std::int64_t>& PagedKvCache::block_table(SequenceId id) const {
  return sequence(id, "block_table").blocks;
}

void PagedKvCache::free(SequenceId id) {
  Sequence& s = sequence(id, "free");
  // Reverse order, so that the next sequence gets the same blocks in the same order.
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) free_.push_back(*it);
  sequences_.erase(id);
}

int PagedKvCache::check_layer(int layer) const {
  if (layer < 0 || layer >= layout_.layers) {
    throw InvalidArgument({.rank = rank_, .op = kOp}, fmt::format("layer {} of a {}-layer cache", layer, layout_.layers));
  }
  return layer;
}

void PagedKvCache::write(SequenceId id, int layer, std::int64_t first, const ::torch::Tensor& k,
                         const ::torch::Tensor& v) {
  const Sequence& s = sequence(id, "write");
  ::torch::Tensor& pool = pools_[static_cast<std::size_t>(check_layer(layer))];
  std::vector<std::int64_t> expected{heads_.count, k.dim() == 3 ? k.size(1) : -1, layout_.head_dim};
  if (k.dim() != 3 || k.sizes() != v.sizes() || k.sizes().vec() != expected) {
    throw InvalidArgument({.rank = rank_, .op = kOp},
                          fmt::format("write sequence {} layer {}: K {} and V {} must both be [{} heads, tokens, {}]", id,
                                      layer, fmt::join(k.sizes(), "x"), fmt::join(v.sizes(), "x"), heads_.count,
                                      layout_.head_dim));
  }
  std::int64_t n = k.size(1);
  if (first < 0 || first + n > s.length) {
    throw InvalidArgument({.rank = rank_, .op = kOp},
                          fmt::format("write sequence {} layer {}: positions [{}, {}) outside its {} tokens", id, layer,
                                      first, first + n, s.length));
  }
  ::torch::NoGradGuard no_grad;
  using ::torch::indexing::Slice;
  const std::int64_t b = layout_.block_tokens;
  // One copy per block the range touches: [heads, slots, head_dim] slices of K and of V.
  for (std::int64_t pos = first; pos < first + n;) {
    std::int64_t block = s.blocks[static_cast<std::size_t>(pos / b)], slot = pos % b;
    std::int64_t take = std::min(b - slot, first + n - pos);
    for (std::int64_t kv = 0; kv < 2; ++kv) {
      const ::torch::Tensor& from = kv == 0 ? k : v;
      pool.index({block, kv, Slice(), Slice(slot, slot + take)}).copy_(from.narrow(1, pos - first, take));
    }
    pos += take;
  }
}

::torch::Tensor PagedKvCache::gather(SequenceId id, int layer, std::int64_t k_or_v) const {
  const Sequence& s = sequence(id, "read");
  const ::torch::Tensor& pool = pools_[static_cast<std::size_t>(check_layer(layer))];
  ::torch::Tensor table = ::torch::tensor(s.blocks, ::torch::kInt64);
  // [blocks, heads, slots, head_dim] -> [heads, blocks * slots, head_dim], the first `length`.
  ::torch::Tensor blocks = pool.index_select(0, table).select(1, k_or_v);
  return blocks.permute({1, 0, 2, 3}).reshape({heads_.count, -1, layout_.head_dim}).narrow(1, 0, s.length);
}

KvBlockSpan PagedKvCache::block_span(int layer, std::int64_t block) {
  ::torch::Tensor& pool = pools_[static_cast<std::size_t>(check_layer(layer))];
  if (block < 0 || block >= num_blocks_) {
    throw InvalidArgument({.rank = rank_, .op = kOp}, fmt::format("block {} of a {}-block pool", block, num_blocks_));
  }
  std::int64_t bytes = layout_.block_bytes(heads_.count);
  return {static_cast<std::byte*>(pool.data_ptr()) + block * bytes, bytes};
}

}  // namespace braid::torch
