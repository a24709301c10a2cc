#include "braid/engine/grad_sync.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "braid/base/check.h"
#include "braid/base/error.h"
#include "braid/collectives/collective_queue.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/shm_workspace.h"
#include "braid/comm/communicator_internal.h"
#include "braid/compress/compressed_call.h"
#include "braid/compress/compressed_reduce_scatter.h"
#include "braid/engine/bucket_memory.h"
#include "braid/engine/readiness_tracker.h"
#include "braid/trace/trace_recorder.h"

namespace braid {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool compresses(const compress::CompressionPolicy& policy) {
  const compress::CompressionPolicyOptions& o = policy.options();
  auto on = [](const compress::CodecSpec& c) { return c.id != compress::CodecId::kNone; };
  if (on(o.codec)) return true;
  for (const auto& phase : o.schedule) if (on(phase.codec)) return true;
  for (const auto& [pattern, codec] : o.overrides) if (on(codec)) return true;
  return false;
}

}  // namespace

// One bucket: its flat buffer (allocated once per plan) and its in-flight allreduce. The
// background thread writes `stats` and `seconds` before the Work completes; the training
// thread reads them after waiting on it.
struct GradSync::BucketRun {
  engine::BucketMemory buffer;  // registered (zero-copy allreduce) unless options say not; ZeRO: padded to size() x shard, the padding stays zero; stage 2: none (pool_)
  std::vector<float> shard;   // ZeRO: this rank's reduce-scattered shard (the reduce_scatter's recv)
  std::string name;        // the tensor name the policy and the compression state see
  compress::Shape shape;   // a single-parameter bucket keeps its parameter's shape (PowerSGD)
  Work work;
  bool launched = false;
  compress::CompressionStats stats;
  double seconds = 0;
};

double GradSyncStats::overlap_ratio() const {
  // 0/0 is 0, as in trace::StepCounters: a step that sent nothing hid nothing.
  return communication_seconds <= 0 ? 0.0 : std::max(0.0, 1.0 - exposed_seconds / communication_seconds);
}

GradSync::GradSync(Communicator& comm, GradSyncOptions options) : comm_(comm), options_(std::move(options)) {
  check_options();
  registered_buckets_ = options_.registered_buckets && ShmWorkspace::usable(comm_);
  if (options_.trace == nullptr) {
    auto recorder = std::make_unique<trace::TraceRecorder>(trace::from_environment(comm_.rank()));
    if (recorder->enabled()) {
      own_trace_ = std::move(recorder);
      options_.trace = own_trace_.get();
      own_trace_->step(0);
    }
  }
}

GradSync::~GradSync() {
  // Let queued buckets finish before their buffers go (each is bounded by BRAID_TIMEOUT).
  for (auto& run : runs_) {
    if (run && run->launched) {
      try {
        run->work.wait();
      } catch (...) {  // the error was (or will never be) reported through finish()
      }
    }
  }
}

void GradSync::check_options() const {
  ErrorContext context{.rank = comm_.rank(), .op = "GradSync"};
  int stage = options_.zero_stage;
  if (stage < 0 || stage > 2) {
    throw InvalidArgument(context, fmt::format("zero_stage {}: GradSync does stages 0 (DDP), 1 and 2; stage 3 "
                                               "shards the parameters, which is the optimizer's",
                                               stage));
  }
  if (stage > 0 && compresses(options_.policy)) {
    throw InvalidArgument(context, fmt::format("zero_stage {} with a compression policy: the policy compresses "
                                               "allreduces; compress ZeRO's reduce-scatters with zero_codec (qgZ)",
                                               stage));
  }
  if (stage == 2 && options_.zero_send_buffers < 1) {
    throw InvalidArgument(context, fmt::format("zero_send_buffers {}: stage 2 needs at least one send buffer",
                                               options_.zero_send_buffers));
  }
  compress::CodecId codec = options_.zero_codec.id;
  if (codec != compress::CodecId::kNone && stage == 0) {
    throw InvalidArgument(context, fmt::format("zero_codec {} with zero_stage 0: qgZ compresses ZeRO's reduce-scatters; "
                                               "DDP's allreduces are compressed through the policy",
                                               compress::to_string(options_.zero_codec)));
  }
  if (codec != compress::CodecId::kNone && codec != compress::CodecId::kInt8 && codec != compress::CodecId::kFp16 &&
      codec != compress::CodecId::kBf16 && codec != compress::CodecId::kSign) {
    throw InvalidArgument(context, fmt::format("zero_codec {}: a reduce-scatter is compressed with int8, fp16, bf16 or "
                                               "sign (the two-stage codecs)",
                                               compress::to_string(options_.zero_codec)));
  }
  if (options_.gradients_in_buckets && (stage > 0 || !options_.on_gradients_moved)) {
    throw InvalidArgument(context, stage > 0 ? fmt::format("gradients_in_buckets with zero_stage {}: ZeRO reduces "
                                                           "into shards, and its buckets are padded send buffers",
                                                           stage)
                                             : std::string("gradients_in_buckets without on_gradients_moved: the "
                                                           "caller must learn where its gradients went"));
  }
  if (stage > 0 && options_.rebuild_buckets) {
    throw InvalidArgument(context, fmt::format("zero_stage {} requires rebuild_buckets = false: the optimizer's "
                                               "shards are laid out on the first plan and must not move",
                                               stage));
  }
}

