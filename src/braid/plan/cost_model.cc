#include "braid/plan/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/plan/units.h"

namespace braid::plan {

namespace {

constexpr std::array kModelledOps{Op::kAllreduce, Op::kReduceScatter, Op::kAllgather,
                                  Op::kBroadcast, Op::kAlltoall,      Op::kSendRecv};

}  // namespace

std::span<const Op> modelled_ops() { return kModelledOps; }

Op parse_op(std::string_view name, std::string_view field) { return parse_op_kind(name, field, modelled_ops()); }

const char* algorithm_name(Algorithm algo) {
  switch (algo) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kTree: return "tree";
    case Algorithm::kRecursiveDoubling: return "recursive_doubling";
    case Algorithm::kRabenseifner: return "rabenseifner";
    case Algorithm::kHierarchical: return "hierarchical";
    case Algorithm::kHostStriped: return "host_striped";
  }
  return "?";
}

std::vector<Algorithm> all_algorithms() {
  return {Algorithm::kRing, Algorithm::kTree, Algorithm::kRecursiveDoubling, Algorithm::kRabenseifner,
          Algorithm::kHierarchical, Algorithm::kHostStriped};
}

bool is_two_level(Algorithm algo) { return algo == Algorithm::kHierarchical || algo == Algorithm::kHostStriped; }

Algorithm parse_algorithm(std::string_view name, std::string_view field) {
  if (name == "recursive-doubling" || name == "rd") return Algorithm::kRecursiveDoubling;
  if (name == "binomial" || name == "binomial_tree") return Algorithm::kTree;
  for (Algorithm a : all_algorithms()) {
    if (name == algorithm_name(a)) return a;
  }
  throw InvalidArgument({.op = "braid-plan"},
                        fmt::format("{}: unknown algorithm '{}' (ring, tree, recursive_doubling, rabenseifner, "
                                    "hierarchical, host_striped)",
                                    field, name));
}

