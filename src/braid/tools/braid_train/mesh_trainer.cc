#include "braid/tools/braid_train/mesh_trainer.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <utility>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/engine/collective_tracing.h"
#include "braid/parallel/axis_traffic.h"
#include "braid/parallel/layer_partition.h"
#include "braid/parallel/pipeline_runtime.h"
#include "braid/parallel/pipeline_schedule.h"
#include "braid/parallel/process_mesh.h"
#include "braid/torch/distributed_data_parallel.h"
#include "braid/torch/distributed_sampler.h"
#include "braid/torch/gradient_clipping.h"
#include "braid/torch/model_state_bytes.h"
#include "braid/torch/sequential_stage.h"
#include "braid/torch/tensor_dtype.h"
#include "braid/torch/tensor_parallel_rng.h"
#include "braid/torch/vocab_parallel.h"
#include "braid/torch/zero_optimizer.h"
#include "braid/trace/trace_recorder.h"
#include "braid/tools/braid_train/blas_runtime.h"
#include "braid/tools/braid_train/fully_sharded_training.h"
#include "braid/tools/braid_train/mesh_checkpoint.h"
#include "braid/tools/braid_train/mesh_fully_sharded.h"
#include "braid/tools/braid_train/mixed_precision_training.h"
#include "braid/tools/braid_train/pipeline_pieces.h"
#include "braid/tools/braid_train/training_common.h"
#include "braid/tools/braid_train/zero_pp.h"

namespace braid::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The stage's pieces as one module (pipeline_pieces.h); the dropout streams ride along as a buffer.
std::shared_ptr<::torch::nn::Module> stage_module(::torch::nn::Sequential& layers, const std::vector<int>& owned,
                                                  const ::torch::Tensor& rng_state) {
  std::shared_ptr<::torch::nn::Module> holder = train::stage_module(layers, owned);
  holder->register_buffer("rng_state", rng_state.clone());
  return holder;
}

class MeshTrainer {
 public:
  MeshTrainer(Communicator& world, const TrainConfig& config) : world_(world), config_(config) {}
  // The TP group's observer points at the recorder, which goes first.
  ~MeshTrainer() {
    if (trace_ && mesh_) stop_tracing_collectives(mesh_->group("tp"));
  }
  MeshTrainer(const MeshTrainer&) = delete;
  MeshTrainer& operator=(const MeshTrainer&) = delete;
  RunSummary run();

 private:
  void set_up();
  void build_model();
  void build_stage();
  void build_data_parallel();
  void resume();
  void save(const torch::TrainingPosition& position);
  void train_step(std::span<const std::int64_t> indices, EpochFigures& figures);
  ::torch::Tensor micro_loss(int mb, const ::torch::Tensor& output);
  void share_model();
  void clip_gradients();
  torch::GradientNormScope whole_job_norm(std::set<const void*>& split);
  GradSyncStats synchronize();
  bool update();
  void step_optimizer();
  MeshCheckpoint checkpoint();

  Communicator& world_;
  const TrainConfig& config_;
  std::optional<parallel::ProcessMesh> mesh_;
  int stage_ = 0, tp_rank_ = 0, replica_ = 0, replicas_ = 1;
  std::unique_ptr<TrainingData> data_;
  std::unique_ptr<torch::TensorParallelRng> rng_;
  std::shared_ptr<TrainModel> full_;   // the single-process model: evaluated, checked, exported
  std::shared_ptr<TrainModel> model_;  // what trains: full_ itself, or its TP split
  parallel::LayerPartition partition_;
  std::unique_ptr<torch::SequentialStage> stage_model_;
  std::shared_ptr<::torch::nn::Module> stage_holder_;
  torch::ParameterSplit stage_params_;
  std::set<std::string> replicated_names_;  // stage_params_.replicated, as the stage module names them
  std::unique_ptr<torch::DistributedDataParallel> ddp_;
  std::unique_ptr<::torch::optim::Optimizer> optimizer_;  // --zero 0
  std::unique_ptr<torch::ZeroOptimizer> zero_;             // --zero 1 or 2: sharded over the dp axis
  std::unique_ptr<torch::FullyShardedModule> sharded_;     // --zero 3: the stage's parameters over the dp axis
  std::unique_ptr<FullyShardedPipelineStage> sharded_stage_;  // what the pipeline runs with --zero 3
  std::unique_ptr<trace::TraceRecorder> trace_;
  std::unique_ptr<parallel::PipelineRuntime> runtime_;
  std::unique_ptr<torch::DistributedSampler> sampler_;
  parallel::AxisTraffic traffic_;
  PrecisionPlan precision_;
  Batch current_;
  std::int64_t replica_batch_ = 0, micro_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, step_ = 0;
  torch::TrainingPosition start_;
  bool resumed_ = false;
  double epoch_loss_sum_ = 0;  // last stages' (TP rank 0's) losses of this epoch's steps
  std::vector<double> step_losses_;
  Clock::time_point last_progress_ = Clock::now();
};

