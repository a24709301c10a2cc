// braid::parallel::ProcessMesh: a communicator's ranks laid out on named axes (dp, pp, tp,
// ...) by a MeshLayout (base/mesh_layout.h), with one sub-communicator per axis and per
// combination of axes a user needs.
//
//   braid::Communicator world = braid::Communicator::init();        // 8 ranks
//   braid::parallel::ProcessMesh mesh(world, {{"dp", 2}, {"pp", 2}, {"tp", 2}});  // outermost 1st
//   mesh.group("tp");            // this rank's tensor-parallel group (2 consecutive ranks)
//   mesh.data_parallel();        // the group gradients are averaged over (dp)
//   mesh.model_parallel();       // the group a global gradient norm is summed over (tp x pp)
//   mesh.coordinate("pp");       // this rank's pipeline stage
//
// Groups: the ranks that share every coordinate except those of the group's axes, ordered by
// their position in the group (row-major over its axes), so rank i of group("tp") holds the
// i-th TP shard everywhere. Created at construction: one per axis, model_parallel (the tp and
// pp axes the layout has), data_parallel (its dp axis), and MeshOptions::groups.
//
// Hosts: a TP group exchanges activations every layer, so it must sit on one host. The
// constructor refuses (InvalidArgument on every rank) a layout whose TP group spans hosts,
// unless MeshOptions::allow_tp_across_hosts, where it warns once and goes on. The check reads
// only the communicator's topology, which every rank knows whole, so all ranks reach the same
// verdict: none waits in a split while another throws.
//
// Contract: the constructor is collective over `world` (one split per group, in the same
// order on every rank), and every rank must pass the same layout and options.
// Thread-safety: as Communicator's: one thread at a time per group communicator.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "braid/base/mesh_layout.h"
#include "braid/comm/communicator.h"

namespace braid::parallel {

struct MeshOptions {
  // Accept a TP group whose ranks are on different hosts (slow: TP traffic crosses the
  // network every layer), with a warning on stderr. Default false: such a layout is refused.
  bool allow_tp_across_hosts = false;
  // Further combined groups to create, each a set of axis names ({"tp", "dp"}); every axis and
  // model_parallel / data_parallel are always created. Default: none.
  std::vector<std::vector<std::string>> groups;
};

class ProcessMesh {
 public:
  // The layout must hold world.size() ranks. Collective over `world`.
  ProcessMesh(Communicator& world, MeshLayout layout, MeshOptions options = {});
  // Builds the layout over world.size() ranks; a bad one is InvalidArgument naming the rank.
  ProcessMesh(Communicator& world, std::vector<MeshAxis> axes, MeshOptions options = {});

  const MeshLayout& layout() const { return layout_; }
  int rank() const { return rank_; }  // in the world communicator
  std::vector<int> coordinates() const { return layout_.coordinates(rank_); }
  int coordinate(const std::string& axis) const { return layout_.coordinate(rank_, axis); }
  // The size of a named axis, 1 for an axis the layout does not have (a mesh without "pp" is
  // one pipeline stage).
  int size(const std::string& axis) const { return layout_.has(axis) ? layout_.size(axis) : 1; }

  // The group along one axis or a set of axes (order and repeats do not matter). Asking for a
  // combination not created at construction is InvalidArgument listing those created.
  Communicator& group(const std::string& axis);
  Communicator& group(const std::vector<std::string>& axes);
  // group({"tp", "pp"}): without it the braced list is ambiguous (std::string has an
  // iterator-pair constructor that two string literals match).
  Communicator& group(std::initializer_list<std::string> axes) { return group(std::vector<std::string>(axes)); }
  // tp x pp (those the layout has): where a model-parallel shard's partial sums (the global
  // gradient norm) are completed.
  Communicator& model_parallel() { return group(model_parallel_axes()); }
  // dp (if the layout has it; on the MoE mesh of base/moe_mesh_layout.h, edp x ep, the dense
  // parameters' replicas; else this rank alone): where gradients are averaged.
  Communicator& data_parallel() { return group(data_parallel_axes()); }

  std::vector<std::string> model_parallel_axes() const;
  std::vector<std::string> data_parallel_axes() const;

 private:
  // "pp x tp": the axes in layout order, the one name of a combination however it is spelt.
  std::string key_of(const std::vector<std::string>& axes) const;
  void check_hosts(const Communicator& world, const MeshOptions& options) const;
  void create_group(Communicator& world, const std::vector<std::string>& axes);

  MeshLayout layout_;
  int rank_ = 0;
  std::map<std::string, Communicator> groups_;
};

}  // namespace braid::parallel
