#include "braid/parallel/process_mesh.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "braid/base/error.h"
#include "braid/base/log.h"

namespace braid::parallel {

namespace {

constexpr const char* kOp = "process_mesh";

// The layout's own errors carry no rank (base/ knows none); a mesh's name the calling rank.
template <typename F>
auto with_rank(int rank, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const InvalidArgument& e) {
    throw InvalidArgument({.rank = rank, .op = kOp}, e.detail());
  }
}

MeshLayout checked_layout(const Communicator& world, MeshLayout layout) {
  if (layout.world() != world.size()) {
    throw InvalidArgument({.rank = world.rank(), .op = kOp},
                          fmt::format("layout {} has {} ranks but the communicator has {}", layout.describe(),
                                      layout.world(), world.size()));
  }
  return layout;
}

std::vector<int> hosts_of(const Topology& topology, const std::vector<int>& ranks) {
  std::vector<int> hosts;
  for (int r : ranks) hosts.push_back(topology.host_of(r));
  return hosts;
}

}  // namespace

ProcessMesh::ProcessMesh(Communicator& world, std::vector<MeshAxis> axes, MeshOptions options)
    : ProcessMesh(world, with_rank(world.rank(), [&] { return MeshLayout(std::move(axes), world.size()); }),
                  std::move(options)) {}

ProcessMesh::ProcessMesh(Communicator& world, MeshLayout layout, MeshOptions options)
    : layout_(checked_layout(world, std::move(layout))), rank_(world.rank()) {
  // Every check before the first split: a rank that throws must not leave others in one.
  check_hosts(world, options);
  std::vector<std::vector<std::string>> wanted;
  for (const MeshAxis& axis : layout_.axes()) wanted.push_back({axis.name});
  wanted.push_back(model_parallel_axes());
  wanted.push_back(data_parallel_axes());
  for (const auto& axes : options.groups) {
    with_rank(rank_, [&] { return key_of(axes); });  // unknown axes refused, on every rank alike
    wanted.push_back(axes);
  }
  for (const auto& axes : wanted) create_group(world, axes);
}

std::string ProcessMesh::key_of(const std::vector<std::string>& axes) const {
  layout_.group_size(axes);  // throws on an axis the layout does not have
  std::vector<std::string> ordered;
  for (const MeshAxis& a : layout_.axes()) {
    if (std::find(axes.begin(), axes.end(), a.name) != axes.end()) ordered.push_back(a.name);
  }
  return ordered.empty() ? "(this rank)" : fmt::format("{}", fmt::join(ordered, " x "));
}

void ProcessMesh::create_group(Communicator& world, const std::vector<std::string>& axes) {
  const std::string key = key_of(axes);
  if (groups_.contains(key)) return;
  // Color: which group of this kind; key: the position in it, so communicator rank i is the
  // group's i-th member in the layout's order.
  std::optional<Communicator> comm =
      world.split(layout_.group_index(rank_, axes), layout_.position_in_group(rank_, axes));
  groups_.emplace(key, std::move(*comm));
}

Communicator& ProcessMesh::group(const std::string& axis) { return group(std::vector<std::string>{axis}); }

Communicator& ProcessMesh::group(const std::vector<std::string>& axes) {
  const std::string key = with_rank(rank_, [&] { return key_of(axes); });
  auto it = groups_.find(key);
  if (it == groups_.end()) {
    std::vector<std::string> created;
    for (const auto& [name, comm] : groups_) created.push_back(name);
    throw InvalidArgument({.rank = rank_, .op = kOp},
                          fmt::format("layout {}: no group {} was created (created: {}); ask for it in MeshOptions::groups",
                                      layout_.describe(), key, fmt::join(created, ", ")));
  }
  return it->second;
}

std::vector<std::string> ProcessMesh::model_parallel_axes() const {
  std::vector<std::string> axes;
  for (const char* name : {"pp", "tp"}) {
    if (layout_.has(name)) axes.emplace_back(name);
  }
  return axes;
}

std::vector<std::string> ProcessMesh::data_parallel_axes() const {
  if (layout_.has("dp")) return {"dp"};
  // The MoE mesh (base/moe_mesh_layout.h): the dense layers' replicas are edp x ep.
  std::vector<std::string> axes;
  for (const char* name : {"edp", "ep"}) {
    if (layout_.has(name)) axes.emplace_back(name);
  }
  return axes;
}

// Every rank examines every TP group (not only its own), from the topology all ranks share,
// so the verdict and the message are the same everywhere.
void ProcessMesh::check_hosts(const Communicator& world, const MeshOptions& options) const {
  if (!layout_.has("tp") || layout_.size("tp") == 1) return;
  const Topology& topology = world.topology();
  for (int first = 0; first < layout_.world(); ++first) {
    if (layout_.position_in_group(first, {"tp"}) != 0) continue;  // visit each group once, at its first rank
    const int g = layout_.group_index(first, {"tp"});
    const std::vector<int> members = layout_.group(first, {"tp"});
    const std::vector<int> hosts = hosts_of(topology, members);
    if (std::all_of(hosts.begin(), hosts.end(), [&](int h) { return h == hosts.front(); })) continue;
    const std::string what = fmt::format(
        "layout {} puts TP group {} (ranks {}) on hosts {} of the world's {}; a TP group should stay on one host",
        layout_.describe(), g, fmt::join(members, ", "), fmt::join(hosts, ", "), topology.num_hosts());
    if (!options.allow_tp_across_hosts) {
      throw InvalidArgument({.rank = rank_, .op = kOp},
                            what + "; set MeshOptions::allow_tp_across_hosts to accept it");
    }
    if (rank_ == first) log::warn("rank {}: {}; accepted (MeshOptions::allow_tp_across_hosts)", rank_, what);
    return;  // one warning, for the first group that spans hosts
  }
}

}  // namespace braid::parallel