int GradSync::add_param(std::string name, void* grad, std::int64_t count, DType dtype, compress::Shape shape) {
  ErrorContext context{.rank = comm_.rank(), .op = "GradSync::add_param"};
  if (planned_) throw InvalidArgument(context, fmt::format("'{}' registered after the first mark_ready/finish", name));
  if (dtype != DType::kF32) {
    throw InvalidArgument(context, fmt::format("'{}' is {}: GradSync averages f32 gradients", name, dtype_name(dtype)));
  }
  if (count < 0 || (count > 0 && grad == nullptr && options_.zero_stage != 2)) {
    throw InvalidArgument(context, fmt::format("'{}': {} elements at {}", name, count, grad));
  }
  if ((shape.rows != 0 || shape.cols != 0) && (!shape.is_matrix() || shape.rows * shape.cols != count)) {
    throw InvalidArgument(context, fmt::format("'{}': shape {}x{} does not hold {} elements", name, shape.rows,
                                               shape.cols, count));
  }
  params_.push_back({std::move(name), static_cast<float*>(grad), count, shape});
  return static_cast<int>(params_.size()) - 1;
}

void GradSync::ensure_plan() {
  if (planned_) return;
  std::uint64_t total_bytes = 0;
  for (const Param& p : params_) total_bytes += static_cast<std::uint64_t>(p.count) * sizeof(float);
  std::uint64_t cap = engine::parse_bucket_cap(options_.bucket_cap, total_bytes, comm_.size());
  adopt_plan(engine::plan_buckets(param_infos(), engine::reverse_registration_order(static_cast<int>(params_.size())), cap));
}

void GradSync::adopt_plan(engine::BucketPlan plan) {
  plan_ = std::move(plan);
  tracker_ = std::make_unique<engine::ReadinessTracker>(plan_);
  unused_.assign(params_.size(), 0);
  // The old buckets stay until the gradients that live in them have moved
  // (move_gradients_into_buckets).
  std::vector<std::unique_ptr<BucketRun>> old = std::move(runs_);
  runs_.clear();
  if (options_.zero_stage > 0) layout_ = engine::bucket_shard_layout(plan_, comm_.size());
  for (std::size_t b = 0; b < plan_.buckets.size(); ++b) {
    const engine::Bucket& bucket = plan_.buckets[b];
    auto run = std::make_unique<BucketRun>();
    if (options_.zero_stage > 0) {
      const engine::FlatBuffer& flat = layout_.buffers[b];
      BRAID_CHECK(flat.offsets == bucket.offsets && flat.used_elements == bucket.elements, InvalidArgument,
                  {.rank = comm_.rank(), .op = "GradSync (internal)"}, "bucket {}'s shard layout moved its parameters", b);
      if (options_.zero_stage == 1) run->buffer.assign(comm_, static_cast<std::size_t>(flat.elements), registered_buckets_);
      run->shard.assign(static_cast<std::size_t>(flat.shard_elements), 0.0f);
    } else {
      run->buffer.assign(comm_, static_cast<std::size_t>(bucket.elements), registered_buckets_);
    }
    bool single = bucket.params.size() == 1;
    run->name = single ? params_[static_cast<std::size_t>(bucket.params[0])].name : fmt::format("bucket{}", b);
    if (single) run->shape = params_[static_cast<std::size_t>(bucket.params[0])].shape;
    runs_.push_back(std::move(run));
  }
  if (options_.zero_stage == 2) pool_.reset(send_ring_floats(), registered_buckets_ ? &comm_ : nullptr);
  if (options_.gradients_in_buckets) move_gradients_into_buckets();
  planned_ = true;
}

