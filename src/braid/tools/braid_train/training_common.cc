#include "braid/tools/braid_train/training_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "braid/base/atomic_file.h"
#include "braid/base/crc32c.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/compress/codec_spec.h"
#include "braid/tools/braid_train/blas_runtime.h"

namespace braid::train {

::torch::Tensor loss_of(const ::torch::Tensor& logits, const ::torch::Tensor& target, bool sum) {
  namespace F = ::torch::nn::functional;
  ::torch::Tensor flat_logits = logits.reshape({-1, logits.size(-1)}), flat_target = target.reshape({-1});
  if (sum) return F::cross_entropy(flat_logits, flat_target, F::CrossEntropyFuncOptions().reduction(::torch::kSum));
  return F::cross_entropy(flat_logits, flat_target);
}

std::unique_ptr<::torch::optim::Optimizer> make_optimizer(const TrainConfig& c, std::vector<::torch::Tensor> params) {
  if (c.optimizer == "adam") {
    return std::make_unique<::torch::optim::Adam>(std::move(params), ::torch::optim::AdamOptions(c.learning_rate()));
  }
  return std::make_unique<::torch::optim::SGD>(std::move(params),
                                               ::torch::optim::SGDOptions(c.learning_rate()).momentum(0.9));
}

compress::CompressionPolicy make_policy(const TrainConfig& c) {
  return compress::CompressionPolicy({.codec = compress::parse_codec_spec(c.compress),
                                      .min_elements = c.compress_min_elements,
                                      .warmup_steps = c.warmup_steps});
}

ModelSpec model_spec(const TrainConfig& c, std::int64_t vocab, torch::TensorParallelRng* rng) {
  GptSize g = c.gpt_size();
  return {.name = c.model, .vocab = vocab, .context = g.context, .width = g.width, .layers = g.layers,
          .heads = g.heads, .dropout = c.dropout, .rng = rng};
}

void set_threads(const TrainConfig& c) {
  ::torch::set_num_threads(c.threads);
  set_blas_threads(c.threads);
}

void say(const Communicator& comm, const std::string& line) {
  if (comm.rank() != 0) return;
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

void evaluate(Communicator& comm, const TrainingData& data, TrainModel& model, EpochFigures& figures) {
  ::torch::NoGradGuard no_grad;
  model.eval();
  std::int64_t n = data.test_size(), world = comm.size(), rank = comm.rank();
  std::int64_t begin = n * rank / world, end = n * (rank + 1) / world;
  double sums[3] = {0, 0, 0};  // loss, correct, predictions
  for (std::int64_t at = begin; at < end; at += 500) {
    Batch batch = data.test_batch(at, std::min(end, at + 500));
    ::torch::Tensor logits = model.forward(batch.input);
    sums[0] += loss_of(logits, batch.target, /*sum=*/true).item<double>();
    sums[1] += logits.argmax(-1).eq(batch.target).sum().item<double>();
    sums[2] += static_cast<double>(batch.target.numel());
  }
  model.train();
  allreduce(comm, sums, sums, 3, DType::kF64, ReduceOp::kSum);
  figures.test_loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
  if (data.classification()) figures.test_accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0;
}

double mean_over_ranks(Communicator& comm, double loss_sum, double count) {
  double sums[2] = {loss_sum, count};
  allreduce(comm, sums, sums, 2, DType::kF64, ReduceOp::kSum);
  return sums[1] > 0 ? sums[0] / sums[1] : 0;
}

double check_loss_is_finite(Communicator& comm, const TrainConfig& config, double loss, std::int64_t step) {
  double sum = loss;  // NaN or infinite on any rank makes the sum so
  allreduce(comm, &sum, &sum, 1, DType::kF64, ReduceOp::kSum);
  if (std::isfinite(sum) || config.allow_nonfinite_loss) return sum;
  throw InvalidArgument({.rank = comm.rank(), .op = "braid-train", .seq = step},
                        fmt::format("the training loss became {} at step {} (learning rate {}): stopping, since the "
                                    "parameters no longer hold numbers; lower --lr, or pass --allow-nonfinite-loss to "
                                    "train on",
                                    sum, step, config.learning_rate()));
}

std::uint32_t parameter_digest(TrainModel& model) {
  std::uint32_t crc = 0;
  for (const ::torch::Tensor& p : model.parameters()) {
    // Over fp32 values: a mesh stage's own layers may be 16-bit (ZeRO-3's bf16 storage) where
    // the other stages hold the fp32 copy the pipeline broadcast them (exact), so every rank
    // hashes the same bytes; fp32 parameters hash as before.
    ::torch::Tensor c = p.detach().to(::torch::kFloat32).contiguous();
    crc = crc32c(c.data_ptr(), static_cast<std::size_t>(c.nbytes()), crc);
  }
  return crc;
}

void check_replicas(Communicator& comm, TrainModel& model, std::int64_t step) {
  std::uint32_t mine = parameter_digest(model);
  std::vector<std::uint32_t> all(static_cast<std::size_t>(comm.size()));
  allgather(comm, &mine, all.data(), 1, DType::kI32);
  for (int r = 0; r < comm.size(); ++r) {
    if (all[static_cast<std::size_t>(r)] != all[0]) {
      throw Mismatch({.rank = comm.rank(), .peer = r, .op = "braid-train --check-replicas", .seq = step},
                     fmt::format("after step {} rank {}'s parameters (crc32c {:08x}) differ from rank 0's ({:08x})",
                                 step, r, all[static_cast<std::size_t>(r)], all[0]));
    }
  }
}

void finish_run(Communicator& comm, const TrainConfig& config, RunSummary& summary, TrainModel& model,
                bool classification) {
  summary.parameter_digest = parameter_digest(model);
  check_replicas(comm, model, summary.steps);  // the summary promises identical replicas: prove it, always
  say(comm, summary_table(summary, classification));
  if (comm.rank() != 0) return;
  if (!config.json_path.empty()) write_file_atomically(config.json_path, to_json(summary, config).dump(2) + "\n");
  if (!config.export_path.empty()) {
    // Serialized in memory, then written like the JSON: a failure is a SystemError naming the
    // path (not LibTorch's stack trace), and a reader never sees half a model.
    std::ostringstream bytes;
    ::torch::save(std::static_pointer_cast<::torch::nn::Module>(model.shared_from_this()), bytes);
    write_file_atomically(config.export_path, bytes.str());
  }
}

}  // namespace braid::train
