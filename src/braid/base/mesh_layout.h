// The process mesh's pure arithmetic: ranks laid out row-major over named axes (dp, tp, pp,
// and later ep, cp), rank <-> coordinate conversion, and the groups of ranks that differ only
// along some axes. It lives in base/ because two layers need the one implementation:
// parallel/ProcessMesh builds its sub-communicators from it, and plan/'s layout advice
// enumerates layouts with mesh_factorizations (plan/ depends on base/ only).
//
//   MeshLayout layout({{"dp", 2}, {"pp", 2}, {"tp", 2}}, /*world=*/8);   // outermost first
//   layout.coordinates(5);          // {1, 0, 1}: dp 1, pp 0, tp 1
//   layout.group(5, {"tp"});        // {4, 5}: the ranks that differ from 5 only in tp
//   layout.group(5, {"pp", "tp"});  // {4, 5, 6, 7}: its model-parallel group
//
// Order: axes are listed outermost first and the innermost axis varies fastest, so with
// {dp, pp, tp} the ranks of one TP group are consecutive and stay on one host whenever the
// host holds at least tp consecutive ranks. With tp = 1 that layout is braid-train's pipeline
// layout: world rank r is stage r % pp.
//
// Every bad input (a layout whose sizes do not multiply to the world, a size < 1, an empty or
// repeated axis name, an unknown axis, a rank or coordinate out of range) throws
// InvalidArgument naming the whole layout ("layout dp=3 x pp=2 x tp=2 has 12 ranks but the
// world has 8").
//
// Thread-safety: a MeshLayout is an immutable value; any thread may call its const methods.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace braid {

struct MeshAxis {
  std::string name;  // "dp", "tp", "pp", ...
  int size = 1;
};

class MeshLayout {
 public:
  // `axes` outermost first; their sizes must multiply to `world`.
  MeshLayout(std::vector<MeshAxis> axes, int world);

  int world() const { return world_; }
  const std::vector<MeshAxis>& axes() const { return axes_; }
  bool has(std::string_view axis) const;
  // The size of a named axis; an axis not in the layout is InvalidArgument (use has() first:
  // silently answering 1 would hide a misspelt name).
  int size(std::string_view axis) const;

  // One coordinate per axis, in the order of axes().
  std::vector<int> coordinates(int rank) const;
  int coordinate(int rank, std::string_view axis) const;
  int rank_of(const std::vector<int>& coordinates) const;

  // The ranks that share every coordinate of `rank` except those along `axes` (a set: order
  // and repeats do not matter), ordered by their position in the group: row-major over the
  // group's axes in layout order. No axes: just {rank}; every axis: the whole world.
  std::vector<int> group(int rank, const std::vector<std::string>& axes) const;
  int group_size(const std::vector<std::string>& axes) const;
  // How many disjoint groups of that kind cover the world (world / group_size).
  int group_count(const std::vector<std::string>& axes) const;
  // Which group of that kind `rank` is in, 0..group_count-1 (a split color), and its position
  // inside it, 0..group_size-1 (a split key): row-major over the other axes and over `axes`.
  int group_index(int rank, const std::vector<std::string>& axes) const;
  int position_in_group(int rank, const std::vector<std::string>& axes) const;

  // "dp=2 x pp=2 x tp=2"; "(no axes)" for an empty layout of one rank.
  std::string describe() const;

 private:
  int axis_index(std::string_view axis) const;
  // included[i]: axis i is one of `axes` (throws on an unknown name).
  std::vector<bool> axis_mask(const std::vector<std::string>& axes) const;
  // Row-major index of `coordinates` over the axes where mask[i] == selected.
  int index_over(const std::vector<int>& coordinates, const std::vector<bool>& mask, bool selected) const;
  void check_rank(int rank) const;

  std::vector<MeshAxis> axes_;
  int world_ = 1;
};

// Every ordered tuple of `axes` positive integers whose product is `world`, in lexicographic
// order (first element ascending, then the second, ...): for (4, 2) that is {1,4}, {2,2},
// {4,1}. Throws InvalidArgument for world < 1 or axes < 1.
std::vector<std::vector<int>> mesh_factorizations(int world, int axes);

}  // namespace braid