void MeshTrainer::set_up() {
  set_threads(config_);
  const int pp = config_.pp, tp = config_.tp;
  replicas_ = world_.size() / (pp * tp);
  mesh_.emplace(world_, std::vector<MeshAxis>{{"dp", replicas_}, {"pp", pp}, {"tp", tp}},
                parallel::MeshOptions{.allow_tp_across_hosts = config_.allow_tp_across_hosts});
  stage_ = mesh_->coordinate("pp");
  tp_rank_ = mesh_->coordinate("tp");
  replica_ = mesh_->coordinate("dp");
  data_ = load_training_data(config_);
  rng_ = std::make_unique<torch::TensorParallelRng>(config_.seed, tp_rank_, stage_);
  build_model();
  sampler_ = std::make_unique<torch::DistributedSampler>(data_->train_size(), replicas_, replica_,
                                                         torch::SamplerOptions{.seed = config_.seed});
  replica_batch_ = config_.batch / replicas_;
  micro_ = replica_batch_ / config_.microbatches;
  steps_per_epoch_ = sampler_->shard_size() / replica_batch_;
  if (steps_per_epoch_ == 0) {
    throw InvalidArgument({.rank = world_.rank(), .op = "braid-train"},
                          fmt::format("--batch {} is larger than the training set of {} samples", config_.batch,
                                      data_->train_size()));
  }
  total_steps_ = config_.steps > 0 ? config_.steps : config_.epochs * steps_per_epoch_;
  precision_ = plan_precision(config_);
  build_stage();
  if (config_.resumes()) resume();
}

// Every rank builds the single-process model from the seed; with --tp its TP group then splits
// it, so the split model starts from exactly the same numbers.
void MeshTrainer::build_model() {
  ::torch::manual_seed(config_.seed);
  full_ = make_model(model_spec(config_, data_->vocabulary(), rng_.get()));
  if (config_.tp == 1) {
    model_ = full_;
    return;
  }
  model_ = make_tensor_parallel_gpt(*full_, mesh_->group("tp"),
                                    {.sequence_parallel = config_.sequence_parallel, .rng = rng_.get()});
}

::torch::Tensor MeshTrainer::micro_loss(int mb, const ::torch::Tensor& output) {
  ::torch::Tensor target = current_.target.narrow(0, mb * micro_, micro_);
  ::torch::Tensor loss = config_.tp > 1
                             ? torch::vocab_parallel_cross_entropy(output, target, mesh_->group("tp"),
                                                                   data_->vocabulary())
                                   .mean()
                             : loss_of(output, target);
  loss = loss.to(::torch::kFloat32) / static_cast<double>(config_.microbatches);
  // fp16: only the last stage has a loss, so this is where every micro-batch's is scaled; the
  // gradients reaching the other stages (and the TP ranks) carry the scale with them.
  return precision_.scaler ? loss * precision_.loss_scale() : loss;
}

