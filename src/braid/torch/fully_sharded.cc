#include "braid/torch/fully_sharded.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <set>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/collectives/async_collectives.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/compressed_call.h"
#include "braid/compress/compressed_reduce_scatter.h"
#include "braid/compress/quantized_allgather.h"
#include "braid/torch/mixed_precision.h"
#include "braid/torch/model_agreement.h"
#include "braid/torch/tensor_dtype.h"

namespace braid::torch {
namespace {

// Frees the construction's own allocation (not the pool's: a pool buffer has the pool's size).
void empty_storage(const ::torch::Tensor& t) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(at::DataPtr(nullptr, t.device()));
  storage->set_nbytes(0);
}

bool holds_parameters(::torch::nn::Module& layer) { return !layer.parameters(/*recurse=*/true).empty(); }

}  // namespace

// Every Work waited, even when one fails, so no buffer is released under a running collective.
void FullyShardedModule::wait_all(std::vector<Work*> works) {
  std::exception_ptr failure;
  for (Work* work : works) {
    try {
      work->wait();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

std::vector<ShardedUnit> units_of_layers_with_parameters(::torch::nn::Sequential& layers) {
  std::vector<ShardedUnit> units;
  int begin = 0;
  for (int i = 0; i < static_cast<int>(layers->size()); ++i) {
    if (!holds_parameters(*layers->ptr(static_cast<std::size_t>(i)))) continue;
    units.push_back({.name = layers->named_children()[static_cast<std::size_t>(i)].key(), .begin = begin, .end = i + 1});
    begin = i + 1;
  }
  if (units.empty()) throw InvalidArgument({.op = "FullyShardedModule"}, "no layer of the Sequential holds a parameter");
  units.back().end = static_cast<int>(layers->size());  // trailing parameterless layers join the last unit
  return units;
}

FullyShardedModule::FullyShardedModule(Communicator& comm, ::torch::nn::Sequential layers,
                                       std::vector<ShardedUnit> units, const OptimizerFactory& make_inner,
                                       FullyShardedOptions options)
    : comm_(comm),
      layers_(std::move(layers)),
      options_(options),
      tracker_({}, {}, comm.size(), options.max_gathered_units) {
  build_units(std::move(units));
  build_buffers();
  hook_accumulators();
  std::vector<::torch::Tensor> shards;
  for (const Unit& unit : units_) shards.push_back(unit.shard);
  inner_ = make_inner(std::move(shards));
  if (!inner_) throw InvalidArgument({.rank = comm_.rank(), .op = "FullyShardedModule"}, "the optimizer factory returned no optimizer");
}

FullyShardedModule::~FullyShardedModule() {
  for (auto& [accumulator, key] : hooks_) accumulator->del_post_hook(key);
  for (Unit& unit : units_) {
    try {
      if (unit.gather) unit.gather->wait();
      if (unit.reduce) unit.reduce->wait();
    } catch (...) {  // a destructor does not throw; the communicator already holds the error
    }
  }
}

// The ranges must partition the layers in order; each unit's parameters in registration order.
void FullyShardedModule::build_units(std::vector<ShardedUnit> ranges) {
  ErrorContext context{.rank = comm_.rank(), .op = "FullyShardedModule"};
  int expected = 0;
  std::set<const void*> seen;
  for (ShardedUnit& range : ranges) {
    if (range.begin != expected || range.end <= range.begin || range.end > static_cast<int>(layers_->size())) {
      throw InvalidArgument(context, fmt::format("unit '{}' covers layers [{}, {}): the units must cover the {} layers "
                                                 "in order, each from where the previous ended ({})",
                                                 range.name, range.begin, range.end, layers_->size(), expected));
    }
    expected = range.end;
    Unit unit{.range = range};
    for (int layer = range.begin; layer < range.end; ++layer) add_parameters_of(layer, unit, seen);
    if (unit.params.empty()) throw InvalidArgument(context, fmt::format("unit '{}' holds no parameter", range.name));
    units_.push_back(std::move(unit));
  }
  if (expected != static_cast<int>(layers_->size())) {
    throw InvalidArgument(context, fmt::format("the units cover layers [0, {}) of {}", expected, layers_->size()));
  }
  check_same_model_everywhere();
}

// Parameters that need no gradient (frozen) are not sharded: every rank keeps them whole.
void FullyShardedModule::add_parameters_of(int layer, Unit& unit, std::set<const void*>& seen) {
  ErrorContext context{.rank = comm_.rank(), .op = "FullyShardedModule"};
  for (const auto& item : layers_->ptr(static_cast<std::size_t>(layer))->named_parameters(/*recurse=*/true)) {
    const ::torch::Tensor& p = item.value();
    std::string name = fmt::format("{}.{}", layers_->named_children()[static_cast<std::size_t>(layer)].key(), item.key());
    if (!seen.insert(p.unsafeGetTensorImpl()).second) {
      throw InvalidArgument(context, fmt::format("parameter '{}' is shared by two units: stage 3 shards each "
                                                 "parameter in one unit", name));
    }
    if (!p.requires_grad()) continue;
    if (p.scalar_type() != ::torch::kFloat32 || !p.device().is_cpu() || p.is_sparse() || !p.is_contiguous()) {
      throw InvalidArgument(context, fmt::format("parameter '{}': stage 3 shards dense, contiguous float32 CPU tensors",
                                                 name));
    }
    unit.params.push_back(static_cast<int>(params_.size()));
    params_.push_back({.name = name, .tensor = p, .unit = static_cast<int>(units_.size())});
  }
}

void FullyShardedModule::check_same_model_everywhere() {
  std::vector<ParamSignature> signatures;
  for (const Param& p : params_) signatures.push_back({.name = p.name, .dtype = "float", .shape = p.tensor.sizes().vec()});
  for (const auto& item : layers_->named_buffers(/*recurse=*/true)) {
    signatures.push_back({.name = "buffer " + item.key(), .dtype = std::string(item.value().dtype().name()),
                          .shape = item.value().sizes().vec()});
  }
  check_same_model(comm_, signatures, "parameter or buffer");
}

// The full buffer gets rank 0's values (DDP's broadcast), the parameters become views of it,
// this rank's shard is copied out, and the buffer's memory is released.
void FullyShardedModule::build_buffer(Unit& unit) {
  const engine::FlatBuffer& buffer = layout_.buffers[static_cast<std::size_t>(layout_.buffer_of[unit.params.front()])];
  unit.shard_elements = buffer.shard_elements;
  unit.elements = buffer.elements;
  unit.full = ::torch::zeros({unit.elements}, ::torch::kFloat32);
  for (int id : unit.params) {
    Param& p = params_[static_cast<std::size_t>(id)];
    p.offset = layout_.offset_of[static_cast<std::size_t>(id)];
    ::torch::Tensor view = unit.full.narrow(0, p.offset, p.tensor.numel());
    view.copy_(p.tensor.detach().reshape({-1}));
    p.tensor.set_data(view.view(p.tensor.sizes()));
    dense_per_step_ += compress::ring_allreduce_wire_bytes(static_cast<std::size_t>(p.tensor.numel()), comm_.size(),
                                                           comm_.rank());
  }
  broadcast(comm_, unit.full.data_ptr<float>(), unit.elements, DType::kF32, 0);
  unit.shard = unit.full.narrow(0, comm_.rank() * unit.shard_elements, unit.shard_elements).clone();
  if (sixteen_bit()) {  // the exact values are in the shard now: the compute copy becomes 16-bit
    unit.full = ::torch::empty({unit.elements}, options_.parameter_dtype);
    for (int id : unit.params) {
      Param& p = params_[static_cast<std::size_t>(id)];
      p.tensor.set_data(unit.full.narrow(0, p.offset, p.tensor.numel()).view(p.tensor.sizes()));
    }
  }
  unit.shard.set_requires_grad(true);
  unit.shard.mutable_grad() = ::torch::zeros({unit.shard_elements}, ::torch::kFloat32);
  empty_storage(unit.full);
  unit.flat_grad = ::torch::empty({unit.elements}, ::torch::kFloat32);
  empty_storage(unit.flat_grad);  // filled from the pool for each reduce-scatter
}

// One flat buffer per unit (a layout group each), and pools sized to the largest.
void FullyShardedModule::build_buffers() {
  std::vector<engine::ShardParamInfo> infos;
  for (const Param& p : params_) infos.push_back({.name = p.name, .count = p.tensor.numel(), .group = p.unit});
  layout_ = engine::plan_shard_layout(infos, {.world_size = comm_.size(), .alignment_bytes = options_.alignment_bytes});
  std::int64_t largest = 0;
  for (const engine::FlatBuffer& buffer : layout_.buffers) largest = std::max(largest, buffer.elements);
  check_parameter_dtype();
  const auto element_bytes = static_cast<std::int64_t>(::c10::elementSize(options_.parameter_dtype));
  auto buffer_bytes = static_cast<std::size_t>(largest * element_bytes);
  parameter_pool_ = StoragePool(buffer_bytes, options_.max_gathered_units);
  gradient_pool_ = StoragePool(static_cast<std::size_t>(largest) * sizeof(float), kIdleGradientBuffers);  // fp32 always
  ::torch::NoGradGuard no_grad;
  std::vector<std::int64_t> unit_bytes, shard_bytes;
  for (Unit& unit : units_) {
    build_buffer(unit);
    unit_bytes.push_back(unit.elements * element_bytes);
    shard_bytes.push_back(unit.shard_elements * static_cast<std::int64_t>(sizeof(float)));
  }
  tracker_ = parallel::UnitGatherTracker(unit_bytes, shard_bytes, comm_.size(), options_.max_gathered_units);
  set_compressed_wire();
  broadcast_buffers();
  next_reduce_ = unit_count() - 1;
}

void FullyShardedModule::check_parameter_dtype() const {
  ErrorContext context{.rank = comm_.rank(), .op = "FullyShardedModule"};
  if (!sixteen_bit()) return;
  if (options_.parameter_dtype != ::torch::kBFloat16) {
    throw InvalidArgument(context, fmt::format("parameter_dtype {}: the gathered units are stored in float32 or "
                                               "bfloat16 (LibTorch 1.13 has no fp16 CPU matmul to compute with "
                                               "fp16 parameters)",
                                               ::c10::toString(options_.parameter_dtype)));
  }
  if (options_.weight_codec != compress::CodecId::kNone && options_.weight_codec != compress::CodecId::kBf16) {
    throw InvalidArgument(context, fmt::format("parameter_dtype bfloat16 with weight_codec {}: the 16-bit units are "
                                               "gathered in bf16; choose one",
                                               compress::codec_name(options_.weight_codec)));
  }
  if (options_.hierarchical_partition) {
    throw InvalidArgument(context, "parameter_dtype bfloat16 with hierarchical_partition: hpZ's host copies are fp32");
  }
}

// With ZeRO++'s codecs a collective sends the encoded shard (header + body) to each peer, not its
// fp32 bytes: the counters count what goes on the wire.
void FullyShardedModule::set_compressed_wire() {
  ErrorContext context{.rank = comm_.rank(), .op = "FullyShardedModule"};
  auto one_of = [](compress::CodecId id, std::initializer_list<compress::CodecId> allowed) {
    return std::find(allowed.begin(), allowed.end(), id) != allowed.end();
  };
  using compress::CodecId;
  if (!one_of(options_.weight_codec, {CodecId::kNone, CodecId::kInt8, CodecId::kBf16, CodecId::kFp16})) {
    throw InvalidArgument(context, fmt::format("weight_codec {}: the parameters are gathered in fp32, int8, bf16 or fp16",
                                               compress::codec_name(options_.weight_codec)));
  }
  if (!one_of(options_.gradient_codec, {CodecId::kNone, CodecId::kInt8, CodecId::kBf16, CodecId::kFp16, CodecId::kSign})) {
    throw InvalidArgument(context, fmt::format("gradient_codec {}: a reduce-scatter is compressed with int8, fp16, bf16 "
                                               "or sign",
                                               compress::codec_name(options_.gradient_codec)));
  }
  for (int u = 0; u < unit_count(); ++u) {
    std::int64_t s = units_[static_cast<std::size_t>(u)].shard_elements;
    auto payload = [s](CodecId codec) {
      if (codec == CodecId::kNone) return s * static_cast<std::int64_t>(sizeof(float));
      return static_cast<std::int64_t>(compress::quantized_allgather_payload_bytes(s, 0, codec));
    };
    gather_payload_.push_back(sixteen_bit() ? s * 2 : payload(options_.weight_codec));  // 16 bits: the raw bf16 shard
    tracker_.set_wire_payload(u, gather_payload_.back(), payload(options_.gradient_codec));
  }
  if (options_.hierarchical_partition) {
    std::vector<std::int64_t> elements;
    for (const Unit& unit : units_) elements.push_back(unit.elements);
    secondary_.emplace(comm_, elements);
  }
}

// The accumulator's post hook runs once this backward's gradient has been added into .grad.
void FullyShardedModule::hook_accumulators() {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    std::shared_ptr<::torch::autograd::Node> accumulator = ::torch::autograd::impl::grad_accumulator(params_[i].tensor);
    std::uintptr_t key = accumulator->add_post_hook(std::make_unique<::torch::autograd::utils::LambdaPostHook>(
        [this, id = static_cast<int>(i)](const ::torch::autograd::variable_list& outputs,
                                         const ::torch::autograd::variable_list&) {
          // 16-bit parameters get 16-bit gradients from autograd: kept in fp32 from here on, so
          // the next micro-batch accumulates into fp32 as with fp32 storage.
          ::torch::Tensor& param = params_[static_cast<std::size_t>(id)].tensor;
          if (sixteen_bit() && param.grad().defined() && param.grad().scalar_type() != ::torch::kFloat32) {
            param.mutable_grad() = param.grad().to(::torch::kFloat32);
          }
          gradient_final(id);
          return outputs;
        }));
    hooks_.emplace_back(std::move(accumulator), key);
  }
}

void FullyShardedModule::check_not_summoned(const char* op) const {
  if (summoned_) {
    throw InvalidArgument({.rank = comm_.rank(), .op = op},
                          "inside a FullParameters scope every unit is gathered: run the module's own forward there");
  }
}

::torch::Tensor FullyShardedModule::forward(const ::torch::Tensor& input) { return forward_units(0, unit_count(), input); }

::torch::Tensor FullyShardedModule::forward_units(int first, int last, const ::torch::Tensor& input) {
  check_not_summoned("FullyShardedModule::forward");
  BRAID_CHECK(0 <= first && first < last && last <= unit_count(), InvalidArgument,
              {.rank = comm_.rank(), .op = "FullyShardedModule::forward_units"}, "units [{}, {}) of {}", first, last,
              unit_count());
  bool backward_follows = ::torch::GradMode::is_enabled();
  Window window{first, last};
  ::torch::Tensor x = input;
  for (int u = first; u < last; ++u) {
    ensure_gathered(u, +1, window);
    const ShardedUnit& range = units_[static_cast<std::size_t>(u)].range;
    for (auto it = layers_->begin() + range.begin; it != layers_->begin() + range.end; ++it) x = it->forward(x);
    release(u);
    // Fires when the gradient of the unit's output is complete, before any of its backward nodes.
    if (backward_follows && x.requires_grad()) {
      x.register_hook([this, u, window](const ::torch::Tensor&) { before_backward(u, window); });
    }
  }
  return x;
}

void FullyShardedModule::ensure_gathered(int u, int direction, Window window) {
  if (tracker_.demand(u)) issue_gather(u, direction);
  for (int v : tracker_.prefetch_after(u, direction, window.begin, window.end)) issue_gather(v, direction);
  wait_gather(u);
}

void FullyShardedModule::gather_unit(int u) {
  check_not_summoned("FullyShardedModule::gather_unit");
  if (tracker_.demand(u)) issue_gather(u, +1);
  wait_gather(u);
}

void FullyShardedModule::count_gradients_in_grad() {
  for (std::size_t id = 0; id < params_.size(); ++id) {
    if (params_[id].tensor.grad().defined()) gradient_final(static_cast<int>(id));
  }
}

void FullyShardedModule::issue_gather(int u, int direction) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  parameter_pool_.fill(unit.full);
  unit.host_gather = secondary_ && direction < 0 && secondary_->holds(u);
  if (unit.host_gather) {  // hpZ: the forward's values, rebuilt inside the host
    unit.gather = secondary_->gather(u, unit.full.data_ptr<float>());
    auto peers = static_cast<std::uint64_t>(comm_.size() - 1), host_peers = static_cast<std::uint64_t>(secondary_->ranks_per_host() - 1);
    wire_saved_ += peers * static_cast<std::uint64_t>(gather_payload_[static_cast<std::size_t>(u)]) -
                   host_peers * static_cast<std::uint64_t>(secondary_->slice_bytes(u));
    ++host_allgathers_;
    return;
  }
  if (options_.weight_codec != compress::CodecId::kNone && !sixteen_bit()) {  // qwZ: every rank decodes its own shard too
    unit.gather = compress::iquantized_allgather(comm_, unit.shard.data_ptr<float>(), unit.shard_elements,
                                                 unit.full.data_ptr<float>(),
                                                 {.codec = options_.weight_codec, .name = unit.range.name});
    return;
  }
  unit.gather = start_exact_gather(unit);
}

void FullyShardedModule::timed_wait(Work& work) {
  auto start = std::chrono::steady_clock::now();
  work.wait();
  seconds_waiting_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void FullyShardedModule::wait_gather(int u) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  if (!unit.gather) return;
  std::optional<Work> work = std::move(unit.gather);
  unit.gather.reset();
  timed_wait(*work);
  tracker_.gathered(u);
  if (secondary_ && !unit.host_gather) secondary_->keep(u, unit.full.data_ptr<float>());
}

void FullyShardedModule::release(int u) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  if (tracker_.state(u) == parallel::UnitState::kFree) return;
  wait_gather(u);  // never free memory a running allgather writes
  parameter_pool_.drain(unit.full);
  tracker_.freed(u);
}

