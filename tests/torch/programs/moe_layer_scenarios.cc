// Rank program for the MoE layer tests (tests/torch/moe_layer_test.cc). Every rank holds its own
// batch of the global data (one batch per rank, drawn from one seed on every rank) and the
// model  y = h + moe(h), h = pre(x)  (a dense Linear in front, so that dense parameters get
// gradients through the dispatch's backward), loss_r = mse(y_r, target_r) + the layer's
// auxiliary loss (load balancing and z-loss).
//   braid-moe-layer-rank equal --ep N   for top-1 / top-2 x capacity factor 0.5 (drops), 2.0,
//       dropless, and pipelined (chunks 4: top-2 at 0.5; chunks 2: top-1 dropless): the EP run (MoeLayer over EP groups of N, MoeDataParallel) against the
//       reference computed on every rank alone: one process holding every expert (EP = 1), the
//       same seed, every rank's batch in turn, the gradient of the mean of the ranks' losses.
//       Outputs, losses, drop counts and every parameter's gradient (expert i of this rank
//       against expert first + i of the reference) must match.
//   braid-moe-layer-rank bad --case not-divisible|capacity|experts-disagree   the layer's
//       constructor refuses, on every rank; backward-twice: a second backward through one
//       pipelined forward is refused, on every rank.
// Prints "PASS <check> ..." / "FAIL <check> ..." and "PASS <scenario> (rank r)" at the end; a
// braid::Error is printed as "ERROR <kind>: <message>" after which every rank meets at a barrier.
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "braid/torch/moe_data_parallel.h"
#include "braid/torch/moe_layer.h"

#include "tensor_checks.h"