void MeshTrainer::build_stage() {
  parallel::ParsedKind kind = parallel::parse_schedule_kind(config_.schedule);
  if (config_.pp == 1) kind = {parallel::ScheduleKind::kGPipe, 1};  // one stage: the micro-batches in a row
  parallel::Schedule schedule = parallel::make_schedule(
      {.kind = kind.kind, .stages = config_.pp, .microbatches = config_.microbatches, .chunks = kind.chunks});
  ::torch::nn::Sequential layers = model_->layers();
  partition_ = parallel::balanced_layer_partition(layer_weights(layers), config_.pp, kind.chunks);
  std::vector<std::int64_t> example(static_cast<std::size_t>(micro_));
  std::iota(example.begin(), example.end(), std::int64_t{0});
  stage_model_ = std::make_unique<torch::SequentialStage>(
      layers, torch::SequentialStageOptions{
                  .stage = stage_,
                  .partition = partition_,
                  .example_input = data_->train_batch(example).input,
                  .input = [this](int mb) { return current_.input.narrow(0, mb * micro_, micro_); },
                  .loss = [this](int mb, const ::torch::Tensor& output) { return micro_loss(mb, output); },
                  .precision = precision_.precision});
  // The shape pass above drew dropout masks; every run draws the same, and resume restores the
  // streams after it.
  stage_holder_ = stage_module(layers, stage_model_->layers(), rng_->state());
  stage_params_ = torch::split_by_tensor_parallelism(*stage_holder_);
  std::set<const void*> replicated;
  for (const ::torch::Tensor& p : stage_params_.replicated) replicated.insert(p.unsafeGetTensorImpl());
  for (const auto& item : stage_holder_->named_parameters()) {
    if (replicated.count(item.value().unsafeGetTensorImpl())) replicated_names_.insert(item.key());
  }
  if (config_.zero == 3) {  // no DDP: the FullyShardedModule reduce-scatters (mesh_fully_sharded.h)
    MeshFullySharded built = make_mesh_fully_sharded(mesh_->data_parallel(), config_, layers, partition_, stage_);
    sharded_ = std::move(built.module);
    sharded_stage_ = std::make_unique<FullyShardedPipelineStage>(*stage_model_, *sharded_, built);
  } else {
    build_data_parallel();
  }
  if (!config_.trace_dir.empty()) {
    trace_ = std::make_unique<trace::TraceRecorder>(trace::TraceOptions{.rank = world_.rank(), .output_dir = config_.trace_dir});
    trace_collectives(mesh_->group("tp"), *trace_);  // the TP and SP collectives on the timeline
  }
  traffic_.watch(mesh_->group("tp"), "tp");
  traffic_.watch(mesh_->data_parallel(), "dp");
  parallel::PipelineStage& piece = sharded_stage_ ? static_cast<parallel::PipelineStage&>(*sharded_stage_) : *stage_model_;
  runtime_ = std::make_unique<parallel::PipelineRuntime>(mesh_->group("pp"), schedule, piece,
                                                         parallel::PipelineRuntimeOptions{.trace = trace_.get()});
}

void MeshTrainer::build_data_parallel() {
  // --zero-pp on the mesh's ZeRO-1: qgZ reduce-scatters and qwZ allgathers over the dp group,
  // the same collectives as the data-parallel trainer's (the TP and pipeline traffic unchanged).
  ZeroPlusPlus zero_pp = parse_zero_pp(config_.zero_pp, config_.zero);
  ddp_ = std::make_unique<torch::DistributedDataParallel>(
      mesh_->data_parallel(), stage_holder_,
      torch::DdpOptions{.bucket_cap = config_.bucket_mb,
                        .policy = config_.zero == 0 ? precision_.ddp_policy(config_) : make_policy(config_),
                        .overlap = false, .registered_buckets = config_.registered_buckets,
                        .gradient_as_bucket_view = config_.bucket_views && config_.zero == 0, .zero_stage = config_.zero,
                        .zero_codec = {.id = config_.zero == 0 ? compress::CodecId::kNone
                                                               : zero_pp.gradient_codec(precision_.wire)},
                        .zero_error_feedback = zero_pp.qgz_error_feedback});
  // ZeRO on a mesh is Megatron's distributed optimizer: each stage's (and TP rank's) parameters
  // sharded over its data-parallel group, the rest of the mesh as without it.
  if (config_.zero > 0) {
    zero_ = std::make_unique<torch::ZeroOptimizer>(
        *ddp_, [this](std::vector<::torch::Tensor> shards) { return make_optimizer(config_, std::move(shards)); },
        precision_.zero_options(zero_pp));
  } else {
    optimizer_ = make_optimizer(config_, stage_model_->parameters());
  }
}

