// An in-memory copy of a data-parallel replica's state at a step boundary: parameters, buffers
// and the optimizer's state (SGD's momentum, Adam's moments). braid-train --elastic keeps the
// last two (elastic_trainer.h) and rolls back to the one the survivors agree on after a loss.
// No disk, no transfer: under DDP every rank's replica is the whole, identical state.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace braid::train {

struct ModelSnapshot {
  std::int64_t step = -1;                 // steps completed when taken; -1: empty
  std::vector<::torch::Tensor> tensors;   // parameters, then buffers, cloned
  std::string optimizer;                  // the optimizer's state, serialized
};

ModelSnapshot take_snapshot(std::int64_t step, ::torch::nn::Module& model, ::torch::optim::Optimizer& optimizer);
// Copies the snapshot back into `model` and `optimizer` (the same objects it was taken from).
void restore_snapshot(const ModelSnapshot& snapshot, ::torch::nn::Module& model, ::torch::optim::Optimizer& optimizer);

// The optimizer's state as bytes and back (also what a newcomer receives: elastic_state_transfer.h).
std::string serialize_optimizer(::torch::optim::Optimizer& optimizer);
void load_optimizer(::torch::optim::Optimizer& optimizer, const std::string& bytes);

// The last two snapshots: survivors may have completed one step more than others when a rank
// is lost (a ring allreduce ends on some ranks before others), so the agreed step can be the
// previous one.
class SnapshotPair {
 public:
  void keep(ModelSnapshot snapshot);
  // The snapshot of `step`; throws InvalidArgument naming the steps held when there is none.
  const ModelSnapshot& at(std::int64_t step) const;

 private:
  ModelSnapshot newer_, older_;
};

}  // namespace braid::train