namespace {

namespace bt = braid::torch;
using braid::Communicator;
using torch::Tensor;

constexpr std::int64_t kHidden = 8, kFfn = 16;
constexpr int kExperts = 4;
constexpr std::uint64_t kSeed = 4321;

using braid::testing::check;
using braid::testing::close;

// Tolerance of every EP-vs-EP=1 comparison: float32. The gate and the routing see the same rows
// in the same shapes, so routing is identical (checked exactly: drop counts). The experts
// multiply another set of rows at once (the rows of every rank routed to them, in another
// order) and their weight gradients sum the rows' products in another order, then over the
// expert-DP group; the dense gradients are summed by DDP's allreduce instead of by autograd
// over the ranks' graphs in turn. So results agree to a few ulps of the tensor's largest values
// (relative ~1e-7..1e-6). rtol 1e-4 with atol 1e-5 x max|ref| leaves a wide margin while a
// token sent to the wrong expert, a gradient missing a rank's share or scaled by ep is off by
// O(max|ref|). The max difference is printed (it is often exactly 0 for the forward).
// (braid::testing::close, tensor_checks.h, applies it.)

struct NetImpl : torch::nn::Module {
  NetImpl(Communicator& ep, const bt::MoeLayerOptions& options) {
    pre = register_module("pre", torch::nn::Linear(kHidden, kHidden));
    moe = register_module("moe", bt::MoeLayer(ep, options));
  }
  Tensor forward(const Tensor& x) {
    Tensor h = pre->forward(x);
    return h + moe->forward(h);
  }
  torch::nn::Linear pre{nullptr};
  bt::MoeLayer moe{nullptr};
};

struct Batch {
  Tensor x, target;  // [3, 4, kHidden]: 12 tokens
};

std::vector<Batch> global_data(int ranks) {
  torch::manual_seed(kSeed + 1);
  std::vector<Batch> batches;
  for (int r = 0; r < ranks; ++r) batches.push_back({torch::randn({3, 4, kHidden}), torch::randn({3, 4, kHidden})});
  return batches;
}

Tensor loss_of(NetImpl& net, const Batch& b, Tensor* y) {
  *y = net.forward(b.x);
  return torch::mse_loss(*y, b.target) + net.moe->auxiliary_loss();
}

// The reference parameter of `name` (this rank's local expert i -> global first + i).
Tensor reference_grad(NetImpl& ref, const std::string& name, int first) {
  std::string key = name;
  std::size_t at = key.find("experts.expert");
  if (at != std::string::npos) {
    std::size_t digits = at + std::strlen("experts.expert"), end = key.find('_', digits);
    int local = std::stoi(key.substr(digits, end - digits));
    key = key.substr(0, digits) + std::to_string(first + local) + key.substr(end);
  }
  return ref.named_parameters()[key].grad();
}

void equal_to_ep1(Communicator& world, int ep, const bt::MoeLayerOptions& options, const std::string& label) {
  std::vector<Batch> data = global_data(world.size());
  const Batch& mine = data[static_cast<std::size_t>(world.rank())];

  // The reference: EP = 1 on this rank alone, every rank's batch, the mean of their losses.
  std::optional<Communicator> alone = world.split(world.rank(), 0);
  torch::manual_seed(kSeed);
  bt::MoeLayerOptions unpipelined = options;
  unpipelined.chunks = 1;
  NetImpl ref(*alone, unpipelined);
  Tensor ref_total = torch::zeros({}), ref_y, ref_loss;
  std::int64_t ref_dropped = 0;
  for (int r = 0; r < world.size(); ++r) {
    Tensor y;
    std::int64_t before = ref.moe->stats().dropped_choices;
    Tensor loss = loss_of(ref, data[static_cast<std::size_t>(r)], &y);
    if (r == world.rank()) ref_y = y.detach(), ref_loss = loss.detach(), ref_dropped = ref.moe->stats().dropped_choices - before;
    ref_total = ref_total + loss;
  }
  (ref_total / world.size()).backward();

  // The EP run.
  bt::MoeGroups groups = bt::split_moe_groups(world, ep);
  torch::manual_seed(kSeed);
  auto net = std::make_shared<NetImpl>(groups.ep, options);
  bt::MoeDataParallel ddp(world, groups.expert_dp, net);
  ddp.zero_grad();
  Tensor y;
  Tensor loss = loss_of(*net, mine, &y);
  loss.backward();
  ddp.synchronize();

  close(y.detach(), ref_y, label + " output");
  close(loss.detach(), ref_loss, label + " loss");
  const bt::MoeLayerStats& stats = net->moe->stats();
  check(stats.dropped_choices == ref_dropped, label + " drops",
        std::to_string(stats.dropped_choices) + " vs " + std::to_string(ref_dropped));
  if (options.dropless) check(stats.dropped_choices == 0, label + " dropless drops nothing");
  if (!options.dropless && options.capacity_factor < 1) check(stats.dropped_choices > 0, label + " drops some");
  int first = net->moe->experts->first();
  for (const auto& p : net->named_parameters()) close(p.value().grad(), reference_grad(ref, p.key(), first), label + " grad " + p.key());
}

// The unpipelined path for every (top-k, capacity) and the pipelined one (chunks 2 and 4) for
// two of them; the reference is always the unpipelined EP = 1 layer.
void equal(Communicator& world, int ep) {
  struct Config {
    int top_k;
    double cf;  // 0: dropless
    int chunks;
  };
  std::vector<Config> configs;
  for (int top_k : {1, 2}) {
    for (double cf : {0.5, 2.0, 0.0}) configs.push_back({top_k, cf, 1});
  }
  configs.push_back({2, 0.5, 4});
  configs.push_back({1, 0.0, 2});
  for (const Config& c : configs) {
    bt::MoeLayerOptions o{.experts = kExperts, .top_k = c.top_k, .hidden = kHidden, .ffn = kFfn,
                          .capacity_factor = c.cf == 0 ? 1.0 : c.cf, .dropless = c.cf == 0,
                          .aux_loss_coef = 0.1, .z_loss_coef = 0.01, .chunks = c.chunks};
    std::string label = "top" + std::to_string(c.top_k) + (c.cf == 0 ? " dropless" : " cf" + std::to_string(c.cf).substr(0, 3)) +
                        (c.chunks > 1 ? " chunks" + std::to_string(c.chunks) : "");
    equal_to_ep1(world, ep, o, label);
  }
}

// The pipelined layer releases each chunk's graph in its backward: a second backward through
// the same forward (retain_graph) is refused on every rank, not computed from freed activations.
void backward_twice(Communicator& world, bt::MoeLayerOptions o) {
  o.chunks = 2;
  torch::manual_seed(kSeed);
  bt::MoeLayer layer(world, o);
  Tensor x = torch::randn({6, kHidden}).requires_grad_(true);
  Tensor loss = layer->forward(x).square().sum();
  loss.backward({}, /*retain_graph=*/true);
  check(x.grad().defined(), "backward-twice: the first backward ran");
  loss.backward();
  check(false, "bad backward-twice was accepted");
}

void bad(Communicator& world, const std::string& which) {
  bt::MoeLayerOptions o{.experts = 2 * world.size(), .top_k = 1, .hidden = kHidden, .ffn = kFfn};
  if (which == "not-divisible") o.experts = world.size() + 1;
  else if (which == "capacity") o.capacity_factor = 0;
  else if (which == "experts-disagree") o.experts += world.rank() == world.size() - 1 ? world.size() : 0;
  else if (which == "backward-twice") return backward_twice(world, o);
  else throw braid::InvalidArgument({.op = "braid-moe-layer-rank"}, "unknown case " + which);
  bt::MoeLayer layer(world, o);
  check(false, "bad " + which + " was accepted");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (std::strcmp(argv[2], "--ep") != 0 && std::strcmp(argv[2], "--case") != 0)) {
    std::fprintf(stderr, "usage: braid-moe-layer-rank equal --ep N | bad --case CASE\n");
    return 2;
  }
  std::string scenario = argv[1];
  Communicator world = Communicator::init();
  try {
    torch::set_num_threads(1);  // ranks share the machine's cores
    if (scenario == "equal") equal(world, std::stoi(argv[3]));
    else if (scenario == "bad") bad(world, argv[3]);
    else throw braid::InvalidArgument({.op = "braid-moe-layer-rank"}, "unknown scenario " + scenario);
  } catch (const braid::Error& e) {
    std::printf("ERROR %s: %s\n", braid::error_kind_name(e.kind()), e.what());
    std::fflush(stdout);
    world.barrier();  // every rank prints its error before any exits non-zero
    return 1;
  }
  std::printf("%s %s (rank %d)\n", braid::testing::failed_checks() == 0 ? "PASS" : "FAIL", scenario.c_str(), world.rank());
  std::fflush(stdout);
  return braid::testing::failed_checks() == 0 ? 0 : 1;
}
