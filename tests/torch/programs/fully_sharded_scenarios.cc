#include "fully_sharded_scenarios.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "braid/base/error.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/fully_sharded.h"

namespace {

namespace nn = torch::nn;

// A layer holding a parameter its forward may skip: `spare` is unused unless use_spare.
struct WithSpare : nn::Module {
  WithSpare() : used(register_module("used", nn::Linear(13, 5))), spare(register_module("spare", nn::Linear(5, 5))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = used->forward(x);
    return use_spare ? spare->forward(h) : h;
  }
  nn::Linear used, spare;
  bool use_spare = false;
};

// Three units of odd sizes (13 x 8 + 13, 5 x 13 + 5 + the spare's 30, 3 x 5 + 3), padded at every
// world size; the middle one holds the unused parameter.
struct Net : nn::Module {
  Net() : layers(register_module("layers", nn::Sequential())) {
    layers->push_back(nn::Linear(8, 13));
    layers->push_back(nn::ReLU());
    spare = std::make_shared<WithSpare>();
    layers->push_back(spare);
    layers->push_back(nn::Linear(5, 3));
  }
  nn::Sequential layers;
  std::shared_ptr<WithSpare> spare;
};

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name, std::vector<torch::Tensor> params) {
  if (name == "sgd") return std::make_unique<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(0.1).momentum(0.9));
  if (name == "adam") return std::make_unique<torch::optim::Adam>(std::move(params), torch::optim::AdamOptions(0.01));
  return std::make_unique<torch::optim::AdamW>(std::move(params), torch::optim::AdamWOptions(0.01).weight_decay(0.1));
}

torch::Tensor micro_batch(int rank, int step, int micro) {
  torch::manual_seed(100 + rank * 10 + step * 3 + micro);  // each rank its own data
  return torch::randn({4, 8});
}

struct Case {
  int cap = 2, accumulate = 1;
  std::string optimizer;
  double clip = 0;
};

struct Outcome {
  double difference = 0;            // the largest parameter difference from DDP's
  std::int64_t storage_after = 0;   // the units' full-buffer bytes after each step, summed
  int max_gathered = 0;
  int padding_faults = 0;           // shard elements outside every parameter that are not 0.0
  int readable_when_freed = 0;      // parameters with bytes in their storage, or a data pointer, after a step
};

// Shard elements no parameter owns must stay exactly 0.0 (the inner optimizer steps them too).
int padding_faults(braid::torch::FullyShardedModule& fsdp, int rank) {
  int faults = 0;
  for (int u = 0; u < fsdp.unit_count(); ++u) {
    torch::Tensor owned = torch::zeros({fsdp.shard(u).numel()}, torch::kBool);
    for (const braid::engine::ShardPiece& piece : fsdp.layout().buffers[static_cast<std::size_t>(u)].shard_pieces[static_cast<std::size_t>(rank)]) {
      owned.narrow(0, piece.shard_offset, piece.length).fill_(true);
    }
    faults += static_cast<int>(fsdp.shard(u).detach().masked_select(owned.logical_not()).ne(0).sum().item<std::int64_t>());
  }
  return faults;
}

int readable_when_freed(Net& net) {
  int readable = 0;
  for (const torch::Tensor& p : net.parameters()) {
    if (p.storage().nbytes() != 0) ++readable;
    try {
      (void)p.data_ptr<float>();
      ++readable;
    } catch (const c10::Error&) {  // "data is not allocated": the memory is gone
    }
  }
  return readable;
}

