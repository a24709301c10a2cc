#include "braid/engine/shard_layout.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::engine {

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

[[noreturn]] void reject(const std::string& why) { throw InvalidArgument({.op = "shard layout"}, why); }

std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) reject(fmt::format("{} overflows 64 bits", what));
  return r;
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) reject(fmt::format("{} overflows 64 bits", what));
  return r;
}

std::int64_t round_up(std::int64_t x, std::int64_t q, const char* what) {
  return checked_mul((x / q) + (x % q != 0), q, what);
}

bool power_of_two(std::size_t x) { return x != 0 && (x & (x - 1)) == 0; }

void check_options(const ShardLayoutOptions& o) {
  if (o.world_size < 1) reject(fmt::format("world_size {} must be at least 1", o.world_size));
  if (!power_of_two(o.alignment_bytes) || o.alignment_bytes > (std::size_t{1} << 30)) {
    reject(fmt::format("alignment_bytes {} is not a power of two in [1, 2^30]", o.alignment_bytes));
  }
  if (o.shard_elements_multiple < 1 || o.shard_elements_multiple > (std::int64_t{1} << 30)) {
    reject(fmt::format("shard_elements_multiple {} is outside [1, 2^30]", o.shard_elements_multiple));
  }
}

void check_param(std::size_t i, const ShardParamInfo& p, const ShardLayoutOptions& o) {
  if (p.count < 0) reject(fmt::format("param {} ('{}'): count {} is negative", i, p.name, p.count));
  if (p.element_bytes == 0) reject(fmt::format("param {} ('{}'): element_bytes is 0", i, p.name));
  if (o.alignment_bytes % p.element_bytes != 0) {
    reject(fmt::format("param {} ('{}'): alignment_bytes {} is not a multiple of element_bytes {}", i, p.name,
                       o.alignment_bytes, p.element_bytes));
  }
  if (p.group < 0) reject(fmt::format("param {} ('{}'): group {} is negative", i, p.name, p.group));
  if (p.count > kMax / static_cast<std::int64_t>(p.element_bytes)) {
    reject(fmt::format("param {} ('{}'): {} elements of {} bytes overflow", i, p.name, p.count, p.element_bytes));
  }
}

// Offsets, shard size and padding of one buffer whose `params` are already listed.
void lay_out_buffer(FlatBuffer& b, std::span<const ShardParamInfo> params, const ShardLayoutOptions& o) {
  const auto align = static_cast<std::int64_t>(o.alignment_bytes / b.element_bytes);
  std::int64_t cursor = 0;
  std::int64_t used = 0;
  std::int64_t counted = 0;
  for (int id : b.params) {
    const std::int64_t count = params[static_cast<std::size_t>(id)].count;
    b.offsets.push_back(cursor);
    if (count == 0) continue;
    used = checked_add(cursor, count, "a flat buffer's size");
    counted += count;  // <= used: no overflow
    cursor = round_up(used, align, "a flat buffer's size");
  }
  const std::int64_t n = o.world_size;
  const std::int64_t quantum = std::lcm(align, o.shard_elements_multiple);
  b.used_elements = used;
  b.shard_elements = round_up(used / n + (used % n != 0), quantum, "a shard's size");
  b.elements = checked_mul(b.shard_elements, n, "a flat buffer's size");
  checked_mul(b.elements, static_cast<std::int64_t>(b.element_bytes), "a flat buffer's byte size");
  b.padding_elements = b.elements - counted;
  b.tail_padding_elements = b.elements - used;
}

// Cuts each parameter of `b` at the shard boundaries.
void cut_into_pieces(const FlatBuffer& b, std::span<const ShardParamInfo> params, int world_size,
                     std::vector<std::vector<ShardPiece>>& pieces_of, std::vector<std::vector<ShardPiece>>& shard_pieces) {
  shard_pieces.assign(static_cast<std::size_t>(world_size), {});
  for (std::size_t slot = 0; slot < b.params.size(); ++slot) {
    const int id = b.params[slot];
    const std::int64_t begin = b.offsets[slot];
    const std::int64_t end = begin + params[static_cast<std::size_t>(id)].count;
    for (std::int64_t x = begin; x < end;) {
      const auto rank = static_cast<int>(x / b.shard_elements);
      const std::int64_t shard_end = (rank + 1) * b.shard_elements;
      const ShardPiece piece{.param = id, .rank = rank, .param_offset = x - begin,
                             .shard_offset = x - rank * b.shard_elements, .length = std::min(end, shard_end) - x};
      pieces_of[static_cast<std::size_t>(id)].push_back(piece);
      shard_pieces[static_cast<std::size_t>(rank)].push_back(piece);
      x += piece.length;
    }
  }
}

