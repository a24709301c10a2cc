// Rank program for the DistributedDataParallel failure tests (tests/torch/ddp_test.cc):
//   braid-torch-rank mismatched-model   rank 1 builds a wider layer than the others
//   braid-torch-rank unused-param       a parameter forward never touches (error by default)
//   braid-torch-rank unused-allowed     the same with allow_unused: trains, replicas agree
//   braid-torch-rank replaced-grad      the user swaps a gradient tensor: refused
//   braid-torch-rank zero-vs-ddp        ZeroOptimizer (stages 1, 2; SGD, Adam, AdamW; with and
//                                       without clipping) against DDP + the same torch optimizer,
//                                       with an unused parameter: "ZERO ... difference D" lines
//   braid-torch-rank qwz-vs-ddp         the same with ZeRO++ qwZ (int8 parameter allgather, exact
//                                       master shards): "QWZ ... difference D" lines
//   braid-torch-rank zero-without-stage ZeroOptimizer over a DDP with zero_stage 0: refused
//   braid-torch-rank bucket-views       gradient_as_bucket_view against plain DDP, 4 steps (one
//                                       accumulating two backwards), buckets moved by a restore
//                                       and by the first step's rebuild: "VIEWS ..." lines
//   and the stage 3 scenarios of fully_sharded_scenarios.h
// Prints "PASS <scenario>" or the braid::Error ("ERROR <kind>: <message>") and exits 0 either
// way: the error is the scenario's result, and a rank exiting non-zero would make braid-run stop
// the others before they print theirs.
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>

#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/zero_optimizer.h"
#include "fully_sharded_scenarios.h"

namespace {

namespace nn = torch::nn;

struct TwoLayers : nn::Module {
  TwoLayers(int hidden, bool with_second)
      : fc1(register_module("fc1", nn::Linear(8, hidden))),
        fc2(register_module("fc2", nn::Linear(hidden, 4))),
        spare(register_module("spare", nn::Linear(4, 4))),
        use_second(with_second) {}
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = fc2->forward(torch::relu(fc1->forward(x)));
    return use_second ? spare->forward(h) : h;
  }
  nn::Linear fc1, fc2, spare;
  bool use_second;
};

void train_steps(braid::torch::DistributedDataParallel& ddp, TwoLayers& model, int rank, int steps) {
  torch::optim::SGD opt(model.parameters(), 0.1);
  for (int step = 0; step < steps; ++step) {
    ddp.zero_grad();
    torch::manual_seed(100 + rank * 10 + step);  // each rank its own data
    model.forward(torch::randn({4, 8})).pow(2).mean().backward();
    ddp.synchronize();
    opt.step();
  }
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name, std::vector<torch::Tensor> params) {
  if (name == "sgd") return std::make_unique<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(0.1).momentum(0.9));
  if (name == "adam") return std::make_unique<torch::optim::Adam>(std::move(params), torch::optim::AdamOptions(0.01));
  return std::make_unique<torch::optim::AdamW>(std::move(params), torch::optim::AdamWOptions(0.01).weight_decay(0.1));
}

// One backward of `model` on this rank's data of `step` (the same for both models).
void backward(TwoLayers& model, int rank, int step) {
  torch::manual_seed(100 + rank * 10 + step);
  model.forward(torch::randn({4, 8})).pow(2).mean().backward();
}

struct ZeroOutcome {
  double difference = 0;  // the largest parameter difference from DDP's
  int flat_faults = 0;    // parameters or shards not viewing the flat tensors, padding not 0.0
};

