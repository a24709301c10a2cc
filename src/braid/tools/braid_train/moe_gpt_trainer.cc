#include "braid/tools/braid_train/moe_gpt_trainer.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
#include <numeric>
#include <sstream>

#include "braid/base/atomic_file.h"
#include "braid/base/crc32c.h"
#include "braid/base/error.h"
#include "braid/base/moe_mesh_layout.h"
#include "braid/collectives/collectives.h"
#include "braid/parallel/process_mesh.h"
#include "braid/torch/distributed_sampler.h"
#include "braid/torch/model_state_bytes.h"
#include "braid/torch/moe_data_parallel.h"
#include "braid/torch/vocab_parallel.h"
#include "braid/tools/braid_train/blas_runtime.h"
#include "braid/tools/braid_train/moe_gpt_model.h"
#include "braid/tools/braid_train/moe_gpt_pipeline.h"
#include "braid/tools/braid_train/training_common.h"
#include "braid/tools/braid_train/training_data.h"

namespace braid::train {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

torch::MoeLayerOptions layer_options(const MoeTrainConfig& m) {
  return {.experts = m.experts, .top_k = m.top_k, .capacity_factor = m.capacity(), .dropless = m.dropless(),
          .aux_loss_coef = m.aux_loss_coef, .z_loss_coef = m.z_loss_coef, .chunks = m.chunks};
}

std::int64_t sum_over(Communicator& comm, std::int64_t value) {
  allreduce(comm, &value, &value, 1, DType::kI64, ReduceOp::kSum);
  return value;
}

parallel::ScheduleSpec schedule_of(const TrainConfig& config) {
  parallel::ParsedKind kind = parallel::parse_schedule_kind(config.schedule);
  return {.kind = kind.kind, .stages = config.pp, .microbatches = config.microbatches, .chunks = kind.chunks};
}

class MoeGptTrainer {
 public:
  MoeGptTrainer(Communicator& world, const TrainConfig& config) : world_(world), config_(config) {}
  RunSummary run();

 private:
  void set_up();
  void build_pipeline();
  double train_step(std::span<const std::int64_t> indices, EpochFigures& figures);
  double whole_batch_step(std::span<const std::int64_t> indices, EpochFigures& figures);
  double pipeline_step(std::span<const std::int64_t> indices, EpochFigures& figures);
  void evaluate(EpochFigures& figures);
  void finish(RunSummary& summary);
  std::int64_t dropped_tokens() const;
  double alltoall_seconds() const;
  // Cross-entropy of this rank's logits (vocabulary-parallel pieces with --tp), the same on
  // every tp rank.
  ::torch::Tensor cross_entropy(const ::torch::Tensor& logits, const ::torch::Tensor& target, bool sum);
  Communicator& ep() { return mesh_->group("ep"); }
  Communicator& expert_dp() { return mesh_->group("edp"); }
  Communicator& dense_dp() { return mesh_->data_parallel(); }  // edp x ep: the dense replicas
  Communicator& tp() { return mesh_->group("tp"); }
  // Counted once per TP group: its ranks route the same tokens (the sums run over the world,
  // whose stages hold different MoE layers).
  std::int64_t once_per_tp_group(std::int64_t n) const { return mesh_->coordinate("tp") == 0 ? n : 0; }

