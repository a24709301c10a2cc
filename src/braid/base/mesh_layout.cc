#include "braid/base/mesh_layout.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

namespace {

constexpr const char* kOp = "mesh_layout";

std::string describe_axes(const std::vector<MeshAxis>& axes) {
  if (axes.empty()) return "(no axes)";
  std::string out;
  for (const MeshAxis& a : axes) {
    if (!out.empty()) out += " x ";
    out += fmt::format("{}={}", a.name, a.size);
  }
  return out;
}

[[noreturn]] void fail(const std::vector<MeshAxis>& axes, const std::string& why) {
  throw InvalidArgument({.op = kOp}, fmt::format("layout {}: {}", describe_axes(axes), why));
}

// Checks names and sizes, then that they multiply to the world. The product is computed in
// 64 bits and stops growing once past INT_MAX, so huge sizes cannot overflow into a false match.
void validate(const std::vector<MeshAxis>& axes, int world) {
  if (world < 1) fail(axes, fmt::format("the world must hold at least one rank, not {}", world));
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  std::set<std::string> seen;
  std::int64_t product = 1;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const MeshAxis& a = axes[i];
    if (a.name.empty()) fail(axes, fmt::format("axis {} has an empty name", i));
    if (!seen.insert(a.name).second) fail(axes, fmt::format("axis {} appears twice", a.name));
    if (a.size < 1) fail(axes, fmt::format("axis {} has size {}; every axis needs size >= 1", a.name, a.size));
    if (product <= kIntMax) product *= a.size;
  }
  if (product != world) {
    const std::string ranks = product > kIntMax ? fmt::format("more than {}", kIntMax) : std::to_string(product);
    throw InvalidArgument({.op = kOp}, fmt::format("layout {} has {} ranks but the world has {}", describe_axes(axes),
                                                   ranks, world));
  }
}

}  // namespace

MeshLayout::MeshLayout(std::vector<MeshAxis> axes, int world) : axes_(std::move(axes)), world_(world) {
  validate(axes_, world_);
}

bool MeshLayout::has(std::string_view axis) const {
  for (const MeshAxis& a : axes_) {
    if (a.name == axis) return true;
  }
  return false;
}

int MeshLayout::axis_index(std::string_view axis) const {
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].name == axis) return static_cast<int>(i);
  }
  throw InvalidArgument({.op = kOp}, fmt::format("layout {} has no axis {}", describe(), axis));
}

int MeshLayout::size(std::string_view axis) const { return axes_[static_cast<std::size_t>(axis_index(axis))].size; }

void MeshLayout::check_rank(int rank) const {
  if (rank < 0 || rank >= world_) {
    throw InvalidArgument({.op = kOp}, fmt::format("layout {}: rank {} is outside 0..{}", describe(), rank, world_ - 1));
  }
}

std::vector<int> MeshLayout::coordinates(int rank) const {
  check_rank(rank);
  std::vector<int> out(axes_.size());
  // Innermost last: peel the fastest-varying axis off first.
  for (std::size_t i = axes_.size(); i-- > 0;) {
    out[i] = rank % axes_[i].size;
    rank /= axes_[i].size;
  }
  return out;
}

int MeshLayout::coordinate(int rank, std::string_view axis) const {
  const int i = axis_index(axis);
  return coordinates(rank)[static_cast<std::size_t>(i)];
}

int MeshLayout::rank_of(const std::vector<int>& coordinates) const {
  if (coordinates.size() != axes_.size()) {
    throw InvalidArgument({.op = kOp}, fmt::format("layout {}: {} coordinates given for {} axes", describe(),
                                                   coordinates.size(), axes_.size()));
  }
  int rank = 0;
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    const int c = coordinates[i];
    if (c < 0 || c >= axes_[i].size) {
      throw InvalidArgument({.op = kOp}, fmt::format("layout {}: coordinate {} of axis {} is outside 0..{}", describe(),
                                                     c, axes_[i].name, axes_[i].size - 1));
    }
    rank = rank * axes_[i].size + c;
  }
  return rank;
}

std::vector<bool> MeshLayout::axis_mask(const std::vector<std::string>& axes) const {
  std::vector<bool> mask(axes_.size(), false);
  for (const std::string& name : axes) mask[static_cast<std::size_t>(axis_index(name))] = true;
  return mask;
}

int MeshLayout::index_over(const std::vector<int>& coordinates, const std::vector<bool>& mask, bool selected) const {
  int index = 0;
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    if (mask[i] == selected) index = index * axes_[i].size + coordinates[i];
  }
  return index;
}

int MeshLayout::group_size(const std::vector<std::string>& axes) const {
  const std::vector<bool> mask = axis_mask(axes);
  int size = 1;
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    if (mask[i]) size *= axes_[i].size;
  }
  return size;
}

int MeshLayout::group_count(const std::vector<std::string>& axes) const { return world_ / group_size(axes); }

int MeshLayout::group_index(int rank, const std::vector<std::string>& axes) const {
  const std::vector<bool> mask = axis_mask(axes);
  return index_over(coordinates(rank), mask, false);
}

int MeshLayout::position_in_group(int rank, const std::vector<std::string>& axes) const {
  const std::vector<bool> mask = axis_mask(axes);
  return index_over(coordinates(rank), mask, true);
}

std::vector<int> MeshLayout::group(int rank, const std::vector<std::string>& axes) const {
  const std::vector<bool> mask = axis_mask(axes);
  const std::vector<int> base = coordinates(rank);
  const int size = group_size(axes);
  std::vector<int> members;
  members.reserve(static_cast<std::size_t>(size));
  for (int position = 0; position < size; ++position) {
    // Write `position` row-major into the group's axes, keeping the other coordinates.
    std::vector<int> c = base;
    int rest = position;
    for (std::size_t i = axes_.size(); i-- > 0;) {
      if (!mask[i]) continue;
      c[i] = rest % axes_[i].size;
      rest /= axes_[i].size;
    }
    members.push_back(rank_of(c));
  }
  return members;
}

std::string MeshLayout::describe() const { return describe_axes(axes_); }

namespace {

void extend_factorizations(int rest, int axes_left, std::vector<int>& prefix, std::vector<std::vector<int>>& out) {
  if (axes_left == 1) {
    prefix.push_back(rest);
    out.push_back(prefix);
    prefix.pop_back();
    return;
  }
  for (int d = 1; d <= rest; ++d) {
    if (rest % d != 0) continue;
    prefix.push_back(d);
    extend_factorizations(rest / d, axes_left - 1, prefix, out);
    prefix.pop_back();
  }
}

}  // namespace

std::vector<std::vector<int>> mesh_factorizations(int world, int axes) {
  if (world < 1 || axes < 1) {
    throw InvalidArgument({.op = "mesh_factorizations"},
                          fmt::format("need world >= 1 and axes >= 1, got world {} and axes {}", world, axes));
  }
  std::vector<std::vector<int>> out;
  std::vector<int> prefix;
  extend_factorizations(world, axes, prefix, out);
  return out;
}

}  // namespace braid