// gradients_in_buckets: every gradient to its place in its (new) bucket, with its values, and
// the caller told where.
void GradSync::move_gradients_into_buckets() {
  for (std::size_t b = 0; b < plan_.buckets.size(); ++b) {
    const engine::Bucket& bucket = plan_.buckets[b];
    for (std::size_t i = 0; i < bucket.params.size(); ++i) {
      Param& p = params_[static_cast<std::size_t>(bucket.params[i])];
      float* where = runs_[b]->buffer.data() + bucket.offsets[i];
      if (p.count > 0 && p.grad != nullptr) std::memcpy(where, p.grad, static_cast<std::size_t>(p.count) * sizeof(float));
      p.grad = where;
      options_.on_gradients_moved(bucket.params[i], where);
    }
  }
}

void GradSync::mark_ready(int param) {
  if (!sync_) return;
  MutexLock lock(mu_);
  ensure_plan();
  std::vector<int> launchable = tracker_->mark_ready(param);
  if (options_.zero_stage == 1) return;  // stage 1 launches every bucket in finish()
  for (int bucket : launchable) launch(bucket);
}

void GradSync::mark_ready(int param, float* grad) {
  if (!sync_) return;
  MutexLock lock(mu_);
  ensure_plan();
  if (param < 0 || param >= static_cast<int>(params_.size())) {
    throw InvalidArgument({.rank = comm_.rank(), .op = "GradSync::mark_ready"},
                          fmt::format("parameter {} outside [0, {})", param, params_.size()));
  }
  Param& p = params_[static_cast<std::size_t>(param)];
  if (grad == nullptr && p.count > 0) {
    throw InvalidArgument({.rank = comm_.rank(), .op = "GradSync::mark_ready"},
                          fmt::format("'{}': no gradient buffer for {} elements", p.name, p.count));
  }
  p.grad = grad;
  std::vector<int> launchable = tracker_->mark_ready(param);
  if (options_.zero_stage == 1) return;
  for (int bucket : launchable) launch(bucket);
}

void GradSync::plan_buckets() {
  MutexLock lock(mu_);
  ensure_plan();
}

void GradSync::check_zero_bucket(int bucket, const char* op) const {
  ErrorContext context{.rank = comm_.rank(), .op = op};
  if (options_.zero_stage == 0) throw InvalidArgument(context, "zero_stage is 0: the buckets are allreduced, not sharded");
  if (!planned_) throw InvalidArgument(context, "no bucket plan yet: call plan_buckets() or finish a step first");
  if (bucket < 0 || bucket >= static_cast<int>(runs_.size())) {
    throw InvalidArgument(context, fmt::format("bucket {} outside [0, {})", bucket, runs_.size()));
  }
}

BucketShard GradSync::bucket_shard(int bucket) const {
  check_zero_bucket(bucket, "GradSync::bucket_shard");
  return engine::bucket_shard(layout_.buffers[static_cast<std::size_t>(bucket)], comm_.rank());
}

std::span<const float> GradSync::shard_gradient(int bucket) const {
  check_zero_bucket(bucket, "GradSync::shard_gradient");
  return runs_[static_cast<std::size_t>(bucket)]->shard;
}

std::size_t GradSync::padded_elements(int b) const {
  return options_.zero_stage == 0 ? 0 : static_cast<std::size_t>(layout_.buffers[static_cast<std::size_t>(b)].elements);
}

// An empty bucket sends nothing and takes no room in the ring.
bool GradSync::sends_from_ring(int b) const { return options_.zero_stage == 2 && padded_elements(b) > 0; }