// qwZ: the inner shard views the master's real part, the master's padding is 0.0, and this
// rank's slice of the flat parameters is the master dequantised: within the int8 bound
// max|block| / 254 (+ fp32 rounding) of it, block by block of 1024 (docs/zero.md "ZeRO++").
int qwz_faults(const braid::torch::ZeroOptimizer& zero, braid::torch::DistributedDataParallel& ddp, int b) {
  braid::BucketShard layout = ddp.grad_sync().bucket_shard(b);
  const torch::Tensor& master = zero.master_shard(b);
  std::int64_t first = ddp.communicator().rank() * layout.shard;
  std::int64_t real = layout.end - layout.begin;
  int faults = 0;
  if (real > 0 && zero.shard(b).data_ptr<float>() != master.data_ptr<float>() + (layout.begin - first)) ++faults;
  faults += static_cast<int>(master.slice(0, real).ne(0).sum().item<std::int64_t>());
  torch::Tensor mine = zero.flat_parameters(b).narrow(0, first, layout.shard);
  for (std::int64_t at = 0; at < layout.shard; at += 1024) {
    std::int64_t n = std::min<std::int64_t>(1024, layout.shard - at);
    double m = master.narrow(0, at, n).abs().max().item<double>();
    double error = (mine.narrow(0, at, n) - master.narrow(0, at, n)).abs().max().item<double>();
    if (error > m / 254 + m * 1e-6) ++faults;
  }
  return faults;
}

// ZeroOptimizer's flat layout after training: each parameter is a view of its bucket's flat
// tensor at the plan's offset, each inner shard a view at [begin, end), and the padding past the
// bucket's elements is still exactly 0.0 (no optimizer, weight decay included, moved it).
int flat_faults(const braid::torch::ZeroOptimizer& zero, braid::torch::DistributedDataParallel& ddp) {
  const braid::engine::BucketPlan& plan = ddp.grad_sync().plan();
  int faults = 0;
  for (int b = 0; b < static_cast<int>(plan.buckets.size()); ++b) {
    const braid::engine::Bucket& bucket = plan.buckets[static_cast<std::size_t>(b)];
    const torch::Tensor& flat = zero.flat_parameters(b);
    const float* base = flat.data_ptr<float>();
    for (std::size_t slot = 0; slot < bucket.params.size(); ++slot) {
      const torch::Tensor& p = ddp.parameters()[static_cast<std::size_t>(bucket.params[slot])];
      if (p.data_ptr<float>() != base + bucket.offsets[slot]) ++faults;
    }
    braid::BucketShard layout = ddp.grad_sync().bucket_shard(b);
    if (zero.zero_options().quantize_weights) {
      faults += qwz_faults(zero, ddp, b);
    } else if (layout.end > layout.begin && zero.shard(b).data_ptr<float>() != base + layout.begin) {
      ++faults;
    }
    faults += static_cast<int>(flat.slice(0, bucket.elements).ne(0).sum().item<std::int64_t>());
  }
  return faults;
}

// Three steps of DDP + `optimizer` and of ZeroOptimizer(stage, optimizer) from the same
// parameters: the largest parameter difference at the end and the flat layout's faults.
// cap "0.0005" MiB: buckets of up to 131 floats, fc1.weight (128) alone and the rest shared,
// padded on 3 and 4 ranks; "0.00001": every parameter its own bucket, so on 3 ranks the 4-float
// biases leave rank 2 an empty shard (all padding).
ZeroOutcome zero_against_ddp(braid::Communicator& comm, const std::string& cap, int stage,
                             const std::string& optimizer, double clip, braid::torch::ZeroOptions options = {}) {
  auto reference = std::make_shared<TwoLayers>(16, false);
  auto sharded = std::make_shared<TwoLayers>(16, false);
  braid::torch::DistributedDataParallel ddp(comm, reference, {.bucket_cap = cap, .allow_unused = true});
  braid::torch::DistributedDataParallel zero_ddp(comm, sharded,
                                                 {.bucket_cap = cap, .allow_unused = true, .zero_stage = stage});
  {
    torch::NoGradGuard no_grad;  // the same start (each DDP broadcast its own rank 0's)
    for (std::size_t i = 0; i < reference->parameters().size(); ++i) {
      sharded->parameters()[i].copy_(reference->parameters()[i]);
    }
  }
  std::unique_ptr<torch::optim::Optimizer> opt = make_optimizer(optimizer, reference->parameters());
  braid::torch::ZeroOptimizer zero(zero_ddp, [&](std::vector<torch::Tensor> shards) {
    return make_optimizer(optimizer, std::move(shards));
  }, options);
  for (int step = 0; step < 3; ++step) {
    ddp.zero_grad();
    backward(*reference, comm.rank(), step);
    ddp.synchronize();
    if (clip > 0) torch::nn::utils::clip_grad_norm_(reference->parameters(), clip);
    opt->step();
    zero.zero_grad();
    backward(*sharded, comm.rank(), step);
    zero_ddp.synchronize();
    if (clip > 0) zero.clip_grad_norm(clip);
    zero.step();
  }
  double worst = 0;
  for (std::size_t i = 0; i < reference->parameters().size(); ++i) {
    worst = std::max(worst, (reference->parameters()[i] - sharded->parameters()[i]).abs().max().item<double>());
  }
  return {.difference = worst, .flat_faults = flat_faults(zero, zero_ddp)};
}

