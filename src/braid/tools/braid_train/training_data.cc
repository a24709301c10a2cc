#include "braid/tools/braid_train/training_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "braid/tools/braid_train/idx_file.h"
#include "braid/tools/braid_train/text_corpus.h"

namespace braid::train {
namespace {

class ImageData : public TrainingData {
 public:
  ImageData(ImageSet train, ImageSet test) : train_(std::move(train)), test_(std::move(test)) {}

  std::int64_t train_size() const override { return train_.count; }
  std::int64_t test_size() const override { return test_.count; }
  bool classification() const override { return true; }
  std::string describe() const override {
    return fmt::format("Fashion-MNIST: {} training and {} test images", train_.count, test_.count);
  }

  Batch train_batch(std::span<const std::int64_t> indices) const override { return gather(train_, indices); }
  Batch test_batch(std::int64_t begin, std::int64_t end) const override {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(end - begin));
    std::iota(indices.begin(), indices.end(), begin);
    return gather(test_, indices);
  }

 private:
  static Batch gather(const ImageSet& set, std::span<const std::int64_t> indices) {
    auto n = static_cast<std::int64_t>(indices.size());
    std::int64_t pixels = set.rows * set.cols;
    Batch batch{::torch::empty({n, 1, set.rows, set.cols}), ::torch::empty({n}, ::torch::kInt64)};
    float* input = batch.input.data_ptr<float>();
    std::int64_t* target = batch.target.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t sample = indices[static_cast<std::size_t>(i)];
      std::memcpy(input + i * pixels, set.pixels.data() + sample * pixels, static_cast<std::size_t>(pixels) * sizeof(float));
      target[i] = set.labels[static_cast<std::size_t>(sample)];
    }
    return batch;
  }

  ImageSet train_, test_;
};

// Sample i is the window starting at token i*context: `context` inputs, and the `context`
// tokens that follow each as targets (non-overlapping windows: one epoch reads the text once).
class TextData : public TrainingData {
 public:
  TextData(TextCorpus corpus, std::int64_t context, std::int64_t train_limit, std::int64_t test_limit)
      : corpus_(std::move(corpus)), context_(context) {
    train_windows_ = windows(corpus_.train, train_limit);
    test_windows_ = windows(corpus_.validation, test_limit);
  }

  std::int64_t train_size() const override { return train_windows_; }
  std::int64_t test_size() const override { return test_windows_; }
  bool classification() const override { return false; }
  std::int64_t tokens_per_sample() const override { return context_; }
  std::int64_t vocabulary() const override { return static_cast<std::int64_t>(corpus_.vocabulary.size()); }
  std::string describe() const override {
    return fmt::format("fortunes: {} training and {} validation windows of {} characters, {} distinct",
                       train_windows_, test_windows_, context_, corpus_.vocabulary.size());
  }

  Batch train_batch(std::span<const std::int64_t> indices) const override { return gather(corpus_.train, indices); }
  Batch test_batch(std::int64_t begin, std::int64_t end) const override {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(end - begin));
    std::iota(indices.begin(), indices.end(), begin);
    return gather(corpus_.validation, indices);
  }

 private:
  std::int64_t windows(const std::vector<std::int32_t>& tokens, std::int64_t limit) const {
    std::int64_t count = (static_cast<std::int64_t>(tokens.size()) - 1) / context_;
    return limit > 0 ? std::min(count, limit) : count;
  }

  Batch gather(const std::vector<std::int32_t>& tokens, std::span<const std::int64_t> indices) const {
    auto n = static_cast<std::int64_t>(indices.size());
    Batch batch{::torch::empty({n, context_}, ::torch::kInt64), ::torch::empty({n, context_}, ::torch::kInt64)};
    std::int64_t* input = batch.input.data_ptr<std::int64_t>();
    std::int64_t* target = batch.target.data_ptr<std::int64_t>();
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int32_t* window = tokens.data() + indices[static_cast<std::size_t>(i)] * context_;
      for (std::int64_t t = 0; t < context_; ++t) {
        input[i * context_ + t] = window[t];
        target[i * context_ + t] = window[t + 1];
      }
    }
    return batch;
  }

  TextCorpus corpus_;
  std::int64_t context_;
  std::int64_t train_windows_ = 0, test_windows_ = 0;
};

}  // namespace

std::unique_ptr<TrainingData> load_training_data(const TrainConfig& config) {
  if (config.is_gpt()) {
    std::int64_t context = config.gpt_size().context;
    return std::make_unique<TextData>(read_text_corpus(config.data_dir(), context), context,
                                      config.train_samples, config.test_samples);
  }
  return std::make_unique<ImageData>(read_image_set(config.data_dir(), "train", config.train_samples),
                                     read_image_set(config.data_dir(), "t10k", config.test_samples));
}

}  // namespace braid::train