// Stage 2's ring: zero_send_buffers bucket caps, at least the largest padded bucket, at most
// all of them (then it is what one buffer per bucket would take).
std::size_t GradSync::send_ring_floats() const {
  std::int64_t largest = 0, total = 0;
  for (const engine::FlatBuffer& flat : layout_.buffers) {
    largest = std::max(largest, flat.elements);
    total += flat.elements;
  }
  auto caps = static_cast<std::int64_t>(options_.zero_send_buffers) * static_cast<std::int64_t>(plan_.cap_bytes / sizeof(float));
  return static_cast<std::size_t>(std::max(largest, std::min(caps, total)));
}

// Copies bucket b's gradients into its send buffer: stage 2's comes from the shared ring (its
// padding zeroed again: other buckets used that memory), lent until the Work is attached.
float* GradSync::stage_gradients(int b) {
  BucketRun& run = *runs_[static_cast<std::size_t>(b)];
  const engine::Bucket& bucket = plan_.buckets[static_cast<std::size_t>(b)];
  float* send = run.buffer.data();
  const std::size_t padded = padded_elements(b);
  if (sends_from_ring(b)) {
    send = pool_.acquire(padded);
    std::fill(send + bucket.elements, send + padded, 0.0f);
  }
  for (std::size_t i = 0; i < bucket.params.size(); ++i) {
    const Param& p = params_[static_cast<std::size_t>(bucket.params[i])];
    float* slot = send + bucket.offsets[i];
    if (unused_[static_cast<std::size_t>(bucket.params[i])]) {
      std::fill_n(slot, p.count, 0.0f);  // allow_unused: no gradient counts as zero
    } else if (p.count > 0 && p.grad != slot) {  // gradients_in_buckets: already there
      BRAID_CHECK(p.grad != nullptr, InvalidArgument, {.rank = comm_.rank(), .op = "GradSync"},
                  "'{}' became ready without a gradient buffer (register one or pass it to mark_ready)", p.name);
      std::memcpy(slot, p.grad, static_cast<std::size_t>(p.count) * sizeof(float));
    }
  }
  return send;
}

void GradSync::launch(int b) {
  float* send = stage_gradients(b);
  if (options_.on_gradients_copied) options_.on_gradients_copied(b);
  if (options_.zero_stage > 0) {
    submit_reduce_scatter(b, send);
    if (sends_from_ring(b)) pool_.attach(runs_[static_cast<std::size_t>(b)]->work);
  } else {
    submit_allreduce(b);
  }
}

// ZeRO: rank r receives block r of the padded buffer, reduced over all ranks. Every rank sends
// the same collectives in bucket order (a bucket of zero elements sends nothing on any rank).
// wire_bytes is what a ring reduce-scatter sends, (n-1) blocks; dense_wire_bytes what DDP's
// ring allreduce of the same bucket would, so wire_fraction() reads about 1/2.
void GradSync::submit_reduce_scatter(int b, float* send) {
  BucketRun& run = *runs_[static_cast<std::size_t>(b)];
  const engine::Bucket& bucket = plan_.buckets[static_cast<std::size_t>(b)];
  std::size_t padded = padded_elements(b);
  auto& queue = detail::CollectiveAccess(comm_).attachment<CollectiveQueue>();
  run.launched = true;
  run.work = queue.submit({.rank = comm_.rank(), .op = fmt::format("GradSync bucket {} (reduce_scatter)", b)},
                          [this, &run, b, send, padded, elements = bucket.elements] {
                            trace::CommScope traced(options_.trace, fmt::format("bucket {}", b));
                            auto start = Clock::now();
                            run.stats = reduce_scatter_bucket(run, {send, padded}, elements);
                            run.seconds = seconds_since(start);
                            if (traced.active()) {
                              traced.event().bytes = padded * sizeof(float);
                              traced.event().wire_bytes = run.stats.wire_bytes;
                              traced.event().algorithm = "reduce_scatter";
                              traced.event().codec = compress::to_string(options_.zero_codec);
                            }
                          });
}