MeshCheckpoint MeshTrainer::checkpoint() {
  // Stage 3's has no world size: it reshards to another dp size (the layout, tp and pp, is in it).
  std::string fingerprint = sharded_ ? config_.zero_fingerprint(steps_per_epoch_) : config_.fingerprint(world_.size());
  return {.world = world_, .data_parallel = mesh_->data_parallel(), .dir = config_.checkpoint_dir, .stage = stage_,
          .tp_rank = tp_rank_, .ddp = ddp_.get(), .optimizer = optimizer_.get(), .fingerprint = std::move(fingerprint),
          .zero = zero_.get(), .sharded = sharded_.get(), .stage_module = stage_holder_.get(),
          .scaler = precision_.scaler ? &*precision_.scaler : nullptr};
}

void MeshTrainer::save(const torch::TrainingPosition& position) {
  {
    ::torch::NoGradGuard no_grad;
    stage_holder_->named_buffers(false)["rng_state"].copy_(rng_->state());
  }
  save_mesh_checkpoint(checkpoint(), position);
}

// --resume promises a continued run: without a checkpoint it is refused on every rank (all
// read the same manifest); --resume-if-present starts at step 0 and says so.
void MeshTrainer::resume() {
  MeshCheckpoint target = checkpoint();
  std::optional<torch::TrainingPosition> position = load_mesh_checkpoint(target);
  if (!position) {
    if (config_.resume_if_present) {
      say(world_, fmt::format("no checkpoint at {}: --resume-if-present starts from step 0", target.manifest_path()));
      return;
    }
    throw InvalidArgument({.rank = world_.rank(), .op = "braid-train --resume"},
                          fmt::format("there is no mesh checkpoint at {} to resume from; drop --resume to start from "
                                      "step 0, or pass --resume-if-present",
                                      target.manifest_path()));
  }
  rng_->set_state(stage_holder_->named_buffers(false)["rng_state"]);
  start_ = *position;
  step_ = position->step;
  resumed_ = true;
}

void MeshTrainer::train_step(std::span<const std::int64_t> indices, EpochFigures& figures) {
  auto start = Clock::now();
  current_ = data_->train_batch(indices);
  if (sharded_) {
    sharded_->zero_grad();
    sharded_->set_sync(false);  // the micro-batches' backwards accumulate; reduce-scattered once below
  } else {
    ddp_->zero_grad();
  }
  traffic_.take();  // count this step only
  parallel::StepReport report = runtime_->run_step();
  if (InjectedOverflow::injects_at(config_, step_ + 1, world_)) poison_accumulated_gradient(stage_model_->parameters());
  figures.communication_seconds += report.wait_seconds;  // pipeline bubble and transfers
  figures.exposed_seconds += report.wait_seconds;
  traffic_.add_sent("pp", report.sent_bytes);
  if (config_.sequence_parallel) torch::sync_sequence_parallel_gradients(stage_params_.replicated, mesh_->group("tp"));
  GradSyncStats stats = synchronize();
  figures.communication_seconds += stats.communication_seconds;
  figures.exposed_seconds += stats.exposed_seconds;
  // This step's loss, on last stages (0 elsewhere); TP ranks hold the same one, counted once.
  double loss = stage_model_->take_loss_sum() / precision_.loss_scale() * (tp_rank_ == 0 ? 1 : 0);
  epoch_loss_sum_ += loss;
  step_losses_.push_back(check_loss_is_finite(world_, config_, loss, step_ + 1) / replicas_);
  bool stepped = update();
  std::uint64_t gathered = zero_ && stepped ? zero_->gather_wire_bytes() : 0;  // a skipped step gathers nothing
  figures.wire_bytes += stats.wire.wire_bytes + gathered;  // ZeRO: + the allgather
  figures.payload_bytes += stats.wire.payload_bytes;
  figures.fp32_bytes += stats.wire.elements * sizeof(float);
  if (trace_) trace_->step(static_cast<int>(step_ + 1));
  figures.step_seconds += seconds_since(start);
  figures.tp_seconds += traffic_.take_seconds()["tp"];
  // The mean over ranks, one allreduce for every axis (the map's order is the same everywhere).
  std::map<std::string, double> bytes = traffic_.take();
  std::vector<double> means;
  for (const auto& [axis, sent] : bytes) means.push_back(sent);
  allreduce(world_, means.data(), means.data(), static_cast<std::int64_t>(means.size()), DType::kF64, ReduceOp::kAvg);
  std::size_t i = 0;
  for (const auto& [axis, sent] : bytes) figures.axis_bytes_per_step[axis] += means[i++];
}

