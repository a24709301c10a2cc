#include "train_fixture.h"

#include <torch/torch.h>

#include "braid/tools/braid_train/models.h"

namespace braid::testing {

std::vector<float> exported_parameters(const std::string& model, const std::string& file) {
  std::shared_ptr<braid::train::TrainModel> m = braid::train::make_model({.name = model, .vocab = 0, .context = 0});
  auto as_module = std::static_pointer_cast<::torch::nn::Module>(m);
  ::torch::load(as_module, file);
  std::vector<float> flat;
  for (const ::torch::Tensor& p : m->parameters()) {
    ::torch::Tensor c = p.detach().contiguous();
    flat.insert(flat.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return flat;
}

}  // namespace braid::testing