// One bucket's reduce-scatter, fp32 or (qgZ) compressed, on the background thread.
compress::CompressionStats GradSync::reduce_scatter_bucket(BucketRun& run, std::span<float> send, std::int64_t elements) {
  auto shard = static_cast<std::int64_t>(run.shard.size());
  int n = comm_.size();
  compress::CompressionStats stats{.codec = options_.zero_codec, .elements = static_cast<std::uint64_t>(send.size())};
  std::uint64_t sent_before = detail::CollectiveAccess(comm_).bytes_sent();
  if (shard > 0 && options_.zero_codec.id != compress::CodecId::kNone) {
    stats = compress::compressed_reduce_scatter(comm_, send, run.shard, state_,
                                                {.codec = options_.zero_codec,
                                                 .name = run.name,
                                                 .average = options_.average,
                                                 .error_feedback = options_.zero_error_feedback});
  } else {
    if (shard > 0) {
      reduce_scatter(comm_, send.data(), run.shard.data(), shard, DType::kF32,
                     options_.average ? ReduceOp::kAvg : ReduceOp::kSum);
    }
    stats.payload_bytes = send.size() * sizeof(float);
    stats.wire_bytes = static_cast<std::uint64_t>(n - 1) * static_cast<std::uint64_t>(shard) * sizeof(float);
  }
  // Against DDP's ring allreduce of the bucket, as for every GradSync bucket.
  stats.dense_wire_bytes = compress::ring_allreduce_wire_bytes(static_cast<std::size_t>(elements), n, comm_.rank());
  stats.transport_bytes = detail::CollectiveAccess(comm_).bytes_sent() - sent_before;
  return stats;
}

void GradSync::submit_allreduce(int b) {
  BucketRun& run = *runs_[static_cast<std::size_t>(b)];
  const engine::Bucket& bucket = plan_.buckets[static_cast<std::size_t>(b)];
  compress::CodecSpec codec = options_.policy.choose(run.name, bucket.elements, run.shape, step_);
  compress::CompressedAllreduceOptions call{.codec = codec,
                                            .name = run.name,
                                            .shape = run.shape,
                                            .step = step_,
                                            .average = options_.average,
                                            .error_feedback = options_.policy.error_feedback(codec),
                                            .momentum_correction = options_.policy.options().momentum_correction,
                                            .momentum = options_.policy.options().momentum};
  auto& queue = detail::CollectiveAccess(comm_).attachment<CollectiveQueue>();
  run.launched = true;
  run.work = queue.submit({.rank = comm_.rank(), .op = fmt::format("GradSync bucket {}", b)},
                          [this, &run, b, call = std::move(call)] {
                            trace::CommScope traced(options_.trace, fmt::format("bucket {}", b));
                            auto start = Clock::now();
                            run.stats = compress::compressed_allreduce(comm_, run.buffer, state_, call);
                            run.seconds = seconds_since(start);
                            if (traced.active()) {
                              traced.event().bytes = run.buffer.size() * sizeof(float);
                              traced.event().wire_bytes = run.stats.wire_bytes;
                              traced.event().algorithm = "compressed_allreduce";
                              traced.event().codec = compress::to_string(call.codec);
                            }
                          });
}

GradSyncStats GradSync::finish() {
  GradSyncStats stats{.step = step_};
  if (!sync_) return stats;
  auto start = Clock::now();
  std::vector<int> unused;
  {
    MutexLock lock(mu_);
    ensure_plan();
    unused = tracker_->unready_params();
    for (int p : unused) unused_[static_cast<std::size_t>(p)] = 1;
    std::vector<int> launchable = tracker_->complete_unready();
    if (options_.zero_stage == 1) {
      for (int bucket = 0; bucket < static_cast<int>(runs_.size()); ++bucket) launch(bucket);
    } else {
      for (int bucket : launchable) launch(bucket);
    }
  }
  for (auto& run : runs_) {
    try {
      run->work.wait();
    } catch (...) {
      // Every bucket must be over before a send buffer is reused or freed: wait for the rest.
      for (auto& other : runs_) {
        try {
          other->work.wait();
        } catch (...) {
        }
      }
      reclaim_send_buffers();
      throw;
    }
  }
  reclaim_send_buffers();
  stats.exposed_seconds = seconds_since(start);
  if (step_ == 0) check_same_model();
  if (!options_.allow_unused) agree_on_unused(unused);
  for (std::size_t b = 0; b < runs_.size(); ++b) {
    const engine::Bucket& bucket = plan_.buckets[b];
    BucketRun& run = *runs_[b];
    for (std::size_t i = 0; i < bucket.params.size() && options_.zero_stage == 0; ++i) {
      const Param& p = params_[static_cast<std::size_t>(bucket.params[i])];
      const float* average = run.buffer.data() + bucket.offsets[i];
      if (p.count > 0 && p.grad != average) std::memcpy(p.grad, average, static_cast<std::size_t>(p.count) * sizeof(float));
    }
    stats.wire += run.stats;
    stats.communication_seconds += run.seconds;
    run.launched = false;
  }
  stats.buckets = static_cast<int>(runs_.size());
  if (step_ == 0 && options_.rebuild_buckets) rebuild_from_rank0_order();
  {
    MutexLock lock(mu_);
    tracker_->reset();
  }
  std::fill(unused_.begin(), unused_.end(), 0);
  ++step_;
  if (own_trace_) own_trace_->step(static_cast<int>(step_));
  return stats;
}

