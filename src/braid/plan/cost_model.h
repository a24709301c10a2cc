// The alpha-beta-gamma cost model of collective algorithms (Hockney; Thakur, Rabenseifner and
// Gropp 2005; Chan et al. 2007): a collective on n ranks over S bytes (the buffer size as
// nccl-tests and braid-bench count it) costs
//
//     T = a(n) alpha + b(n) S beta + c(n) S gamma
//
// messages a on the critical path, bytes per byte of buffer b each rank sends, bytes c it
// reduces. One table of (a, b, c) per (operation, algorithm), as NCCL's tuning.cc keeps
// latency and bandwidth per algorithm. The two-level allreduces compose steps over two links:
// hierarchical an intra-node reduce, an inter-node allreduce among leaders and an intra-node
// broadcast; host_striped an intra-node reduce-scatter, one inter-node allreduce per stripe of
// one rank per node, and an intra-node allgather.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "braid/base/op_kind.h"
#include "braid/plan/estimate.h"
#include "braid/plan/link_presets.h"

namespace braid::plan {

// The operations are braid's one vocabulary of them (base/op_kind.h: the wire envelope's,
// the tools'); the model prices modelled_ops() and has no coefficients for the others.
using Op = OpKind;
enum class Algorithm { kRing, kTree, kRecursiveDoubling, kRabenseifner, kHierarchical, kHostStriped };

// "ring", "tree", "recursive_doubling", "rabenseifner", "hierarchical", "host_striped"
const char* algorithm_name(Algorithm algo);
// allreduce, reduce_scatter, allgather, broadcast, alltoall, send/recv.
std::span<const Op> modelled_ops();
// parse_op_kind(name, field, modelled_ops()): a name (or alias) of a priced operation.
Op parse_op(std::string_view name, std::string_view field = "op");
Algorithm parse_algorithm(std::string_view name, std::string_view field = "algorithm");
std::vector<Algorithm> all_algorithms();
// Whether `algo` runs over two links (intra- and inter-node: hierarchical, host_striped), and
// so has no single-link coefficients.
bool is_two_level(Algorithm algo);

struct CostCoefficients {
  double messages = 0;      // a(n)
  double bytes_factor = 0;  // b(n)
  double reduce_factor = 0; // c(n)
  std::string formula;      // e.g. "2(n-1) alpha + 2(n-1)/n S beta + (n-1)/n S gamma"
};

// The coefficients of one flat (single-link) algorithm, or nullopt when it does not implement
// `op` (e.g. Rabenseifner broadcast, or an op outside modelled_ops()). REQUIRES: n >= 1.
std::optional<CostCoefficients> cost_coefficients(Op op, Algorithm algo, int n);

struct CollectiveInput {
  Op op = Op::kAllreduce;
  Algorithm algorithm = Algorithm::kRing;
  double bytes = 0;
  int ranks = 2;
  LinkParams link;            // the (intra-node) link
  // Two-level algorithms only: ranks per node (the rest of `ranks` is spread over ranks /
  // per_node nodes) and the link between nodes (one per rank, as the flat algorithms assume).
  int ranks_per_node = 0;
  LinkParams inter_link;
};

// Predicted seconds, or nullopt when the algorithm does not implement the operation (or a
// two-level algorithm's layout does not divide the ranks). Throws InvalidArgument for bytes < 0 or
// ranks < 1.
std::optional<Estimate> collective_time(const CollectiveInput& input);

}  // namespace braid::plan