// One replica: nothing to average, and GradSync would copy every gradient into its buckets
// and back for nothing (the DDP is kept for the checkpoints it writes). ZeRO's optimizer
// steps GradSync's shards, and stage 3 its own, so they synchronize even then.
GradSyncStats MeshTrainer::synchronize() {
  if (sharded_) {
    sharded_->count_gradients_in_grad();  // zb1's weight passes add into .grad without the hooks
    sharded_->set_sync(true);
    GradSyncStats stats = stage3_stats(sharded_->synchronize());
    if (!config_.zero_pp.empty()) average_replicated_shard_gradients(*sharded_, replicated_names_, mesh_->group("tp"));
    return stats;
  }
  return replicas_ > 1 || zero_ ? ddp_->synchronize() : GradSyncStats{};
}

// The whole model's norm: without ZeRO every replica holds the averaged gradients and sums its
// stage's and TP piece's over the model-parallel group; with it each rank holds a disjoint shard
// of them, so the squares are summed over the whole job, TP-replicated parameters counted on TP
// rank 0 only (gradient_clipping.h).
void MeshTrainer::clip_gradients() {
  if (!zero_ && !sharded_) {
    torch::clip_gradients_by_global_norm(stage_params_, config_.clip_grad, tp_rank_, mesh_->model_parallel());
    return;
  }
  std::set<const void*> split;
  if (sharded_) {
    sharded_->clip_grad_norm(config_.clip_grad, whole_job_norm(split));
  } else {
    zero_->clip_grad_norm(config_.clip_grad, whole_job_norm(split));
  }
}

torch::GradientNormScope MeshTrainer::whole_job_norm(std::set<const void*>& split) {
  for (const ::torch::Tensor& p : stage_params_.split) split.insert(p.unsafeGetTensorImpl());
  return {.sum_over = &world_, .counted = [this, &split](const ::torch::Tensor& p) {
            return tp_rank_ == 0 || split.count(p.unsafeGetTensorImpl()) > 0;
          }};
}

// fp16: unscale before anything reads the gradients (the clipping norm included), and skip the
// step when any rank of the whole job (every stage, TP rank and replica) found an overflow: one
// rank's inf in one TP piece must stop them all, or the stages and replicas would diverge.
// Returns whether the optimizer stepped.
bool MeshTrainer::update() {
  bool steps = precision_.unscale_or_skip(world_, step_ + 1, [this](double scale) {
    if (sharded_) return sharded_->unscale_gradients(scale, &world_);
    return zero_ ? zero_->unscale_gradients(scale, &world_)
                 : torch::unscale_gradients(torch::gradients_of(stage_model_->parameters()), scale, world_);
  });
  if (!steps) {
    if (zero_) zero_->skip_step();
    return false;
  }
  if (config_.clip_grad > 0) clip_gradients();
  step_optimizer();
  return true;
}

void MeshTrainer::step_optimizer() {
  if (zero_) {
    zero_->step();
  } else if (sharded_) {
    sharded_->step();
  } else {
    optimizer_->step();
  }
}

// Every stage's trained layers (parameters and buffers) to every rank of its pipeline, after the
// TP groups have gathered their shards into the single-process model.
void MeshTrainer::share_model() {
  if (config_.tp > 1) unshard_tensor_parallel_gpt(*model_, *full_);
  ::torch::nn::Sequential layers = full_->layers();
  // ZeRO-3's bf16 storage with tp 1 (full_ is then the model that trains): the owner's layers are
  // bf16, and the other stages take the same bf16 values (fp32 on the wire, exact), so the whole
  // model has the one dtype its evaluation under autocast and its digest need on every rank.
  share_stage_layers(mesh_->group("pp"), layers, partition_, precision_.sixteen_bit_parameters() && config_.tp == 1);
}