Outcome sharded_against_ddp(braid::Communicator& comm, const Case& c) {
  auto reference = std::make_shared<Net>();
  auto sharded = std::make_shared<Net>();
  {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < reference->parameters().size(); ++i) sharded->parameters()[i].copy_(reference->parameters()[i]);
  }
  braid::torch::DistributedDataParallel ddp(comm, reference, {.allow_unused = true});
  std::unique_ptr<torch::optim::Optimizer> opt = make_optimizer(c.optimizer, reference->parameters());
  braid::torch::FullyShardedModule fsdp(
      comm, sharded->layers, braid::torch::units_of_layers_with_parameters(sharded->layers),
      [&](std::vector<torch::Tensor> shards) { return make_optimizer(c.optimizer, std::move(shards)); },
      {.max_gathered_units = c.cap, .allow_unused = true});
  Outcome outcome;
  for (int step = 0; step < 3; ++step) {
    ddp.zero_grad();
    fsdp.zero_grad();
    for (int micro = 0; micro < c.accumulate; ++micro) {
      bool last = micro + 1 == c.accumulate;
      {
        std::optional<braid::NoSync> local;
        if (!last) local.emplace(ddp.grad_sync());
        (reference->layers->forward(micro_batch(comm.rank(), step, micro)).pow(2).mean() / c.accumulate).backward();
      }
      fsdp.set_sync(last);
      (fsdp.forward(micro_batch(comm.rank(), step, micro)).pow(2).mean() / c.accumulate).backward();
      if (!last) fsdp.synchronize();
    }
    ddp.synchronize();
    fsdp.synchronize();
    if (c.clip > 0) {
      torch::nn::utils::clip_grad_norm_(reference->parameters(), c.clip);
      fsdp.clip_grad_norm(c.clip);
    }
    opt->step();
    fsdp.step();
    for (int u = 0; u < fsdp.unit_count(); ++u) outcome.storage_after += fsdp.unit_storage_bytes(u);
  }
  outcome.readable_when_freed = readable_when_freed(*sharded);
  outcome.max_gathered = fsdp.counters().max_gathered;
  outcome.padding_faults = padding_faults(fsdp, comm.rank());
  auto full = fsdp.full_state_dict();
  auto names = reference->layers->named_parameters(/*recurse=*/true);
  for (const auto& item : names) {
    outcome.difference = std::max(outcome.difference, (item.value() - full[item.key()]).abs().max().item<double>());
  }
  return outcome;
}

void compare_with_ddp(braid::Communicator& comm) {
  for (int cap : {1, 2, 3}) {
    for (int accumulate : {1, 2}) {
      for (const char* optimizer : {"sgd", "adam", "adamw"}) {
        for (double clip : {0.0, 0.05}) {
          Case c{.cap = cap, .accumulate = accumulate, .optimizer = optimizer, .clip = clip};
          Outcome o = sharded_against_ddp(comm, c);
          std::printf("FSDP cap %d accumulate %d %s clip %g storage-after-step %lld max-gathered %d padding-faults %d "
                      "readable-when-freed %d difference %.9g\n",
                      cap, accumulate, optimizer, clip, static_cast<long long>(o.storage_after), o.max_gathered,
                      o.padding_faults, o.readable_when_freed, o.difference);
        }
      }
    }
  }
}

// Without allow_unused: step 0 leaves the spare unused on every rank, step 1 on every rank but 0
// (the ranks differ: the error all the same, on every rank), step 2 uses it everywhere and trains.
void unused_is_an_error(braid::Communicator& comm) {
  auto net = std::make_shared<Net>();
  braid::torch::FullyShardedModule fsdp(
      comm, net->layers, braid::torch::units_of_layers_with_parameters(net->layers),
      [](std::vector<torch::Tensor> shards) { return make_optimizer("sgd", std::move(shards)); });
  for (int step = 0; step < 3; ++step) {
    net->spare->use_spare = step == 2 || (step == 1 && comm.rank() == 0);
    fsdp.forward(micro_batch(comm.rank(), step, 0)).pow(2).mean().backward();
    try {
      fsdp.synchronize();
      fsdp.step();
      std::printf("STEP %d trained\n", step);
    } catch (const braid::InvalidArgument& e) {
      std::printf("STEP %d refused: %s\n", step, e.what());
    }
  }
}

}  // namespace

bool run_fully_sharded_scenario(braid::Communicator& comm, const std::string& scenario) {
  if (scenario == "fully-sharded-vs-ddp") {
    compare_with_ddp(comm);
  } else if (scenario == "fully-sharded-unused") {
    unused_is_an_error(comm);
  } else {
    return false;
  }
  return true;
}
