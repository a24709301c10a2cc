#include "braid/tools/braid_train/train_config.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>

#include "braid/base/error.h"
#include "braid/compress/codec_spec.h"
#include "braid/parallel/pipeline_schedule.h"

namespace braid::train {
namespace {

std::string pipeline_part(const TrainConfig& c) {
  return c.pp > 1 ? fmt::format(" pp={} microbatches={} schedule={}", c.pp, c.microbatches, c.schedule) : "";
}

}  // namespace

std::string TrainConfig::data_dir() const {
  if (!data.empty()) return data;
  return model == "gpt" ? "/usr/share/games/fortunes" : "/usr/share/datasets/fashion-mnist";
}

double TrainConfig::learning_rate() const {
  if (lr) return *lr;
  return optimizer == "adam" ? 1e-3 : 0.02;
}

std::string TrainConfig::fingerprint(int world) const {
  return fmt::format("model={} world={} batch={} accumulate={} optimizer={} lr={} compress={} min-elements={} "
                     "warmup={} bucket-mb={} seed={} train-samples={} context={}{}",
                     model, world, batch, accumulate, optimizer, learning_rate(), compress, compress_min_elements,
                     warmup_steps, bucket_mb, seed, train_samples, model == "gpt" ? context : 0, pipeline_part(*this));
}

void add_train_flags(CLI::App& app, TrainConfig& c) {
  app.add_option("--model", c.model, "mlp | cnn (Fashion-MNIST) | gpt (character LM on fortunes)")
      ->check(CLI::IsMember({"mlp", "cnn", "gpt"}))
      ->capture_default_str();
  app.add_option("--data", c.data, "dataset directory (default: the Debian package's)");
  app.add_option("--epochs", c.epochs, "passes over the training set")->capture_default_str();
  app.add_option("--steps", c.steps, "stop after this many optimizer steps (overrides --epochs)");
  app.add_option("--batch", c.batch, "global batch: samples per optimizer step over all ranks")->capture_default_str();
  app.add_option_function<double>(
      "--lr", [&c](double v) { c.lr = v; }, "learning rate, a finite number > 0 (default: sgd 0.02, adam 0.001)");
  app.add_option("--optimizer", c.optimizer, "sgd (momentum 0.9) | adam")
      ->check(CLI::IsMember({"sgd", "adam"}))
      ->capture_default_str();
  app.add_option("--compress", c.compress, "none|fp16|bf16|int8|sign|topk:R|randomk:R|powersgd:r")
      ->capture_default_str();
  app.add_option("--compress-min-elements", c.compress_min_elements, "tensors smaller than this go uncompressed")
      ->capture_default_str();
  app.add_option("--warmup-steps", c.warmup_steps, "uncompressed steps before compression starts")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--overlap", [&c](const std::string& v) { c.overlap = v == "on"; },
         "on: allreduce buckets during backward; off: after it")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str("on");
  app.add_option("--bucket-mb", c.bucket_mb, "MiB per gradient bucket, or auto")->capture_default_str();
  app.add_option("--accumulate", c.accumulate, "micro-batches per optimizer step (gradient accumulation)")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", c.checkpoint_dir, "write checkpoints here (rank 0, atomically)");
  app.add_option("--checkpoint-every", c.checkpoint_every, "steps between checkpoints (0: each epoch end)");
  app.add_flag("--resume", c.resume, "continue from --checkpoint-dir's checkpoint (an error when there is none)");
  app.add_flag("--resume-if-present", c.resume_if_present,
               "continue from --checkpoint-dir's checkpoint if there is one, else start at step 0");
  app.add_option("--trace", c.trace_dir, "write per-rank Chrome traces here");
  app.add_option("--json", c.json_path, "write the per-epoch figures and the summary here (rank 0)");
  app.add_option("--export", c.export_path, "save the final model here (torch::save, rank 0)");
  app.add_option("--threads", c.threads, "intra-op threads per rank (LibTorch and OpenBLAS)")->capture_default_str();
  app.add_option("--seed", c.seed, "initialisation and shuffling seed")->capture_default_str();
  app.add_option("--train-samples", c.train_samples, "use only the first N training samples (0: all)");
  app.add_option("--test-samples", c.test_samples, "evaluate on the first N test samples (0: all)");
  app.add_option("--context", c.context, "gpt: tokens per sample")->capture_default_str();
  app.add_option("--log-interval", c.log_interval, "seconds between progress lines")->capture_default_str();
  app.add_flag("--check-replicas", c.check_replicas, "verify every rank holds identical parameters after each step");
  app.add_flag("--quiet", c.quiet, "no progress lines");
  app.add_flag("--allow-nonfinite-loss", c.allow_nonfinite_loss,
               "keep training when the loss becomes NaN or infinite (default: stop naming the step)");
  app.add_option("--pp", c.pp, "pipeline stages (the world is pp x data-parallel replicas)")->capture_default_str();
  app.add_option("--microbatches", c.microbatches, "micro-batches per step and pipeline (with --pp)")
      ->capture_default_str();
  app.add_option("--schedule", c.schedule, "pipeline schedule: gpipe | 1f1b | interleaved:V | zb1 (alias zb-h1)")
      ->capture_default_str();
}