RunSummary MeshTrainer::run() {
  set_up();
  say(world_, fmt::format("braid-train: {} on {} ranks x {} thread(s): mesh {} ({} replica(s), {} stage(s), tp {}{}), "
                          "schedule {}, {} micro-batches of {}; {}; BLAS: {}",
                          config_.model, world_.size(), config_.threads, mesh_->layout().describe(), replicas_,
                          config_.pp, config_.tp, config_.sequence_parallel ? " with sequence parallelism" : "",
                          config_.pp > 1 ? config_.schedule : "one stage", config_.microbatches, micro_,
                          data_->describe(), blas_description()));
  if (resumed_) say(world_, fmt::format("resumed from {} at step {}", config_.checkpoint_dir, start_.step));
  RunSummary summary{.model = config_.model, .world = world_.size(), .threads = config_.threads,
                     .compress = config_.compress, .overlap = false, .blas = blas_description(),
                     .data = data_->describe(), .resumed = resumed_, .zero_stage = config_.zero};
  for (const ::torch::Tensor& p : full_->parameters()) summary.parameters += p.numel();
  for (std::int64_t epoch = start_.epoch; step_ < total_steps_; ++epoch) {
    EpochFigures figures{.epoch = epoch + 1, .tokens_per_sample = data_->tokens_per_sample()};
    std::vector<std::int64_t> shard = sampler_->shard(epoch);
    auto start = Clock::now();
    std::int64_t first = epoch == start_.epoch ? start_.batch_in_epoch : 0;
    for (std::int64_t b = first; b < steps_per_epoch_ && step_ < total_steps_; ++b) {
      train_step(std::span<const std::int64_t>(shard.data() + b * replica_batch_, static_cast<std::size_t>(replica_batch_)),
                 figures);
      ++step_;
      ++figures.steps;
      if (!config_.quiet && seconds_since(last_progress_) >= config_.log_interval) {
        last_progress_ = Clock::now();
        say(world_, fmt::format("  epoch {} step {}/{}  loss {:.4f}", epoch + 1, step_, total_steps_, step_losses_.back()));
      }
      bool epoch_done = b + 1 == steps_per_epoch_;
      if (!config_.checkpoint_dir.empty() &&
          ((config_.checkpoint_every > 0 && step_ % config_.checkpoint_every == 0) ||
           (config_.checkpoint_every == 0 && (epoch_done || step_ == total_steps_)))) {
        save(epoch_done ? torch::TrainingPosition{step_, epoch + 1, 0} : torch::TrainingPosition{step_, epoch, b + 1});
      }
    }
    figures.seconds = seconds_since(start);
    figures.samples = figures.steps * config_.batch;
    for (auto& [axis, bytes] : figures.axis_bytes_per_step) bytes /= static_cast<double>(std::max<std::int64_t>(figures.steps, 1));
    figures.train_loss = mean_over_ranks(world_, std::exchange(epoch_loss_sum_, 0.0),
                                         world_.rank() == 0 ? static_cast<double>(figures.steps * replicas_) : 0.0);
    {
      std::optional<torch::FullyShardedModule::FullParameters> whole;  // stage 3: this stage's layers gathered
      if (sharded_) whole.emplace(*sharded_);
      share_model();
      if (config_.check_replicas) check_replicas(world_, *full_, step_);
      // 16-bit parameters compute only under autocast (an fp32 input would meet bf16 weights).
      torch::AutocastScope autocast(precision_.sixteen_bit_parameters() ? precision_.precision : torch::Precision::kFp32);
      evaluate(world_, *data_, *full_, figures);
    }
    say(world_, epoch_line(figures, data_->classification()));
    summary.epochs.push_back(figures);
  }
  summary.steps = step_;
  precision_.report(summary);
  summary.step_losses = step_losses_;
  torch::ModelStateBytes state = sharded_ ? sharded_->model_state_bytes()  // this stage's
                                 : zero_  ? zero_->model_state_bytes()
                                          : torch::model_state_bytes(stage_model_->parameters(), optimizer_.get());
  if (sharded_) summary.gathers = gather_report(*sharded_);
  summary.model_state = {.parameters = state.parameters, .gradients = state.gradients, .master = state.master,
                         .optimizer_state = state.optimizer_state};
  std::optional<torch::FullyShardedModule::FullParameters> whole;  // stage 3: the digest and export see this stage
  if (sharded_) whole.emplace(*sharded_);
  // A run resumed from the checkpoint of its last step trains no epoch, which is where the
  // stages fill full_: without this its digest and export were the initial model's.
  if (summary.epochs.empty()) share_model();
  finish_run(world_, config_, summary, *full_, data_->classification());
  return summary;
}

}  // namespace

RunSummary train_on_mesh(Communicator& world, const TrainConfig& config) { return MeshTrainer(world, config).run(); }

}  // namespace braid::train
