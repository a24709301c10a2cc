#include "braid/base/moe_mesh_layout.h"

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid {

MeshLayout moe_mesh_layout(int world, MoeMeshShape shape) {
  auto fail = [&](const std::string& why) {
    throw InvalidArgument({.op = "moe mesh"}, fmt::format("ep {} x pp {} x tp {} on {} ranks: {}", shape.ep, shape.pp,
                                                          shape.tp, world, why));
  };
  if (world < 1 || shape.ep < 1 || shape.pp < 1 || shape.tp < 1) fail("every size must be at least 1");
  if (world % (shape.pp * shape.tp) != 0) fail(fmt::format("tp x pp = {} does not divide the world", shape.pp * shape.tp));
  int dp = world / (shape.pp * shape.tp);
  if (dp % shape.ep != 0) {
    fail(fmt::format("ep must divide the data-parallel size world / (tp x pp) = {}", dp));
  }
  return MeshLayout({{"edp", dp / shape.ep}, {"ep", shape.ep}, {"pp", shape.pp}, {"tp", shape.tp}}, world);
}

const std::vector<std::string>& moe_ep_axes() {
  static const std::vector<std::string> axes{"ep"};
  return axes;
}

const std::vector<std::string>& moe_expert_dp_axes() {
  static const std::vector<std::string> axes{"edp"};
  return axes;
}

const std::vector<std::string>& moe_dense_dp_axes() {
  static const std::vector<std::string> axes{"edp", "ep"};
  return axes;
}

}  // namespace braid
