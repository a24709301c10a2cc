// FullyShardedModule's whole model on request (fully_sharded.h): the exact gathers of
// FullParameters and the forward's units in their storage dtype, and full_state_dict().
#include <vector>

#include "braid/collectives/async_collectives.h"
#include "braid/collectives/collectives.h"
#include "braid/torch/fully_sharded.h"

namespace braid::torch {

Work FullyShardedModule::start_exact_gather(Unit& unit) {
  if (!sixteen_bit()) {
    return iallgather(comm_, unit.shard.data_ptr<float>(), unit.full.data_ptr<float>(), unit.shard_elements, DType::kF32);
  }
  ::torch::NoGradGuard no_grad;
  ::torch::Tensor slot = unit.full.narrow(0, comm_.rank() * unit.shard_elements, unit.shard_elements);
  slot.copy_(unit.shard);
  return iallgather(comm_, slot.data_ptr(), unit.full.data_ptr(), unit.shard_elements, DType::kBF16);
}

FullyShardedModule::FullParameters::FullParameters(FullyShardedModule& module) : module_(module) {
  module_.check_not_summoned("FullyShardedModule::FullParameters");
  std::vector<Work> works;
  for (int u = 0; u < module_.unit_count(); ++u) {
    module_.release(u);  // a unit left gathered by an interrupted step: gathered again below, outside the tracker
    Unit& unit = module_.units_[static_cast<std::size_t>(u)];
    module_.parameter_pool_.fill(unit.full);
    works.push_back(module_.start_exact_gather(unit));
  }
  std::vector<Work*> pending;
  for (Work& work : works) pending.push_back(&work);
  wait_all(pending);
  module_.summoned_ = true;
}

FullyShardedModule::FullParameters::~FullParameters() {
  for (Unit& unit : module_.units_) module_.parameter_pool_.drain(unit.full);
  module_.summoned_ = false;
}

::torch::OrderedDict<std::string, ::torch::Tensor> FullyShardedModule::full_state_dict() {
  ::torch::OrderedDict<std::string, ::torch::Tensor> state;
  if (!sixteen_bit()) {
    FullParameters full(*this);
    for (const Param& p : params_) state.insert(p.name, p.tensor.detach().clone());
    return state;
  }
  // 16-bit units: the exact fp32 shards, gathered one unit at a time beside the compute copy.
  check_not_summoned("FullyShardedModule::full_state_dict");
  for (const Unit& unit : units_) {
    ::torch::Tensor exact = ::torch::empty({unit.elements}, ::torch::kFloat32);
    allgather(comm_, unit.shard.data_ptr<float>(), exact.data_ptr<float>(), unit.shard_elements, DType::kF32);
    for (int id : unit.params) {
      const Param& p = params_[static_cast<std::size_t>(id)];
      state.insert(p.name, exact.narrow(0, p.offset, p.tensor.numel()).view(p.tensor.sizes()).clone());
    }
  }
  return state;
}

}  // namespace braid::torch
