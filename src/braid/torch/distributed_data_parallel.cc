#include "braid/torch/distributed_data_parallel.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>

#include <fmt/format.h>

#include <algorithm>

#include "braid/base/check.h"
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
  // Bucket views die with GradSync's buckets: the model keeps copies.
  if (options_.gradient_as_bucket_view) {
    for (::torch::Tensor& p : params_) {
      if (p.grad().defined()) p.mutable_grad() = p.grad().clone();
    }
  }
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
  GradSyncOptions sync_options{.bucket_cap = options_.bucket_cap,
                               .policy = options_.policy,
                               .allow_unused = options_.allow_unused,
                               .rebuild_buckets = options_.zero_stage == 0,  // ZeRO's shards are laid out on the first plan
                               .trace = options_.trace,
                               .zero_stage = options_.zero_stage,
                               .registered_buckets = options_.registered_buckets,
                               .zero_codec = options_.zero_codec,
                               .zero_error_feedback = options_.zero_error_feedback,
                               .gradients_in_buckets = options_.gradient_as_bucket_view};
  if (releases_gradients()) {
    sync_options.on_gradients_copied = [this](int bucket) { release_gradients(bucket); };
  }
  if (options_.gradient_as_bucket_view) {
    sync_options.on_gradients_moved = [this](int param, float* where) { view_gradient(param, where); };
  }
  sync_ = std::make_unique<GradSync>(comm_, std::move(sync_options));
  live_.assign(params_.size(), 0);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    ::torch::Tensor& p = params_[i];
    // ZeRO-2: no gradient up front; autograd allocates one each step and GradSync is handed it
    // at mark_ready (its address moves from step to step).
    if (!releases_gradients()) p.mutable_grad() = ::torch::zeros_like(p, ::torch::MemoryFormat::Contiguous);
    grad_data_.push_back(p.grad().defined() ? p.grad().data_ptr() : nullptr);
    int id = sync_->add_param(names_[i], grad_data_.back(), p.numel(), DType::kF32, matrix_shape(p));
    if (options_.overlap) hook_accumulator(id);
  }
  // Bucket views: the buckets now, so that the first backward accumulates into them.
  if (options_.gradient_as_bucket_view) sync_->plan_buckets();
}

// GradSync moved parameter `param`'s gradient (with its values) to `where`, in its bucket.
void DistributedDataParallel::view_gradient(int param, float* where) {
  ::torch::Tensor& p = params_[static_cast<std::size_t>(param)];
  p.mutable_grad() = ::torch::from_blob(where, p.sizes(), p.options().requires_grad(false));
  grad_data_[static_cast<std::size_t>(param)] = where;
}

// The accumulator is the node that adds this backward's gradient into .grad; its post hook
// runs once that is done, i.e. when the gradient is final.
void DistributedDataParallel::hook_accumulator(int id) {
  std::shared_ptr<::torch::autograd::Node> accumulator =
      ::torch::autograd::impl::grad_accumulator(params_[static_cast<std::size_t>(id)]);
  std::uintptr_t key = accumulator->add_post_hook(std::make_unique<::torch::autograd::utils::LambdaPostHook>(
      [this, id](const ::torch::autograd::variable_list& outputs, const ::torch::autograd::variable_list&) {
        mark_ready(id);
        return outputs;
      }));
  hooks_.emplace_back(std::move(accumulator), key);
}

void DistributedDataParallel::rehook_accumulators() {
  for (auto& [accumulator, key] : hooks_) accumulator->del_post_hook(key);
  hooks_.clear();
  if (!options_.overlap) return;
  for (std::size_t id = 0; id < params_.size(); ++id) hook_accumulator(static_cast<int>(id));
}

void DistributedDataParallel::mark_ready(int id) {
  if (!releases_gradients()) {
    sync_->mark_ready(id);
    return;
  }
  ::torch::Tensor& param = params_[static_cast<std::size_t>(id)];
  // A ZeroOptimizer with bf16 parameters (ZeroOptions::parameter_dtype): autograd allocates the
  // gradient in the parameter's dtype; it is kept in fp32 from here on (the next micro-batch's
  // gradients accumulate into it in fp32, and GradSync reduces fp32), as in fp32 storage.
  if (param.grad().defined() && param.grad().scalar_type() == ::torch::kBFloat16) {
    param.mutable_grad() = param.grad().to(::torch::kFloat32);
  }
  const ::torch::Tensor& grad = param.grad();
  // AccumulateGrad lays a new gradient out like its (contiguous) parameter.
  BRAID_CHECK(grad.defined() && grad.is_contiguous() && grad.scalar_type() == ::torch::kFloat32, InvalidArgument,
              {.rank = comm_.rank(), .op = "DistributedDataParallel"},
              "the gradient of '{}' is not a dense contiguous float32 tensor", names_[static_cast<std::size_t>(id)]);
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    if (!live_[static_cast<std::size_t>(id)]) {  // allocated by this backward (or an accumulating one before)
      live_[static_cast<std::size_t>(id)] = 1;
      live_gradient_bytes_ += grad.numel() * static_cast<std::int64_t>(sizeof(float));
      peak_gradient_bytes_ = std::max(peak_gradient_bytes_, live_gradient_bytes_);
    }
  }
  if (!sync_->sync_enabled()) return;  // no_sync: the gradient accumulates in .grad
  sync_->mark_ready(id, grad.data_ptr<float>());
}

// ZeRO-2: GradSync has copied bucket `bucket` into its send buffer and never reads these
// gradients again this step; this rank's averaged shard is all that is kept.
void DistributedDataParallel::release_gradients(int bucket) {
  std::lock_guard<std::mutex> lock(live_mu_);
  for (int id : sync_->plan().buckets[static_cast<std::size_t>(bucket)].params) {
    ::torch::Tensor& p = params_[static_cast<std::size_t>(id)];
    if (!p.grad().defined()) continue;  // unused (allow_unused): nothing was allocated
    if (live_[static_cast<std::size_t>(id)]) live_gradient_bytes_ -= p.grad().numel() * static_cast<std::int64_t>(sizeof(float));
    live_[static_cast<std::size_t>(id)] = 0;
    p.mutable_grad().reset();
  }
}

void DistributedDataParallel::zero_grad() {
  for (::torch::Tensor& p : params_) {
    if (releases_gradients()) {
      p.mutable_grad().reset();  // set_to_none: autograd allocates next backward's
    } else {
      p.mutable_grad().zero_();
    }
  }
  std::lock_guard<std::mutex> lock(live_mu_);
  live_gradient_bytes_ = 0;
  std::fill(live_.begin(), live_.end(), 0);
}

void DistributedDataParallel::check_gradients_in_place() const {
  if (releases_gradients()) return;  // handed over at every mark_ready instead
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
    for (int id = static_cast<int>(params_.size()) - 1; id >= 0; --id) {  // backward order
      if (releases_gradients() && !params_[static_cast<std::size_t>(id)].grad().defined()) continue;  // unused
      mark_ready(id);
    }
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
