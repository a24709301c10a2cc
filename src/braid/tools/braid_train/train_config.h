// braid-train's settings: the command line (CLI11) and the checks that make a bad one fail
// before any rank starts training. Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "braid/tools/braid_train/moe_gpt_config.h"

namespace CLI {
class App;
}

namespace braid::train {

// The GPT's shape: the preset of --model (gpt: 128 wide, 6 layers, 4 heads, context 64, about
// 1.2 M parameters; gpt-small: 512, 8, 8, 128, about 25 M) with --width/--layers/--heads/
// --context overriding it.
struct GptSize {
  std::int64_t width = 128, layers = 6, heads = 4, context = 64;
};

struct TrainConfig {
  std::string model = "mlp";         // mlp | cnn | gpt | gpt-small | moe-gpt
  std::string data;                  // default: Fashion-MNIST's or fortunes' Debian directory
  std::int64_t epochs = 2;
  std::int64_t steps = 0;            // > 0: stop after this many optimizer steps (overrides epochs)
  std::int64_t batch = 128;          // global: samples per optimizer step, over all ranks
  std::optional<double> lr;          // unset: the optimizer's default (sgd 0.02, adam 1e-3)
  std::string optimizer = "sgd";     // sgd (momentum 0.9) | adam
  std::string compress = "none";     // a codec spec (compress/codec_spec.h)
  std::int64_t compress_min_elements = 65536;  // smaller tensors go uncompressed
  std::int64_t warmup_steps = 0;     // uncompressed steps first
  bool overlap = true;
  std::string bucket_mb = "25";      // MiB per bucket, or auto
  bool registered_buckets = true;    // --bucket-memory registered|ordinary
  bool bucket_views = true;          // --bucket-views on|off (DdpOptions::gradient_as_bucket_view)
  std::int64_t accumulate = 1;       // micro-batches per optimizer step
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 0; // steps; 0: at the end of each epoch and of the run
  bool resume = false;               // a missing checkpoint is an error
  bool resume_if_present = false;    // a missing checkpoint starts the run at step 0 (and says so)
  bool allow_nonfinite_loss = false; // keep training when the loss becomes NaN or infinite
  std::string trace_dir;
  std::string json_path;
  std::string export_path;           // rank 0 saves the final model (torch::save) here
  int threads = 1;                   // intra-op threads per rank (torch and OpenBLAS)
  std::uint64_t seed = 1;
  std::int64_t train_samples = 0;    // > 0: use only the first N training samples (windows for gpt)
  std::int64_t test_samples = 0;     // > 0: evaluate on the first N test samples
  std::int64_t context = 0;          // gpt: tokens per sample (0: the preset's)
  std::int64_t width = 0, layers = 0, heads = 0;  // gpt: 0 = the preset's
  double dropout = 0;                // gpt: dropout probability (embeddings, attention, residuals)
  double clip_grad = 0;              // > 0: clip the global gradient norm to this
  int tp = 1;                        // tensor-parallel ranks (gpt; the mesh is dp x pp x tp)
  bool sequence_parallel = false;    // with --tp: activations outside TP regions split over the sequence
  bool allow_tp_across_hosts = false; // a TP group on several hosts: refused unless asked for (it warns)
  double log_interval = 2.0;         // seconds between progress lines on rank 0
  bool check_replicas = false;       // compare every rank's parameters after every step
  bool quiet = false;                // no progress lines (epoch lines and the summary remain)
  int pp = 1;                        // pipeline stages (> 1: pipeline parallelism, DP over world/pp)
  int microbatches = 4;              // per optimizer step and pipeline (with --pp)
  std::string schedule = "1f1b";     // gpipe | 1f1b | interleaved:V | zb1 (with --pp)
  int zero = 0;                      // ZeRO stage: 0 (DDP), 1 or 2 (torch/zero_optimizer.h), 3 (torch/fully_sharded.h)
  std::string zero_pp;               // ZeRO++ parts: comma list of qwz, qgz, qgz-ef (zero_pp.h)
  std::string precision = "fp32";    // fp32 | bf16 | fp16 (mixed_precision_training.h)
  std::string loss_scale = "dynamic"; // fp16: "dynamic" or a fixed scale
  std::int64_t inject_overflow = 0;  // fp16, testing: step whose gradient the last rank makes inf
  std::string param_storage = "compute";  // ZeRO's full/gathered parameters: compute (bf16 under bf16) | fp32
  bool elastic = false;              // survive a lost rank (braid-run --elastic; elastic_trainer.h)
  double rejoin_wait = 0;            // --elastic: seconds a step boundary waits for a newcomer that is starting
  int grow_to = 0;                   // --elastic with --rejoin-wait: boundaries wait for newcomers until this many ranks
  int max_gathered_units = 2;        // --zero 3: units gathered at once, prefetches included (>= 1)
  int zero_unit_layers = 0;          // --zero 3 on the mesh: 0 = a unit per pipeline chunk, K = K layers with parameters
  MoeTrainConfig moe;                // --model moe-gpt: --ep, --experts, --top-k, ... (moe_gpt_config.h)

  bool is_gpt() const { return model == "gpt" || model == "gpt-small" || model == "moe-gpt"; }
  GptSize gpt_size() const;
  std::string trajectory_part() const;  // the fingerprints' settings after the model and world
  std::string precision_part() const;   // " precision=bf16 ..." (empty for fp32)
  // Tensor or pipeline parallelism (or dropout, whose streams a mesh checkpoint keeps): the
  // mesh trainer (mesh_trainer.h) rather than the data-parallel one.
  bool uses_mesh() const { return tp > 1 || pp > 1 || dropout > 0; }
  std::string data_dir() const;      // `data`, or the model's default
  double learning_rate() const;      // `lr`, or the optimizer's default
  bool resumes() const { return resume || resume_if_present; }
  // What a checkpoint must agree with to be resumed (everything that shapes the trajectory).
  std::string fingerprint(int world) const;
  // The same for a sharded ZeRO checkpoint, which loads at any world size: without the world
  // size (and the stage: stages 1 and 2 compute the same numbers), with the epoch's length in
  // steps, which the world size can change (the sampler pads an epoch to a multiple of it, so
  // an epoch of N samples has floor(ceil(N / n) / (batch / n)) steps: e.g. 95 samples with
  // --batch 12 make 8 steps on 2, 3 or 4 ranks but 7 on 1), and with it which samples a saved
  // (epoch, batch) position names.
  std::string zero_fingerprint(std::int64_t steps_per_epoch) const;
};

// Registers every flag on `app`, writing into `config`.
void add_train_flags(CLI::App& app, TrainConfig& config);

// Throws InvalidArgument naming the flag and its valid range for a bad value (a learning rate
// that is not a finite number > 0 included: it is refused, never replaced by the default), or a
// global batch that the world size (times --accumulate) does not divide; --zero with what it
// does not support yet (the mesh flags, --compress, checkpoints, stage 3 with --precision).
void validate(const TrainConfig& config, int world);

}  // namespace braid::train
