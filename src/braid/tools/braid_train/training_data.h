// The data braid-train feeds its models, as tensors: Fashion-MNIST images with labels, or
// windows of the fortunes corpus (input tokens and the same window shifted by one as targets).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "braid/tools/braid_train/train_config.h"

namespace braid::train {

struct Batch {
  ::torch::Tensor input;   // images [n, 1, 28, 28] float, or tokens [n, context] int64
  ::torch::Tensor target;  // labels [n], or next tokens [n, context]
};

class TrainingData {
 public:
  virtual ~TrainingData() = default;
  virtual std::int64_t train_size() const = 0;  // samples (windows for gpt)
  virtual std::int64_t test_size() const = 0;
  virtual Batch train_batch(std::span<const std::int64_t> indices) const = 0;
  virtual Batch test_batch(std::int64_t begin, std::int64_t end) const = 0;
  virtual bool classification() const = 0;     // accuracy (true) or perplexity (false)
  virtual std::int64_t tokens_per_sample() const { return 1; }
  virtual std::int64_t vocabulary() const { return 0; }
  virtual std::string describe() const = 0;     // "Fashion-MNIST: 60000 train, 10000 test"
};

// Loads the model's dataset from config.data_dir(). Throws InvalidArgument naming the missing
// or unreadable file, Corrupt for a damaged one.
std::unique_ptr<TrainingData> load_training_data(const TrainConfig& config);

}  // namespace braid::train