// How many of the model's gradients are not the DDP's GradSync's (bucket views: each .grad
// must be its parameter's place in its bucket, after every move).
int misplaced_gradients(braid::torch::DistributedDataParallel& ddp) {
  int misplaced = 0;
  for (std::size_t i = 0; i < ddp.parameters().size(); ++i) {
    const torch::Tensor& grad = ddp.parameters()[i].grad();
    misplaced += grad.data_ptr() != ddp.grad_sync().gradient(static_cast<int>(i)) ? 1 : 0;
  }
  return misplaced;
}

// Plain DDP and bucket-view DDP from the same start on the same data: 4 steps of SGD, the third
// accumulating two backwards under no_sync. The views start in buckets that a restore with the
// reversed order moved (one copy of the zero gradients), and move again at the first step's
// rebuild. cap 0.0005 MiB: several buckets. The parameters must end bitwise equal (the same
// bucket contents reach the same allreduce; only where they live differs), every gradient must
// be its bucket's place after every step, and after the wrapper is gone each .grad must hold
// the last averaged gradient in memory of its own.
void bucket_views(braid::Communicator& comm) {
  auto plain = std::make_shared<TwoLayers>(16, true), viewed = std::make_shared<TwoLayers>(16, true);
  braid::torch::DistributedDataParallel plain_ddp(comm, plain, {.bucket_cap = "0.0005"});
  auto viewed_ddp = std::make_unique<braid::torch::DistributedDataParallel>(
      comm, viewed, braid::torch::DdpOptions{.bucket_cap = "0.0005", .gradient_as_bucket_view = true});
  {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < plain->parameters().size(); ++i) viewed->parameters()[i].copy_(plain->parameters()[i]);
  }
  braid::GradSyncSnapshot reversed = viewed_ddp->grad_sync().snapshot();
  std::reverse(reversed.bucket_order.begin(), reversed.bucket_order.end());
  viewed_ddp->grad_sync().restore(reversed);
  int misplaced = misplaced_gradients(*viewed_ddp);
  torch::optim::SGD plain_opt(plain->parameters(), 0.1), viewed_opt(viewed->parameters(), 0.1);
  for (int step = 0; step < 4; ++step) {
    for (auto [model, ddp, opt] : {std::tuple{plain.get(), &plain_ddp, &plain_opt},
                                   std::tuple{viewed.get(), viewed_ddp.get(), &viewed_opt}}) {
      ddp->zero_grad();
      if (step == 2) {
        braid::NoSync accumulate = ddp->no_sync();
        backward(*model, comm.rank(), 10 + step);
      }
      backward(*model, comm.rank(), step);
      ddp->synchronize();
      opt->step();
    }
    misplaced += misplaced_gradients(*viewed_ddp);
  }
  double worst = 0, grads = 0;
  for (std::size_t i = 0; i < plain->parameters().size(); ++i) {
    worst = std::max(worst, (plain->parameters()[i] - viewed->parameters()[i]).abs().max().item<double>());
    grads = std::max(grads, (plain->parameters()[i].grad() - viewed->parameters()[i].grad()).abs().max().item<double>());
  }
  viewed_ddp.reset();
  double kept = 0;
  for (std::size_t i = 0; i < plain->parameters().size(); ++i) {
    kept = std::max(kept, (plain->parameters()[i].grad() - viewed->parameters()[i].grad()).abs().max().item<double>());
  }
  std::printf("VIEWS misplaced %d parameter-difference %.9g gradient-difference %.9g kept-difference %.9g\n", misplaced,
              worst, grads, kept);
}