namespace {

// Allreduce coefficients per algorithm. Non-power-of-two rank counts fold the extra ranks into
// a power of two first and unfold at the end: two more full-size steps (Thakur et al.).
std::optional<CostCoefficients> allreduce(Algorithm algo, double n, double lg, bool pow2) {
  const double share = (n - 1) / n;
  const double fold = pow2 ? 0 : 2;
  switch (algo) {
    case Algorithm::kRing:
      return CostCoefficients{2 * (n - 1), 2 * share, share, "2(n-1) alpha + 2(n-1)/n S beta + (n-1)/n S gamma"};
    case Algorithm::kTree:
      return CostCoefficients{2 * lg, 2 * lg, lg, "2 ceil(log2 n) (alpha + S beta) + ceil(log2 n) S gamma"};
    case Algorithm::kRecursiveDoubling:
      return CostCoefficients{lg + fold, lg + fold, lg + fold / 2,
                              "log2 n (alpha + S beta + S gamma)  (+2 fold steps if n is not a power of 2)"};
    case Algorithm::kRabenseifner:
      return CostCoefficients{2 * std::floor(std::log2(n)) + fold, 2 * share + fold, share + fold / 2,
                              "2 log2 n alpha + 2(n-1)/n S beta + (n-1)/n S gamma  (+2 fold steps if n is not a "
                              "power of 2)"};
    case Algorithm::kHierarchical:
    case Algorithm::kHostStriped:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<CostCoefficients> cost_coefficients(Op op, Algorithm algo, int ranks) {
  require_range("ranks", ranks, 1, 1 << 24);
  if (is_two_level(algo)) return std::nullopt;
  const double n = ranks;
  if (ranks == 1) return CostCoefficients{0, 0, 0, "0 (one rank)"};
  const double lg = std::ceil(std::log2(n));
  const bool pow2 = (ranks & (ranks - 1)) == 0;
  const double share = (n - 1) / n;
  switch (op) {
    case Op::kAllreduce:
      return allreduce(algo, n, lg, pow2);
    case Op::kReduceScatter:
      if (algo == Algorithm::kRing) return CostCoefficients{n - 1, share, share, "(n-1) alpha + (n-1)/n S (beta + gamma)"};
      if (algo == Algorithm::kRabenseifner || algo == Algorithm::kRecursiveDoubling) {
        return CostCoefficients{lg, share, share, "log2 n alpha + (n-1)/n S (beta + gamma)  (recursive halving)"};
      }
      return std::nullopt;
    case Op::kAllgather:
      if (algo == Algorithm::kRing) return CostCoefficients{n - 1, share, 0, "(n-1) alpha + (n-1)/n S beta"};
      if (algo == Algorithm::kRecursiveDoubling) {
        return CostCoefficients{lg, share, 0, "log2 n alpha + (n-1)/n S beta"};
      }
      return std::nullopt;
    case Op::kBroadcast:
      if (algo == Algorithm::kTree) return CostCoefficients{lg, lg, 0, "ceil(log2 n) (alpha + S beta)  (binomial)"};
      if (algo == Algorithm::kRing) {
        return CostCoefficients{lg + n - 1, 2 * share, 0, "(log2 n + n - 1) alpha + 2(n-1)/n S beta  (scatter + allgather)"};
      }
      return std::nullopt;
    case Op::kAlltoall:
      if (algo == Algorithm::kRing) return CostCoefficients{n - 1, share, 0, "(n-1) alpha + (n-1)/n S beta  (pairwise)"};
      if (algo == Algorithm::kRecursiveDoubling) {
        return CostCoefficients{lg, lg / 2, 0, "log2 n alpha + log2 n / 2 S beta  (Bruck)"};
      }
      return std::nullopt;
    case Op::kSendRecv:
      if (algo == Algorithm::kRing) return CostCoefficients{1, 1, 0, "alpha + S beta"};
      return std::nullopt;
    case Op::kBarrier:
    case Op::kSplit:
    case Op::kReduce:
    case Op::kAlltoallv:
    case Op::kGather:
    case Op::kScatter:
      return std::nullopt;  // not priced (modelled_ops())
  }
  return std::nullopt;
}

namespace {

double evaluate(const CostCoefficients& c, double bytes, const LinkParams& link) {
  return c.messages * link.alpha + c.bytes_factor * bytes * link.beta() + c.reduce_factor * bytes * link.gamma;
}

std::string substitute(const CostCoefficients& c, double bytes, const LinkParams& link) {
  return fmt::format("{} x {} s + {} x {} B / {} B/s + {} x {} B x {} s/B  [{}]", num(c.messages), num(link.alpha),
                     num(c.bytes_factor), num(bytes), num(link.bandwidth), num(c.reduce_factor), num(bytes),
                     num(link.gamma), link.name);
}

// The node layout of a two-level allreduce: g ranks on each of N nodes, or nullopt when it
// does not apply (another operation, or g does not divide the ranks).
struct NodeLayout {
  int g;
  int nodes;
};
std::optional<NodeLayout> node_layout(const CollectiveInput& in) {
  const int g = in.ranks_per_node;
  if (in.op != Op::kAllreduce || g < 1 || in.ranks % g != 0) return std::nullopt;
  return NodeLayout{g, in.ranks / g};
}

// A ring allreduce among N nodes (nothing on one node).
CostCoefficients inter_node_ring(int nodes) {
  if (nodes == 1) return {0, 0, 0, ""};
  return *allreduce(Algorithm::kRing, nodes, std::ceil(std::log2(nodes)), true);
}

// A two-level allreduce's time: `intra` on the intra-node link over S, plus a ring allreduce of
// `inter_bytes` among the N nodes on the inter-node link.
Estimate two_level_estimate(const CollectiveInput& in, NodeLayout layout, const CostCoefficients& intra,
                            double inter_bytes, std::string formula) {
  const CostCoefficients inter = inter_node_ring(layout.nodes);
  const double seconds = evaluate(intra, in.bytes, in.link) + evaluate(inter, inter_bytes, in.inter_link);
  return Estimate{"collective_seconds", seconds, Unit::kSeconds, std::move(formula),
                  fmt::format("g = {}, N = {}: intra {} + inter {}", layout.g, layout.nodes,
                              substitute(intra, in.bytes, in.link), substitute(inter, inter_bytes, in.inter_link))};
}

// Intra-node reduce (reduce-scatter + gather), inter-node ring allreduce, intra-node broadcast
// (scatter + allgather): the shape of braid's hierarchical allreduce (intra-host reduce,
// inter-host allreduce among one leader per host, intra-host broadcast).
std::optional<Estimate> hierarchical_allreduce(const CollectiveInput& in) {
  const std::optional<NodeLayout> layout = node_layout(in);
  if (!layout) return std::nullopt;
  const double g = layout->g, share = (g - 1) / g;
  return two_level_estimate(in, *layout, {4 * (g - 1), 4 * share, share, ""}, in.bytes,
                            "intra: 4(g-1) alpha_i + 4(g-1)/g S beta_i + (g-1)/g S gamma; inter: ring allreduce over "
                            "N = n/g nodes on the inter-node link");
}

// Intra-node ring reduce-scatter, a ring allreduce of each S/g shard among the N ranks that hold
// it (one per node, all g stripes at once, each on its own inter-node link), intra-node ring
// allgather: braid's host_striped allreduce. Against hierarchical, the intra-node part moves
// half the bytes (no gather to a leader and scatter back) and the inter-node part a g-th, since
// every rank of a node carries a shard instead of one leader carrying all.
std::optional<Estimate> host_striped_allreduce(const CollectiveInput& in) {
  const std::optional<NodeLayout> layout = node_layout(in);
  if (!layout) return std::nullopt;
  const double g = layout->g, share = (g - 1) / g;
  return two_level_estimate(in, *layout, {2 * (g - 1), 2 * share, share, ""}, in.bytes / g,
                            "intra: 2(g-1) alpha_i + 2(g-1)/g S beta_i + (g-1)/g S gamma; inter: ring allreduce of "
                            "S/g over N = n/g nodes, one per stripe, on the inter-node link");
}

}  // namespace

std::optional<Estimate> collective_time(const CollectiveInput& in) {
  require_range("bytes", in.bytes, 0, 1e18);
  require_range("ranks", in.ranks, 1, 1 << 24);
  require_range("bandwidth", in.link.bandwidth, 1, 1e15);
  require_range("alpha", in.link.alpha, 0, 10, "seconds per message");
  if (in.algorithm == Algorithm::kHierarchical) return hierarchical_allreduce(in);
  if (in.algorithm == Algorithm::kHostStriped) return host_striped_allreduce(in);
  std::optional<CostCoefficients> c = cost_coefficients(in.op, in.algorithm, in.ranks);
  if (!c) return std::nullopt;
  return Estimate{"collective_seconds", evaluate(*c, in.bytes, in.link), Unit::kSeconds, c->formula,
                  substitute(*c, in.bytes, in.link)};
}

}  // namespace braid::plan