void GradSync::discard_step() {
  {
    MutexLock lock(mu_);
    tracker_->reset();
  }
  std::fill(unused_.begin(), unused_.end(), 0);
  for (auto& run : runs_) run->launched = false;
}

void GradSync::reclaim_send_buffers() {
  MutexLock lock(mu_);
  pool_.reclaim_all();
}

std::size_t GradSync::send_buffer_bytes() const {
  std::size_t total = pool_.bytes();
  for (const auto& run : runs_) total += run->buffer.size() * sizeof(float);
  return total;
}

std::size_t GradSync::shard_buffer_bytes() const {
  std::size_t total = 0;
  for (const auto& run : runs_) total += run->shard.size() * sizeof(float);
  return total;
}

void GradSync::set_sync(bool on) { sync_ = on; }

namespace {

// Whether some phase, override or the default of the policy compresses with PowerSGD.
bool may_choose_powersgd(const compress::CompressionPolicy& policy) {
  const compress::CompressionPolicyOptions& o = policy.options();
  auto powersgd = [](const compress::CodecSpec& c) { return c.id == compress::CodecId::kPowerSgd; };
  if (powersgd(o.codec)) return true;
  for (const auto& phase : o.schedule) if (powersgd(phase.codec)) return true;
  for (const auto& [pattern, codec] : o.overrides) if (powersgd(codec)) return true;
  return false;
}

}  // namespace

// Under a policy that may choose PowerSGD, every matrix travels alone, so that its bucket has
// its shape and is compressed as the matrix it is (a flat bucket would fall back to none).
std::vector<engine::ParamInfo> GradSync::param_infos() const {
  bool matrices_alone = may_choose_powersgd(options_.policy);
  std::vector<engine::ParamInfo> infos;
  for (const Param& p : params_) {
    infos.push_back({.name = p.name, .count = p.count, .alone = matrices_alone && p.shape.is_matrix()});
  }
  return infos;
}

GradSyncSnapshot GradSync::snapshot() const {
  GradSyncSnapshot snapshot{.step = step_, .compression_state = state_.serialize(), .zero_stage = options_.zero_stage};
  if (planned_) {
    for (const engine::Bucket& bucket : plan_.buckets) {
      snapshot.bucket_order.insert(snapshot.bucket_order.end(), bucket.params.begin(), bucket.params.end());
    }
  }
  return snapshot;
}

void GradSync::restore(const GradSyncSnapshot& snapshot) {
  ErrorContext context{.rank = comm_.rank(), .op = "GradSync::restore"};
  if (step_ != 0 || (planned_ && !options_.gradients_in_buckets)) {
    throw InvalidArgument(context, "restore() must come before the first step");
  }
  if (snapshot.step < 0) throw InvalidArgument(context, fmt::format("negative step {}", snapshot.step));
  if (snapshot.zero_stage != options_.zero_stage) {
    throw InvalidArgument(context, fmt::format("snapshot taken with zero_stage {}, this GradSync has zero_stage {}",
                                               snapshot.zero_stage, options_.zero_stage));
  }
  if (!snapshot.bucket_order.empty()) {
    MutexLock lock(mu_);
    ensure_plan();  // for the byte cap, which depends only on the parameters
    adopt_plan(engine::plan_buckets(param_infos(), snapshot.bucket_order, plan_.cap_bytes));
  }
  state_.deserialize(snapshot.compression_state);
  step_ = snapshot.step;
}

}  // namespace braid