void run(braid::Communicator& comm, const std::string& scenario) {
  torch::manual_seed(comm.rank() + 1);  // different initialisations: DDP must broadcast rank 0's
  if (scenario == "mismatched-model") {
    auto model = std::make_shared<TwoLayers>(comm.rank() == 1 ? 17 : 16, true);
    braid::torch::DistributedDataParallel ddp(comm, model);
  } else if (scenario == "unused-param" || scenario == "unused-allowed") {
    auto model = std::make_shared<TwoLayers>(16, false);
    braid::torch::DistributedDataParallel ddp(comm, model, {.allow_unused = scenario == "unused-allowed"});
    train_steps(ddp, *model, comm.rank(), 3);
    std::printf("DIGEST %.9g\n", model->fc1->weight.sum().item<double>());
  } else if (scenario == "zero-vs-ddp") {
    for (const char* cap : {"0.0005", "0.00001"}) {
      for (int stage : {1, 2}) {
        for (const char* optimizer : {"sgd", "adam", "adamw"}) {
          for (double clip : {0.0, 0.05}) {
            ZeroOutcome outcome = zero_against_ddp(comm, cap, stage, optimizer, clip);
            std::printf("ZERO cap %s stage %d %s clip %g flat-faults %d difference %.9g\n", cap, stage, optimizer, clip,
                        outcome.flat_faults, outcome.difference);
          }
        }
      }
    }
  } else if (scenario == "qwz-vs-ddp") {
    for (const char* cap : {"0.0005", "0.00001"}) {
      for (int stage : {1, 2}) {
        for (const char* optimizer : {"sgd", "adamw"}) {
          ZeroOutcome outcome = zero_against_ddp(comm, cap, stage, optimizer, 0.0, {.quantize_weights = true});
          std::printf("QWZ cap %s stage %d %s flat-faults %d difference %.9g\n", cap, stage, optimizer,
                      outcome.flat_faults, outcome.difference);
        }
      }
    }
  } else if (scenario == "zero-without-stage") {
    auto model = std::make_shared<TwoLayers>(16, true);
    braid::torch::DistributedDataParallel ddp(comm, model);
    braid::torch::ZeroOptimizer zero(ddp, [](std::vector<torch::Tensor> shards) {
      return std::make_unique<torch::optim::SGD>(std::move(shards), 0.1);
    });
  } else if (scenario == "bucket-views") {
    bucket_views(comm);
  } else if (scenario == "replaced-grad") {
    auto model = std::make_shared<TwoLayers>(16, true);
    braid::torch::DistributedDataParallel ddp(comm, model);
    model->fc1->weight.mutable_grad() = torch::zeros_like(model->fc1->weight);
    train_steps(ddp, *model, comm.rank(), 1);
  } else if (!run_fully_sharded_scenario(comm, scenario)) {
    throw braid::InvalidArgument({.op = "braid-torch-rank"}, "unknown scenario " + scenario);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: braid-torch-rank SCENARIO\n");
    return 2;
  }
  try {
    braid::Communicator comm = braid::Communicator::init();
    run(comm, argv[1]);
    std::printf("PASS %s\n", argv[1]);
    std::fflush(stdout);
    return 0;
  } catch (const braid::Error& e) {
    std::printf("ERROR %s: %s\n", braid::error_kind_name(e.kind()), e.what());
    std::fflush(stdout);
    return 0;
  }
}