  Communicator& world_;
  const TrainConfig& config_;
  std::unique_ptr<TrainingData> data_;
  std::optional<parallel::ProcessMesh> mesh_;
  std::shared_ptr<TrainModel> full_;   // the tp 1 model (holding this rank's experts): export, digest
  std::shared_ptr<TrainModel> model_;  // what trains: full_ itself, or its TP split sharing the MoE layers
  std::vector<std::shared_ptr<torch::MoeLayerImpl>> layers_;
  std::unique_ptr<MoeGptPipeline> pipeline_;  // --pp > 1: this rank's stage of the cut model_
  Batch current_;                              // the pipeline's step batch, its micro-batches sliced from it
  std::unique_ptr<torch::MoeDataParallel> ddp_;
  std::unique_ptr<::torch::optim::Optimizer> optimizer_;
  std::unique_ptr<torch::DistributedSampler> sampler_;
  std::int64_t rank_batch_ = 0, micro_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, step_ = 0;
  std::vector<double> step_losses_;
  MoeRunFigures moe_;
  Clock::time_point last_progress_ = Clock::now();
};

void MoeGptTrainer::set_up() {
  set_threads(config_);
  data_ = load_training_data(config_);
  // {edp, ep, pp, tp}: each stage's and tp rank's MoE layers over the EP group of its stage and tp index.
  mesh_.emplace(world_, moe_mesh_layout(world_.size(), {.ep = config_.moe.ep, .pp = config_.pp, .tp = config_.tp}));
  ::torch::manual_seed(config_.seed);  // the --ep 1 model's draws, whatever the EP size (moe_gpt_model.h)
  full_ = make_moe_gpt(model_spec(config_, data_->vocabulary(), nullptr), ep(), layer_options(config_.moe));
  model_ = config_.tp > 1 ? make_tensor_parallel_gpt(*full_, tp(), {}) : full_;
  layers_ = moe_layers_of(*model_);
  sampler_ = std::make_unique<torch::DistributedSampler>(data_->train_size(), dense_dp().size(), dense_dp().rank(),
                                                         torch::SamplerOptions{.seed = config_.seed});
  rank_batch_ = config_.batch / dense_dp().size();
  micro_ = rank_batch_ / config_.microbatches;
  if (config_.pp > 1) build_pipeline();
  // What trains here: the whole model_, or with --pp this stage's layers. Expert and gate
  // gradients come out identical over tp (same tokens, same experts), so both sets average over
  // their data-parallel replicas only, never over tp (docs/moe.md). The pipeline's micro-batches
  // run several backwards per step, so its gradients are averaged after the last (no overlap).
  std::shared_ptr<::torch::nn::Module> trained = pipeline_ ? pipeline_->module() : model_;
  ddp_ = std::make_unique<torch::MoeDataParallel>(dense_dp(), expert_dp(), trained,
                                                  torch::DdpOptions{.bucket_cap = config_.bucket_mb,
                                                                    .overlap = config_.overlap && !pipeline_,
                                                                    .registered_buckets = config_.registered_buckets,
                                                                    .gradient_as_bucket_view = config_.bucket_views});
  optimizer_ = make_optimizer(config_, trained->parameters());
  steps_per_epoch_ = sampler_->shard_size() / rank_batch_;
  if (steps_per_epoch_ == 0) {
    throw InvalidArgument({.rank = world_.rank(), .op = "braid-train"},
                          fmt::format("--batch {} is larger than the training set of {} samples", config_.batch,
                                      data_->train_size()));
  }
  total_steps_ = config_.steps > 0 ? config_.steps : config_.epochs * steps_per_epoch_;
  const MoeTrainConfig& m = config_.moe;
  moe_ = {.ep = m.ep, .experts = m.experts, .top_k = m.top_k, .capacity_factor = m.capacity_factor,
          .tokens_per_step = config_.batch * config_.gpt_size().context * static_cast<std::int64_t>(layers_.size())};
}

void MoeGptTrainer::build_pipeline() {
  std::vector<std::int64_t> example(static_cast<std::size_t>(micro_));
  std::iota(example.begin(), example.end(), std::int64_t{0});
  pipeline_ = std::make_unique<MoeGptPipeline>(
      mesh_->group("pp"), model_->layers(),
      MoeGptPipelineOptions{
          .schedule = schedule_of(config_),
          .stage = mesh_->coordinate("pp"),
          .example_input = data_->train_batch(example).input,
          .input = [this](int mb) { return current_.input.narrow(0, mb * micro_, micro_); },
          .loss = [this](int mb, const ::torch::Tensor& output) {
            ::torch::Tensor target = current_.target.narrow(0, mb * micro_, micro_);
            return cross_entropy(output, target, /*sum=*/false) / static_cast<double>(config_.microbatches);
          }});
}

std::int64_t MoeGptTrainer::dropped_tokens() const {
  std::int64_t n = 0;
  for (const auto& layer : layers_) n += layer->stats().dropped_tokens;
  return n;
}

double MoeGptTrainer::alltoall_seconds() const {
  double s = 0;
  for (const auto& layer : layers_) s += layer->stats().exchange.seconds;
  return s;
}

::torch::Tensor MoeGptTrainer::cross_entropy(const ::torch::Tensor& logits, const ::torch::Tensor& target, bool sum) {
  if (config_.tp == 1) return loss_of(logits, target, sum);
  ::torch::Tensor per_token = torch::vocab_parallel_cross_entropy(logits, target, tp(), data_->vocabulary());
  return sum ? per_token.sum() : per_token.mean();
}

double MoeGptTrainer::train_step(std::span<const std::int64_t> indices, EpochFigures& figures) {
  auto start = Clock::now();
  std::int64_t dropped_before = dropped_tokens();
  double alltoall_before = alltoall_seconds();
  ddp_->zero_grad();
  double loss_value = pipeline_ ? pipeline_step(indices, figures) : whole_batch_step(indices, figures);
  GradSyncStats stats = ddp_->synchronize();
  optimizer_->step();
  double seconds = seconds_since(start);
  figures.step_seconds += seconds;
  figures.communication_seconds += stats.communication_seconds;
  figures.exposed_seconds += stats.exposed_seconds;
  moe_.dropped_tokens_per_step.push_back(sum_over(world_, once_per_tp_group(dropped_tokens() - dropped_before)));
  moe_.alltoall_seconds_per_step.push_back(alltoall_seconds() - alltoall_before);
  moe_.step_seconds.push_back(seconds);
  return loss_value;
}

// The replica's batch in one forward and backward (every rank holds the loss).
double MoeGptTrainer::whole_batch_step(std::span<const std::int64_t> indices, EpochFigures&) {
  Batch batch = data_->train_batch(indices);
  ::torch::Tensor logits = model_->forward(batch.input);  // first: it sets the layers' auxiliary losses
  ::torch::Tensor loss = cross_entropy(logits, batch.target, /*sum=*/false) + moe_auxiliary_loss(layers_);
  loss.backward();
  double loss_value = loss.item<double>();
  step_losses_.push_back(check_loss_is_finite(world_, config_, loss_value, step_ + 1) / world_.size());
  return loss_value;
}

// The replica's batch as m micro-batches through the stages. Each stage holds its part of the
// loss (its MoE layers' auxiliary losses, the last one the task loss too); their sum over the
// pipeline is the replica's loss, counted once per TP group.
double MoeGptTrainer::pipeline_step(std::span<const std::int64_t> indices, EpochFigures& figures) {
  current_ = data_->train_batch(indices);
  parallel::StepReport report = pipeline_->run_step();
  figures.communication_seconds += report.wait_seconds;  // pipeline bubble and transfers
  figures.exposed_seconds += report.wait_seconds;
  double part = mesh_->coordinate("tp") == 0 ? pipeline_->take_loss_sum() : 0.0;
  step_losses_.push_back(check_loss_is_finite(world_, config_, part, step_ + 1) / dense_dp().size());
  return part;
}

// Each data-parallel replica evaluates a slice of the test set (its tp ranks the same one), in
// the same number of forwards on every rank: the MoE layers are collective over the EP group (a
// rank with a shorter slice still joins).
void MoeGptTrainer::evaluate(EpochFigures& figures) {
  if (pipeline_) pipeline_->share_layers();  // every rank evaluates the whole model
  ::torch::NoGradGuard no_grad;
  model_->eval();
  std::int64_t n = data_->test_size(), world = dense_dp().size(), rank = dense_dp().rank();
  std::int64_t begin = n * rank / world, end = n * (rank + 1) / world;
  std::int64_t longest = (n + world - 1) / world, chunks = std::max<std::int64_t>(1, (longest + 499) / 500);
  double sums[2] = {0, 0};  // loss, tokens
  for (std::int64_t c = 0; c < chunks; ++c) {
    std::int64_t a = begin + (end - begin) * c / chunks, b = begin + (end - begin) * (c + 1) / chunks;
    if (a == b) {  // nothing of this rank's, but the EP group's forward needs it
      model_->forward(::torch::zeros({0, config_.gpt_size().context}, ::torch::kInt64));
      continue;
    }
    Batch batch = data_->test_batch(a, b);
    sums[0] += cross_entropy(model_->forward(batch.input), batch.target, /*sum=*/true).item<double>();
    sums[1] += static_cast<double>(batch.target.numel());
  }
  model_->train();
  allreduce(dense_dp(), sums, sums, 2, DType::kF64, ReduceOp::kSum);
  figures.test_loss = sums[1] > 0 ? sums[0] / sums[1] : 0;
}

// The digest and --export of the whole model (every expert gathered), identical on every rank.
void MoeGptTrainer::finish(RunSummary& summary) {
  for (const auto& layer : layers_) {
    std::vector<std::int64_t> load = layer->stats().routed_per_expert;
    for (std::int64_t& n : load) n = once_per_tp_group(n);  // other stages' layers hold zeros here
    allreduce(world_, load.data(), load.data(), static_cast<std::int64_t>(load.size()), DType::kI64, ReduceOp::kSum);
    moe_.load.push_back(load);
  }
  summary.moe = moe_;
  torch::ModelStateBytes state = torch::model_state_bytes(  // this rank's (its stage's)
      pipeline_ ? pipeline_->parameters() : model_->parameters(), optimizer_.get());
  if (pipeline_) pipeline_->share_layers();  // the stages' trained layers, for the digest and --export
  summary.model_state = {.parameters = state.parameters, .gradients = state.gradients,
                         .optimizer_state = state.optimizer_state};
  if (config_.tp > 1) unshard_tensor_parallel_gpt(*model_, *full_);  // the TP shards gathered into full_
  ::torch::Tensor whole = whole_moe_gpt_parameters(*full_, ep());
  summary.parameters = whole.numel();
  summary.parameter_digest = crc32c(whole.data_ptr(), static_cast<std::size_t>(whole.nbytes()), 0);
  std::vector<std::uint32_t> digests(static_cast<std::size_t>(world_.size()));
  allgather(world_, &summary.parameter_digest, digests.data(), 1, DType::kI32);
  for (int r = 0; r < world_.size(); ++r) {
    if (digests[static_cast<std::size_t>(r)] != digests[0]) {
      throw Mismatch({.rank = world_.rank(), .peer = r, .op = "braid-train moe-gpt", .seq = summary.steps},
                     fmt::format("rank {}'s whole model (crc32c {:08x}) differs from rank 0's ({:08x})", r,
                                 digests[static_cast<std::size_t>(r)], digests[0]));
    }
  }
  say(world_, summary_table(summary, /*classification=*/false));
  if (world_.rank() != 0) return;
  if (!config_.json_path.empty()) write_file_atomically(config_.json_path, to_json(summary, config_).dump(2) + "\n");
  if (!config_.export_path.empty()) {
    std::ostringstream bytes;
    ::torch::save(whole, bytes);
    write_file_atomically(config_.export_path, bytes.str());
  }
}

RunSummary MoeGptTrainer::run() {
  set_up();
  say(world_, fmt::format("braid-train: moe-gpt on {} ranks ({}, {} experts, top-{}, capacity {}); {}; global batch "
                          "{} ({} per replica); {} steps per epoch; BLAS: {}",
                          world_.size(), mesh_->layout().describe(), config_.moe.experts, config_.moe.top_k,
                          config_.moe.capacity_factor, data_->describe(), config_.batch, rank_batch_, steps_per_epoch_,
                          blas_description()));
  RunSummary summary{.model = config_.model, .world = world_.size(), .threads = config_.threads,
                     .compress = config_.compress, .overlap = config_.overlap, .blas = blas_description(),
                     .data = data_->describe()};
  for (std::int64_t epoch = 0; step_ < total_steps_; ++epoch) {
    EpochFigures figures{.epoch = epoch + 1, .tokens_per_sample = data_->tokens_per_sample()};
    std::vector<std::int64_t> shard = sampler_->shard(epoch);
    auto start = Clock::now();
    double loss_sum = 0;
    for (std::int64_t b = 0; b < steps_per_epoch_ && step_ < total_steps_; ++b, ++step_, ++figures.steps) {
      loss_sum += train_step({shard.data() + b * rank_batch_, static_cast<std::size_t>(rank_batch_)}, figures);
      if (!config_.quiet && seconds_since(last_progress_) >= config_.log_interval) {
        last_progress_ = Clock::now();
        say(world_, fmt::format("  epoch {} step {}/{}  loss {:.4f} (rank 0)", epoch + 1, step_ + 1, total_steps_,
                                step_losses_.back()));
      }
    }
    figures.samples = figures.steps * config_.batch;
    // With --pp each rank's losses are parts of its replica's: one count per replica.
    bool counts = !pipeline_ || (mesh_->coordinate("tp") == 0 && mesh_->coordinate("pp") == config_.pp - 1);
    figures.train_loss = mean_over_ranks(world_, loss_sum, counts ? static_cast<double>(figures.steps) : 0.0);
    figures.seconds = seconds_since(start);
    evaluate(figures);
    say(world_, epoch_line(figures, /*classification=*/false));
    summary.epochs.push_back(figures);
  }
  summary.steps = step_;
  summary.step_losses = step_losses_;
  finish(summary);
  return summary;
}

}  // namespace

RunSummary train_moe_gpt(Communicator& world, const TrainConfig& config) { return MoeGptTrainer(world, config).run(); }

}  // namespace braid::train
