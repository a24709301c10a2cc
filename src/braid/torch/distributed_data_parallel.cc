#include "braid/torch/distributed_data_parallel.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/torch/model_agreement.h"
#include "braid/torch/tensor_dtype.h"

namespace braid::torch {
namespace {

ParamSignature signature_of(const std::string& name, const ::torch::Tensor& tensor) {
  return {.name = name, .dtype = std::string(tensor.dtype().name()), .shape = tensor.sizes().vec()};
}

// GradSync compresses 2-D gradients with PowerSGD as matrices; a conv weight [out, in, kh, kw]
// is treated as [out, in*kh*kw], as PyTorch's PowerSGD hook does.
compress::Shape matrix_shape(const ::torch::Tensor& tensor) {
  if (tensor.dim() < 2) return {};
  return {.rows = tensor.size(0), .cols = tensor.numel() / tensor.size(0)};
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(Communicator& comm, std::shared_ptr<::torch::nn::Module> module,
                                                 DdpOptions options)
    : comm_(comm), module_(std::move(module)), options_(std::move(options)) {
  ErrorContext context{.rank = comm_.rank(), .op = "DistributedDataParallel"};
  if (!module_) throw InvalidArgument(context, "no module");
  std::vector<ParamSignature> signatures;
  std::vector<::torch::Tensor> state;
  for (const auto& item : module_->named_parameters(/*recurse=*/true)) {
    const ::torch::Tensor& p = item.value();
    signatures.push_back(signature_of(item.key(), p));
    state.push_back(p);
    if (!p.requires_grad()) continue;
    if (p.scalar_type() != ::torch::kFloat32 || !p.device().is_cpu() || p.is_sparse() || !p.is_contiguous()) {
      throw InvalidArgument(context, fmt::format("parameter '{}' is {} on {}: braid averages dense, contiguous float32 "
                                                 "CPU tensors",
                                                 item.key(), describe(signatures.back()), p.device().str()));
    }
    names_.push_back(item.key());
    params_.push_back(p);
  }
  for (const auto& item : module_->named_buffers(/*recurse=*/true)) {
    signatures.push_back(signature_of("buffer " + item.key(), item.value()));
    state.push_back(item.value());
  }
  check_same_model(comm_, signatures, "parameter or buffer");
  broadcast_from_rank0(state);
  register_gradients();
}

DistributedDataParallel::~DistributedDataParallel() {
  // The hooks capture `this`; the model (and its accumulators) may outlive the wrapper.
  for (auto& [accumulator, key] : hooks_) accumulator->del_post_hook(key);
}

void DistributedDataParallel::broadcast_from_rank0(const std::vector<::torch::Tensor>& tensors) {
  ::torch::NoGradGuard no_grad;
  for (const ::torch::Tensor& t : tensors) {
    if (t.numel() == 0) continue;
    ::torch::Tensor contiguous = t.contiguous();
    broadcast(comm_, contiguous.data_ptr(), contiguous.numel(), braid_dtype(contiguous, "broadcast"), 0);
    if (!contiguous.is_same(t)) t.copy_(contiguous);
  }
}

void DistributedDataParallel::register_gradients() {
  sync_ = std::make_unique<GradSync>(comm_, GradSyncOptions{.bucket_cap = options_.bucket_cap,
                                                            .policy = options_.policy,
                                                            .allow_unused = options_.allow_unused,
                                                            // ZeRO's shards are laid out on the first plan
                                                            .rebuild_buckets = options_.zero_stage == 0,
                                                            .trace = options_.trace,
                                                            .zero_stage = options_.zero_stage,
                                                            .zero_codec = options_.zero_codec,
                                                            .zero_error_feedback = options_.zero_error_feedback});
  for (std::size_t i = 0; i < params_.size(); ++i) {
    ::torch::Tensor& p = params_[i];
    p.mutable_grad() = ::torch::zeros_like(p, ::torch::MemoryFormat::Contiguous);
    grad_data_.push_back(p.grad().data_ptr());
    int id = sync_->add_param(names_[i], p.grad().data_ptr(), p.numel(), DType::kF32, matrix_shape(p));
    if (!options_.overlap) continue;
    // The accumulator is the node that adds this backward's gradient into .grad; its post hook
    // runs once that is done, i.e. when the gradient is final.
    std::shared_ptr<::torch::autograd::Node> accumulator = ::torch::autograd::impl::grad_accumulator(p);
    std::uintptr_t key = accumulator->add_post_hook(std::make_unique<::torch::autograd::utils::LambdaPostHook>(
        [this, id](const ::torch::autograd::variable_list& outputs, const ::torch::autograd::variable_list&) {
          sync_->mark_ready(id);
          return outputs;
        }));
    hooks_.emplace_back(std::move(accumulator), key);
  }
}

void DistributedDataParallel::zero_grad() {
  for (::torch::Tensor& p : params_) p.mutable_grad().zero_();
}

void DistributedDataParallel::check_gradients_in_place() const {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ::torch::Tensor& grad = params_[i].grad();
    if (!grad.defined() || grad.data_ptr() != grad_data_[i]) {
      throw InvalidArgument({.rank = comm_.rank(), .op = "DistributedDataParallel::synchronize"},
                            fmt::format("the gradient of '{}' was replaced or reset; zero gradients in place "
                                        "(DistributedDataParallel::zero_grad or optimizer.zero_grad())",
                                        names_[i]));
    }
  }
}

// With zero_stage > 0 GradSync's finish() writes nothing back into the gradients: the averaged
// shards stay in GradSync for the ZeroOptimizer.
GradSyncStats DistributedDataParallel::synchronize() {
  check_gradients_in_place();
  if (!options_.overlap && sync_->sync_enabled()) {
    for (int id = static_cast<int>(params_.size()) - 1; id >= 0; --id) sync_->mark_ready(id);  // backward order
  }
  GradSyncStats stats = sync_->finish();
  if (options_.broadcast_buffers && sync_->sync_enabled()) broadcast_buffers();
  return stats;
}

void DistributedDataParallel::broadcast_buffers() {
  std::vector<::torch::Tensor> buffers = module_->buffers(/*recurse=*/true);
  if (!buffers.empty()) broadcast_from_rank0(buffers);
}

std::int64_t DistributedDataParallel::parameter_count() const {
  std::int64_t total = 0;
  for (const ::torch::Tensor& p : params_) total += p.numel();
  return total;
}

}  // namespace braid::torch