// Backward has reached unit u, so the units after it have run their backward: any still
// gathered holds a parameter that got no gradient (yet) and is freed rather than kept past the cap.
void FullyShardedModule::before_backward(int u, Window window) {
  for (int v = u + 1; v < window.end; ++v) release(v);
  ensure_gathered(u, -1, window);
}

void FullyShardedModule::gradient_final(int id) {
  Param& p = params_[static_cast<std::size_t>(id)];
  if (p.final) return;
  p.final = true;
  Unit& unit = units_[static_cast<std::size_t>(p.unit)];
  if (++unit.final_params == static_cast<int>(unit.params.size())) after_backward(p.unit);
}

void FullyShardedModule::after_backward(int u) {
  release(u);
  units_[static_cast<std::size_t>(u)].backward_done = true;
  if (sync_) issue_ready_reduces();
}

// In unit order from the last: every rank issues the same reduce-scatters in the same order,
// whatever order its units finished in.
void FullyShardedModule::issue_ready_reduces() {
  while (next_reduce_ >= 0 && units_[static_cast<std::size_t>(next_reduce_)].backward_done) {
    reduce(next_reduce_);
    --next_reduce_;
  }
}

// 0 + g per element, as DDP's zeroed .grad receives it (so a -0.0 reads +0.0 in both).
void FullyShardedModule::reduce(int u) {
  reap_reduces(/*wait_all=*/false);
  Unit& unit = units_[static_cast<std::size_t>(u)];
  ::torch::NoGradGuard no_grad;
  gradient_pool_.fill(unit.flat_grad);
  unit.flat_grad.zero_();
  for (int id : unit.params) {
    Param& p = params_[static_cast<std::size_t>(id)];
    if (!p.tensor.grad().defined()) continue;  // unused (allow_unused): zero
    unit.flat_grad.narrow(0, p.offset, p.tensor.numel()).view(p.tensor.sizes()).add_(p.tensor.grad());
    p.tensor.mutable_grad().reset();
  }
  float* shard_grad = unit.shard.mutable_grad().data_ptr<float>();
  if (options_.gradient_codec != compress::CodecId::kNone) {  // qgZ: summed in rank order, averaged once
    auto s = static_cast<std::size_t>(unit.shard_elements);
    unit.reduce = compress::icompressed_reduce_scatter(
        comm_, {unit.flat_grad.data_ptr<float>(), s * static_cast<std::size_t>(comm_.size())}, {shard_grad, s},
        codec_state_, {.codec = {.id = options_.gradient_codec}, .name = unit.range.name, .average = true});
  } else {
    unit.reduce = ireduce_scatter(comm_, unit.flat_grad.data_ptr<float>(), shard_grad, unit.shard_elements, DType::kF32,
                                  ReduceOp::kAvg);
  }
  tracker_.count_reduce_scatter(u);
}