namespace {

// With --pp: the batch splits over world/pp replicas and m micro-batches; accumulation is the
// micro-batches' job, and checkpoints do not cover a pipeline yet.
void validate_pipeline(const TrainConfig& c, int world) {
  auto bad = [](const std::string& detail) { throw InvalidArgument({.op = "braid-train"}, detail); };
  int replicas = world / c.pp;
  parallel::ParsedKind kind = parallel::parse_schedule_kind(c.schedule, "--schedule");  // names the accepted forms
  parallel::check_schedule_spec({.kind = kind.kind, .stages = c.pp, .microbatches = c.microbatches, .chunks = kind.chunks});
  if (c.batch % (static_cast<std::int64_t>(replicas) * c.microbatches) != 0) {
    bad(fmt::format("--batch {} is not divisible by {} data-parallel replicas x --microbatches {}", c.batch, replicas,
                    c.microbatches));
  }
  if (c.accumulate != 1) bad("--accumulate with --pp: the pipeline's micro-batches already accumulate");
  if (!c.checkpoint_dir.empty()) bad("--checkpoint-dir with --pp: pipeline checkpoints are not supported yet");
}

}  // namespace

void validate(const TrainConfig& c, int world) {
  auto bad = [](const std::string& detail) { throw InvalidArgument({.op = "braid-train"}, detail); };
  if (c.epochs < 1 && c.steps < 1) bad(fmt::format("--epochs {}: must be at least 1 (or give --steps)", c.epochs));
  if (c.steps < 0) bad(fmt::format("--steps {}: must be at least 0", c.steps));
  if (c.batch < 1) bad(fmt::format("--batch {}: must be at least 1", c.batch));
  if (c.accumulate < 1) bad(fmt::format("--accumulate {}: must be at least 1", c.accumulate));
  if (c.pp < 1 || world % c.pp != 0) {
    bad(fmt::format("--pp {}: must be at least 1 and divide the world size {}", c.pp, world));
  }
  if (c.pp > 1) validate_pipeline(c, world);
  if (c.batch % (world * c.accumulate) != 0 && c.pp == 1) {
    bad(fmt::format("--batch {} is not divisible by the world size {} x --accumulate {}: every rank must get the "
                    "same number of samples per micro-batch",
                    c.batch, world, c.accumulate));
  }
  if (c.lr && !(std::isfinite(*c.lr) && *c.lr > 0)) {
    bad(fmt::format("--lr {}: must be a finite number greater than 0", *c.lr));
  }
  if (c.threads < 1 || c.threads > 256) bad(fmt::format("--threads {}: must be in 1..256", c.threads));
  if (c.context < 2 || c.context > 4096) bad(fmt::format("--context {}: must be in 2..4096", c.context));
  if (c.train_samples < 0 || c.test_samples < 0) bad("--train-samples and --test-samples must be at least 0");
  if (c.checkpoint_every < 0) bad(fmt::format("--checkpoint-every {}: must be at least 0", c.checkpoint_every));
  if (c.resumes() && c.checkpoint_dir.empty()) {
    bad(fmt::format("{} needs --checkpoint-dir", c.resume ? "--resume" : "--resume-if-present"));
  }
  if (c.log_interval <= 0) bad(fmt::format("--log-interval {}: must be positive", c.log_interval));
  compress::parse_codec_spec(c.compress);  // throws InvalidArgument naming the bad spec
}

}  // namespace braid::train
