#include "braid/tools/braid_train/model_snapshot.h"

#include <sstream>

#include <fmt/format.h>

#include "braid/base/error.h"

namespace braid::train {

namespace {

std::vector<::torch::Tensor> state_tensors(::torch::nn::Module& model) {
  std::vector<::torch::Tensor> tensors = model.parameters();
  for (const ::torch::Tensor& buffer : model.buffers()) tensors.push_back(buffer);
  return tensors;
}

}  // namespace

ModelSnapshot take_snapshot(std::int64_t step, ::torch::nn::Module& model, ::torch::optim::Optimizer& optimizer) {
  ModelSnapshot snapshot{.step = step};
  for (const ::torch::Tensor& t : state_tensors(model)) snapshot.tensors.push_back(t.detach().clone());
  snapshot.optimizer = serialize_optimizer(optimizer);
  return snapshot;
}

std::string serialize_optimizer(::torch::optim::Optimizer& optimizer) {
  ::torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}

void load_optimizer(::torch::optim::Optimizer& optimizer, const std::string& bytes) {
  std::istringstream in(bytes);
  ::torch::serialize::InputArchive archive;
  archive.load_from(in);
  optimizer.load(archive);
}

void restore_snapshot(const ModelSnapshot& snapshot, ::torch::nn::Module& model, ::torch::optim::Optimizer& optimizer) {
  ::torch::NoGradGuard no_grad;
  std::vector<::torch::Tensor> tensors = state_tensors(model);
  if (tensors.size() != snapshot.tensors.size()) {
    throw InvalidArgument({.op = "elastic restore"}, fmt::format("snapshot of step {} holds {} tensors, the model {}",
                                                                 snapshot.step, snapshot.tensors.size(), tensors.size()));
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) tensors[i].copy_(snapshot.tensors[i]);
  load_optimizer(optimizer, snapshot.optimizer);
}

void SnapshotPair::keep(ModelSnapshot snapshot) {
  older_ = std::move(newer_);
  newer_ = std::move(snapshot);
}

const ModelSnapshot& SnapshotPair::at(std::int64_t step) const {
  if (newer_.step == step) return newer_;
  if (older_.step == step) return older_;
  throw InvalidArgument({.op = "elastic restore"},
                        fmt::format("no in-memory state of step {}: this rank holds steps {} and {} (the survivors "
                                    "may differ by one step, never more)",
                                    step, older_.step, newer_.step));
}

}  // namespace braid::train
