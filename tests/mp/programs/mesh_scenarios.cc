// The process mesh over real processes: every group's communicator holds exactly the ranks the
// arithmetic says, in its order (each rank allreduces its world rank over every group and
// compares with the sum of the group's members).
//
// braid-test-rank mesh LAYOUT [allow-tp-across-hosts] [group=AXIS+AXIS ...]
//   LAYOUT: "dp=2,pp=2,tp=2", outermost first. A bad layout or a refused host placement
//   throws out of the ProcessMesh constructor on every rank (main prints "ERROR ...").
#include <cstdint>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "braid/collectives/collectives.h"
#include "braid/parallel/process_mesh.h"
#include "scenario.h"

namespace braid::testing {

namespace {

using parallel::MeshOptions;
using parallel::ProcessMesh;

std::vector<std::string> split_on(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

std::vector<MeshAxis> parse_layout(const std::string& text) {
  std::vector<MeshAxis> axes;
  for (const std::string& axis : split_on(text, ',')) {
    const auto eq = axis.find('=');
    axes.push_back({axis.substr(0, eq), std::stoi(axis.substr(eq + 1))});
  }
  return axes;
}

// One group: size, this rank's position, the members' world ranks, and an allreduce of the
// world rank whose sum must be the members' sum.
int check_group(ProcessMesh& mesh, const std::vector<std::string>& axes, const std::string& name) {
  const MeshLayout& layout = mesh.layout();
  const std::vector<int> members = layout.group(mesh.rank(), axes);
  Communicator& comm = mesh.group(axes);
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (ok) return;
    RANK_SAY("FAIL mesh rank %d group %s: %s", mesh.rank(), name.c_str(), what);
    ++failures;
  };
  expect(comm.size() == static_cast<int>(members.size()), "size differs from the arithmetic's");
  expect(comm.rank() == layout.position_in_group(mesh.rank(), axes), "rank is not the position in the group");
  for (int i = 0; i < comm.size() && i < static_cast<int>(members.size()); ++i) {
    expect(comm.world_rank(i) == members[static_cast<std::size_t>(i)], "member order differs");
  }
  const std::int64_t mine = mesh.rank();
  std::int64_t sum = -1;
  allreduce(comm, &mine, &sum, 1, DType::kI64, ReduceOp::kSum);
  expect(sum == std::accumulate(members.begin(), members.end(), std::int64_t{0}), "allreduce sum");
  return failures;
}

}  // namespace

int scenario_mesh(Communicator& comm, const Args& args) {
  if (args.empty()) {
    RANK_SAY("FAIL mesh: usage: mesh LAYOUT [allow-tp-across-hosts] [group=AXIS+AXIS ...]");
    return 2;
  }
  MeshOptions options;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "allow-tp-across-hosts") options.allow_tp_across_hosts = true;
    if (args[i].starts_with("group=")) options.groups.push_back(split_on(args[i].substr(6), '+'));
  }
  ProcessMesh mesh(comm, parse_layout(args[0]), options);
  int failures = 0;
  for (const MeshAxis& axis : mesh.layout().axes()) failures += check_group(mesh, {axis.name}, axis.name);
  failures += check_group(mesh, mesh.model_parallel_axes(), "model-parallel");
  failures += check_group(mesh, mesh.data_parallel_axes(), "data-parallel");
  for (const auto& axes : options.groups) failures += check_group(mesh, axes, "extra");
  // Same objects through the named accessors.
  if (&mesh.model_parallel() != &mesh.group(mesh.model_parallel_axes()) ||
      &mesh.data_parallel() != &mesh.group(mesh.data_parallel_axes()) ||
      (mesh.layout().has("tp") && &mesh.group("tp") != &mesh.group({"tp", "tp"}))) {
    RANK_SAY("FAIL mesh rank %d: accessors disagree", mesh.rank());
    ++failures;
  }
  if (failures == 0) RANK_SAY("PASS mesh rank %d %s", mesh.rank(), mesh.layout().describe().c_str());
  return failures == 0 ? 0 : 1;
}

}  // namespace braid::testing