// Drops the send buffers of the reduce-scatters that completed (all of them with wait_all).
void FullyShardedModule::reap_reduces(bool wait_all_reduces) {
  std::vector<Work*> pending;
  for (Unit& unit : units_) {
    if (unit.reduce) pending.push_back(&*unit.reduce);
  }
  if (wait_all_reduces) {
    auto start = std::chrono::steady_clock::now();
    wait_all(pending);
    seconds_waiting_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  for (Unit& unit : units_) {
    if (unit.reduce && (wait_all_reduces || unit.reduce->test())) {
      unit.reduce.reset();
      gradient_pool_.drain(unit.flat_grad);
    }
  }
}

// Units whose backward never finished hold a parameter without a gradient in this backward.
// Their reduce-scatters are issued now, in order, with zeros for the missing gradients: so
// every rank has issued the same collectives, in the same order, even when the ranks differ in
// which parameters got gradients. Without allow_unused the ranks then agree (one allgather of
// each rank's count) and all raise.
void FullyShardedModule::settle_unused() {
  std::vector<std::string> missing;
  for (const Param& p : params_) {
    if (!p.final) missing.push_back(p.name);
  }
  for (int u = 0; u < unit_count(); ++u) {
    Unit& unit = units_[static_cast<std::size_t>(u)];
    if (unit.backward_done) continue;
    release(u);
    unit.backward_done = true;
  }
  issue_ready_reduces();
  if (options_.allow_unused) return;
  auto mine = static_cast<std::int64_t>(missing.size());
  std::vector<std::int64_t> all(static_cast<std::size_t>(comm_.size()));
  allgather(comm_, &mine, all.data(), 1, DType::kI64);
  std::vector<int> ranks;
  for (int r = 0; r < comm_.size(); ++r) {
    if (all[static_cast<std::size_t>(r)] > 0) ranks.push_back(r);
  }
  if (ranks.empty()) return;
  end_backward();
  zero_grad();
  throw InvalidArgument({.rank = comm_.rank(), .op = "FullyShardedModule::synchronize"},
                        missing.empty()
                            ? fmt::format("rank(s) {} had parameters without a gradient in this backward (pass "
                                          "allow_unused to count them as zero)", fmt::join(ranks, ", "))
                            : fmt::format("parameter(s) {} got no gradient in this backward (pass allow_unused to "
                                          "count them as zero)", fmt::join(missing, ", ")));
}

// Ready for the next forward: nothing gathered, every per-backward mark cleared.
void FullyShardedModule::end_backward() {
  for (int u = 0; u < unit_count(); ++u) release(u);
  reap_reduces(/*wait_all=*/true);
  for (Param& p : params_) p.final = false;
  for (Unit& unit : units_) {
    unit.final_params = 0;
    unit.backward_done = false;
  }
  next_reduce_ = unit_count() - 1;
}

FullyShardedStepStats FullyShardedModule::synchronize() {
  if (!sync_) {
    end_backward();
    return {};
  }
  settle_unused();
  end_backward();
  if (options_.broadcast_buffers) broadcast_buffers();
  std::uint64_t wire = counters().wire_bytes - wire_saved_;  // hpZ's host gathers counted at their own size
  FullyShardedStepStats stats{.wire_bytes = wire - wire_at_last_sync_,
                              .dense_wire_bytes = dense_per_step_,
                              .seconds_waiting = seconds_waiting_};
  wire_at_last_sync_ = wire;
  seconds_waiting_ = 0;
  return stats;
}

void FullyShardedModule::broadcast_buffers() {
  ::torch::NoGradGuard no_grad;
  for (::torch::Tensor& buffer : layers_->buffers(/*recurse=*/true)) {
    if (buffer.numel() == 0) continue;
    BRAID_CHECK(buffer.is_contiguous(), InvalidArgument, {.rank = comm_.rank(), .op = "FullyShardedModule"},
                "a buffer is not contiguous");
    broadcast(comm_, buffer.data_ptr(), buffer.numel(), braid_dtype(buffer, "broadcast"), 0);
  }
}

void FullyShardedModule::zero_grad() {
  for (Param& p : params_) p.tensor.mutable_grad().reset();
}

// The part of each counted parameter inside this rank's shards (the padding is zero either way).
double FullyShardedModule::shard_gradient_squares(const GradientNormScope& scope) const {
  auto squares = [](const ::torch::Tensor& g) { return g.to(::torch::kFloat64).square().sum().item<double>(); };
  double sum = 0;
  for (const Unit& unit : units_) {
    if (!scope.counted) {
      sum += squares(unit.shard.grad());
      continue;
    }
    const engine::FlatBuffer& buffer = layout_.buffers[static_cast<std::size_t>(layout_.buffer_of[unit.params.front()])];
    for (const engine::ShardPiece& piece : buffer.shard_pieces[static_cast<std::size_t>(comm_.rank())]) {
      if (scope.counted(params_[static_cast<std::size_t>(piece.param)].tensor)) {
        sum += squares(unit.shard.grad().narrow(0, piece.shard_offset, piece.length));
      }
    }
  }
  return sum;
}

double FullyShardedModule::clip_grad_norm(double max_norm, const GradientNormScope& scope) {
  double squares = shard_gradient_squares(scope);
  allreduce(scope.sum_over ? *scope.sum_over : comm_, &squares, &squares, 1, DType::kF64, ReduceOp::kSum);
  double norm = std::sqrt(squares);
  if (!std::isfinite(norm)) return norm;
  double scale = max_norm / (norm + 1e-6);
  if (scale < 1) {
    ::torch::NoGradGuard no_grad;
    for (Unit& unit : units_) unit.shard.mutable_grad().mul_(scale);
  }
  return norm;
}

bool FullyShardedModule::unscale_gradients(double scale, Communicator* agree_over) {
  std::vector<::torch::Tensor> shards;
  for (const Unit& unit : units_) shards.push_back(unit.shard.grad());
  return torch::unscale_gradients(shards, scale, agree_over ? *agree_over : comm_);
}

void FullyShardedModule::step() {
  inner_->step();
  if (secondary_) secondary_->invalidate();  // the host copies hold the old values until the next forward
}

void FullyShardedModule::shards_written() {
  if (secondary_) secondary_->invalidate();
}

std::int64_t FullyShardedModule::unit_storage_bytes(int u) const {
  return static_cast<std::int64_t>(units_.at(static_cast<std::size_t>(u)).full.storage().nbytes());
}

ModelStateBytes FullyShardedModule::model_state_bytes() {
  ModelStateBytes bytes;
  for (int u = 0; u < unit_count(); ++u) {
    const Unit& unit = units_[static_cast<std::size_t>(u)];
    bytes.parameters += tensor_bytes(unit.shard) + unit_storage_bytes(u);
    bytes.gradients += tensor_bytes(unit.shard.grad());
  }
  for (const Param& p : params_) bytes.gradients += tensor_bytes(p.tensor.grad());
  if (secondary_) bytes.parameters += secondary_->bytes();  // hpZ's host copy: n / k shards per unit
  bytes.optimizer_state = optimizer_state_bytes(*inner_);
  return bytes;
}

std::int64_t FullyShardedModule::parameter_count() const {
  std::int64_t total = 0;
  for (const Param& p : params_) total += p.tensor.numel();
  return total;
}

}  // namespace braid::torch