void check_same_params(const ShardLayout& from, const ShardLayout& to) {
  if (from.params.size() != to.params.size()) {
    reject(fmt::format("reshard: the source layout has {} params, the target {}", from.params.size(), to.params.size()));
  }
  for (std::size_t i = 0; i < from.params.size(); ++i) {
    const ShardParamInfo& a = from.params[i];
    const ShardParamInfo& b = to.params[i];
    if (a.name != b.name) reject(fmt::format("reshard: param {} is '{}' in the source, '{}' in the target", i, a.name, b.name));
    if (a.count != b.count) {
      reject(fmt::format("reshard: param {} ('{}') has {} elements in the source, {} in the target", i, a.name, a.count, b.count));
    }
    if (a.element_bytes != b.element_bytes) {
      reject(fmt::format("reshard: param {} ('{}') has {}-byte elements in the source, {}-byte in the target", i, a.name,
                         a.element_bytes, b.element_bytes));
    }
  }
}

// Appends `c` to `run`, merging it into the last copy when both sides continue it.
void append_coalesced(std::vector<ShardCopy>& run, const ShardCopy& c) {
  if (!run.empty()) {
    ShardCopy& last = run.back();
    if (last.source_buffer == c.source_buffer && last.source_rank == c.source_rank &&
        last.source_offset + last.length == c.source_offset && last.target_offset + last.length == c.target_offset) {
      last.length += c.length;
      return;
    }
  }
  run.push_back(c);
}

}  // namespace

ShardLayout plan_shard_layout(std::span<const ShardParamInfo> params, const ShardLayoutOptions& options) {
  check_options(options);
  if (params.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) reject("too many params");
  for (std::size_t i = 0; i < params.size(); ++i) check_param(i, params[i], options);

  ShardLayout layout{.options = options,
                     .params = {params.begin(), params.end()},
                     .buffer_of = std::vector<int>(params.size(), -1),
                     .offset_of = std::vector<std::int64_t>(params.size(), 0),
                     .pieces_of = std::vector<std::vector<ShardPiece>>(params.size())};
  std::map<std::pair<int, std::size_t>, int> buffer_index;  // (group, element size) -> buffer
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto [it, fresh] = buffer_index.try_emplace({params[i].group, params[i].element_bytes},
                                                static_cast<int>(layout.buffers.size()));
    if (fresh) layout.buffers.push_back({.group = params[i].group, .element_bytes = params[i].element_bytes});
    layout.buffer_of[i] = it->second;
    layout.buffers[static_cast<std::size_t>(it->second)].params.push_back(static_cast<int>(i));
  }
  for (FlatBuffer& b : layout.buffers) {
    lay_out_buffer(b, params, options);
    for (std::size_t slot = 0; slot < b.params.size(); ++slot) {
      layout.offset_of[static_cast<std::size_t>(b.params[slot])] = b.offsets[slot];
    }
    cut_into_pieces(b, params, options.world_size, layout.pieces_of, b.shard_pieces);
  }
  return layout;
}

std::int64_t ReshardPlan::copied_elements() const {
  std::int64_t total = 0;
  for (const auto& buffer : copies) {
    for (const auto& rank : buffer) {
      for (const ShardCopy& c : rank) total += c.length;
    }
  }
  return total;
}

