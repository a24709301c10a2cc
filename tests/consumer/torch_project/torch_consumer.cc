// A LibTorch program over the installed braid::torch: DistributedDataParallel around a small
// model, in a world of one process (no launcher needed), trained for one step.
#include <cstdio>
#include <memory>

#include <torch/torch.h>

#include "braid/comm/communicator.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/distributed_sampler.h"

int main() {
  braid::Communicator comm = braid::Communicator::init();  // alone: a world of size 1
  auto model = std::make_shared<torch::nn::LinearImpl>(4, 2);
  braid::torch::DistributedDataParallel ddp(comm, model);
  torch::optim::SGD opt(model->parameters(), 0.1);
  ddp.zero_grad();
  model->forward(torch::ones({3, 4})).sum().backward();
  ddp.synchronize();
  opt.step();
  braid::torch::DistributedSampler sampler(10, comm.size(), comm.rank());
  std::printf("braid torch consumer OK: %lld parameters, shard of %lld samples\n",
              static_cast<long long>(ddp.parameter_count()), static_cast<long long>(sampler.shard_size()));
  return 0;
}
