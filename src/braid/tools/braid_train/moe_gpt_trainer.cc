#include "braid/tools/braid_train/moe_gpt_trainer.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <chrono>
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

class MoeGptTrainer {
 public:
  MoeGptTrainer(Communicator& world, const TrainConfig& config) : world_(world), config_(config) {}
  RunSummary run();

 private:
  void set_up();
  double train_step(std::span<const std::int64_t> indices, EpochFigures& figures);
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

  Communicator& world_;
  const TrainConfig& config_;
  std::unique_ptr<TrainingData> data_;
  std::optional<parallel::ProcessMesh> mesh_;
  std::shared_ptr<TrainModel> full_;   // the tp 1 model (holding this rank's experts): export, digest
  std::shared_ptr<TrainModel> model_;  // what trains: full_ itself, or its TP split sharing the MoE layers
  std::vector<std::shared_ptr<torch::MoeLayerImpl>> layers_;
  std::unique_ptr<torch::MoeDataParallel> ddp_;
  std::unique_ptr<::torch::optim::Optimizer> optimizer_;
  std::unique_ptr<torch::DistributedSampler> sampler_;
  std::int64_t rank_batch_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, step_ = 0;
  std::vector<double> step_losses_;
  MoeRunFigures moe_;
  Clock::time_point last_progress_ = Clock::now();
};

void MoeGptTrainer::set_up() {
  set_threads(config_);
  data_ = load_training_data(config_);
  // {edp, ep, pp = 1, tp}: each tp rank's MoE layers over the EP group of its tp index.
  mesh_.emplace(world_, moe_mesh_layout(world_.size(), {.ep = config_.moe.ep, .tp = config_.tp}));
  ::torch::manual_seed(config_.seed);  // the --ep 1 model's draws, whatever the EP size (moe_gpt_model.h)
  full_ = make_moe_gpt(model_spec(config_, data_->vocabulary(), nullptr), ep(), layer_options(config_.moe));
  model_ = config_.tp > 1 ? make_tensor_parallel_gpt(*full_, tp(), {}) : full_;
  layers_ = moe_layers_of(*model_);
  // Expert and gate gradients come out identical over tp (same tokens, same experts), so both
  // sets average over their data-parallel replicas only, never over tp (docs/moe.md).
  ddp_ = std::make_unique<torch::MoeDataParallel>(dense_dp(), expert_dp(), model_,
                                                  torch::DdpOptions{.bucket_cap = config_.bucket_mb,
                                                                    .overlap = config_.overlap,
                                                                    .registered_buckets = config_.registered_buckets,
                                                                    .gradient_as_bucket_view = config_.bucket_views});
  optimizer_ = make_optimizer(config_, model_->parameters());
  sampler_ = std::make_unique<torch::DistributedSampler>(data_->train_size(), dense_dp().size(), dense_dp().rank(),
                                                         torch::SamplerOptions{.seed = config_.seed});
  rank_batch_ = config_.batch / dense_dp().size();
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
  Batch batch = data_->train_batch(indices);
  ::torch::Tensor logits = model_->forward(batch.input);  // first: it sets the layers' auxiliary losses
  ::torch::Tensor loss = cross_entropy(logits, batch.target, /*sum=*/false) + moe_auxiliary_loss(layers_);
  loss.backward();
  GradSyncStats stats = ddp_->synchronize();
  double loss_value = loss.item<double>();
  step_losses_.push_back(check_loss_is_finite(world_, config_, loss_value, step_ + 1) / world_.size());
  optimizer_->step();
  double seconds = seconds_since(start);
  figures.step_seconds += seconds;
  figures.communication_seconds += stats.communication_seconds;
  figures.exposed_seconds += stats.exposed_seconds;
  moe_.dropped_tokens_per_step.push_back(sum_over(dense_dp(), dropped_tokens() - dropped_before));  // tp ranks drop alike
  moe_.alltoall_seconds_per_step.push_back(alltoall_seconds() - alltoall_before);
  moe_.step_seconds.push_back(seconds);
  return loss_value;
}

// Each data-parallel replica evaluates a slice of the test set (its tp ranks the same one), in
// the same number of forwards on every rank: the MoE layers are collective over the EP group (a
// rank with a shorter slice still joins).
void MoeGptTrainer::evaluate(EpochFigures& figures) {
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
    allreduce(dense_dp(), load.data(), load.data(), static_cast<std::int64_t>(load.size()), DType::kI64, ReduceOp::kSum);
    moe_.load.push_back(load);
  }
  summary.moe = moe_;
  torch::ModelStateBytes state = torch::model_state_bytes(model_->parameters(), optimizer_.get());  // this rank's
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
    figures.train_loss = mean_over_ranks(world_, loss_sum, static_cast<double>(figures.steps));
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