namespace {

// The plan, with `source_of[p]` the id in `from` of `to`'s parameter p (both checked alike).
ReshardPlan plan_with(const ShardLayout& from, const ShardLayout& to, const std::vector<std::size_t>& source_of) {
  ReshardPlan plan;
  for (const FlatBuffer& b : to.buffers) plan.copies.emplace_back(b.shard_pieces.size());
  // Parameters in model order are in offset order inside every target buffer, so each target
  // shard's copies come out sorted by target offset and can be coalesced as they are made.
  for (std::size_t p = 0; p < to.params.size(); ++p) {
    const std::vector<ShardPiece>& sources = from.pieces_of[source_of[p]];
    const std::vector<ShardPiece>& targets = to.pieces_of[p];
    const int source_buffer = from.buffer_of[source_of[p]];
    auto& target_shards = plan.copies[static_cast<std::size_t>(to.buffer_of[p])];
    std::size_t s = 0;
    std::size_t t = 0;
    while (s < sources.size() && t < targets.size()) {  // merge two partitions of [0, count)
      const ShardPiece& a = sources[s];
      const ShardPiece& b = targets[t];
      const std::int64_t lo = std::max(a.param_offset, b.param_offset);
      const std::int64_t hi = std::min(a.param_offset + a.length, b.param_offset + b.length);
      append_coalesced(target_shards[static_cast<std::size_t>(b.rank)],
                       {.source_buffer = source_buffer, .source_rank = a.rank,
                        .source_offset = a.shard_offset + (lo - a.param_offset),
                        .target_offset = b.shard_offset + (lo - b.param_offset), .length = hi - lo});
      if (a.param_offset + a.length == hi) ++s;
      if (b.param_offset + b.length == hi) ++t;
    }
  }
  return plan;
}

std::map<std::string, std::size_t> ids_by_name(const ShardLayout& layout, const char* which) {
  std::map<std::string, std::size_t> ids;
  for (std::size_t i = 0; i < layout.params.size(); ++i) {
    if (!ids.emplace(layout.params[i].name, i).second) {
      reject(fmt::format("reshard by name: param '{}' appears twice in the {}", layout.params[i].name, which));
    }
  }
  return ids;
}

}  // namespace

ReshardPlan plan_reshard(const ShardLayout& from, const ShardLayout& to) {
  check_same_params(from, to);
  std::vector<std::size_t> same(to.params.size());
  std::iota(same.begin(), same.end(), std::size_t{0});
  return plan_with(from, to, same);
}

ReshardPlan plan_reshard_by_name(const ShardLayout& from, const ShardLayout& to) {
  std::map<std::string, std::size_t> source = ids_by_name(from, "source");
  ids_by_name(to, "target");
  std::vector<std::size_t> source_of;
  for (const ShardParamInfo& b : to.params) {
    auto it = source.find(b.name);
    if (it == source.end()) reject(fmt::format("reshard by name: param '{}' of the target is not in the source", b.name));
    const ShardParamInfo& a = from.params[it->second];
    if (a.count != b.count || a.element_bytes != b.element_bytes) {
      reject(fmt::format("reshard by name: param '{}' has {} elements of {} bytes in the source, {} of {} in the target",
                         b.name, a.count, a.element_bytes, b.count, b.element_bytes));
    }
    source_of.push_back(it->second);
  }
  if (from.params.size() != to.params.size()) {
    reject(fmt::format("reshard by name: the source layout has {} params, the target {}", from.params.size(),
                       to.params.size()));
  }
  return plan_with(from, to, source_of);
}

std::string describe(const ShardLayout& layout) {
  const ShardLayoutOptions& o = layout.options;
  std::string out = fmt::format("shard layout: {} params, world {}, alignment {} bytes, shard multiple {}, {} buffers\n",
                                layout.params.size(), o.world_size, o.alignment_bytes, o.shard_elements_multiple,
                                layout.buffers.size());
  for (std::size_t i = 0; i < layout.buffers.size(); ++i) {
    const FlatBuffer& b = layout.buffers[i];
    out += fmt::format("buffer {}: group {}, {}-byte elements, {} x {} elements, {} used, {} padding ({} at the tail)\n  params [",
                       i, b.group, b.element_bytes, o.world_size, b.shard_elements, b.used_elements, b.padding_elements,
                       b.tail_padding_elements);
    for (std::size_t slot = 0; slot < b.params.size(); ++slot) {
      out += fmt::format("{}{}@{}", slot == 0 ? "" : " ", layout.params[static_cast<std::size_t>(b.params[slot])].name,
                         b.offsets[slot]);
    }
    out += "]\n";
  }
  return out;
}

std::string describe(const ReshardPlan& plan) {
  std::string out = fmt::format("reshard plan: {} elements\n", plan.copied_elements());
  for (std::size_t b = 0; b < plan.copies.size(); ++b) {
    for (std::size_t r = 0; r < plan.copies[b].size(); ++r) {
      out += fmt::format("buffer {} rank {}:", b, r);
      for (const ShardCopy& c : plan.copies[b][r]) {
        out += fmt::format(" [{}.{}@{} -> @{} x{}]", c.source_buffer, c.source_rank, c.source_offset, c.target_offset,
                           c.length);
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace braid::engine
