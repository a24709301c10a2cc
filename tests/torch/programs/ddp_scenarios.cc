// Rank program for the DistributedDataParallel failure tests (tests/torch/ddp_test.cc):
//   braid-torch-rank mismatched-model   rank 1 builds a wider layer than the others
//   braid-torch-rank unused-param       a parameter forward never touches (error by default)
//   braid-torch-rank unused-allowed     the same with allow_unused: trains, replicas agree
//   braid-torch-rank replaced-grad      the user swaps a gradient tensor: refused
// Prints "PASS <scenario>" or the braid::Error ("ERROR <kind>: <message>") and exits 0 either
// way: the error is the scenario's result, and a rank exiting non-zero would make braid-run stop
// the others before they print theirs.
#include <torch/torch.h>

#include <cstdio>
#include <string>

#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "braid/torch/distributed_data_parallel.h"

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
  } else if (scenario == "replaced-grad") {
    auto model = std::make_shared<TwoLayers>(16, true);
    braid::torch::DistributedDataParallel ddp(comm, model);
    model->fc1->weight.mutable_grad() = torch::zeros_like(model->fc1->weight);
    train_steps(ddp, *model, comm.rank(), 1);
  } else {
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
