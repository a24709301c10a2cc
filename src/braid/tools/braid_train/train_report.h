// What braid-train reports: one record per epoch, the run's summary, the lines and tables rank
// 0 prints, and the JSON file. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "braid/tools/braid_train/moe_report.h"
#include "braid/tools/braid_train/train_config.h"

namespace braid::train {

struct EpochFigures {
  std::int64_t epoch = 0;            // 1-based
  std::int64_t steps = 0;            // optimizer steps in this epoch (this run)
  std::int64_t samples = 0;          // global samples trained on
  double train_loss = 0;             // mean over ranks and steps
  double test_loss = 0;              // mean per sample (per token for gpt)
  double test_accuracy = -1;         // classification only, in [0, 1]
  double seconds = 0;                // training time (evaluation excluded)
  double step_seconds = 0;           // summed step durations (rank 0)
  double communication_seconds = 0; // summed bucket allreduce durations (rank 0)
  double exposed_seconds = 0;        // summed waits in synchronize (rank 0)
  std::uint64_t wire_bytes = 0;      // sent by rank 0
  std::uint64_t dense_wire_bytes = 0;  // what fp32 ring allreduces would have sent
  std::uint64_t payload_bytes = 0;
  std::uint64_t fp32_bytes = 0;      // uncompressed gradient bytes reduced
  std::int64_t tokens_per_sample = 1;
  // Mesh runs: algorithm bytes per optimizer step on each axis (dp, tp, pp), the mean over
  // ranks (parallel/axis_traffic.h; plan/training_traffic.h predicts them), and rank 0's time
  // inside tensor-parallel collectives.
  std::map<std::string, double> axis_bytes_per_step;
  // ZeRO runs, rank 0, summed over the epoch's steps: the gradient reduce-scatters' and the
  // parameter allgathers' bytes (int8 + scales + headers with --zero-pp qgz / qwz), and what
  // either would send in fp32 (the two are equal: (n-1) x shard x 4 per bucket); the gradient
  // side's bytes measured on the transports.
  struct ZeroWire {
    std::uint64_t gradients = 0, parameters = 0, fp32_each = 0, gradient_transport = 0;
  } zero_wire;
  double tp_seconds = 0;
  double tp_share() const { return step_seconds > 0 ? tp_seconds / step_seconds : 0; }

  double samples_per_second() const { return seconds > 0 ? samples / seconds : 0; }
  double communication_share() const { return step_seconds > 0 ? communication_seconds / step_seconds : 0; }
  double exposed_share() const { return step_seconds > 0 ? exposed_seconds / step_seconds : 0; }
  double compression_ratio() const { return payload_bytes > 0 ? double(fp32_bytes) / double(payload_bytes) : 1; }
};

struct RunSummary {
  std::string model;
  int world = 1;
  int threads = 1;
  std::int64_t parameters = 0;
  std::string compress;
  bool overlap = true;
  std::string blas;
  std::string data;
  std::vector<EpochFigures> epochs;
  std::int64_t steps = 0;
  std::uint32_t parameter_digest = 0;  // CRC32C of the final parameters (identical on every rank)
  bool resumed = false;
  std::vector<double> step_losses;     // each step's training loss (mean over the batch), this run's steps
  int zero_stage = 0;                  // --zero
  std::string zero_pp;                 // --zero-pp
  std::string precision = "fp32";      // --precision
  std::string parameter_dtype = "fp32";  // ZeRO's full/gathered parameter storage (--param-storage)
  double loss_scale = 0;               // fp16: the scale at the end of the run (0: none)
  std::vector<std::int64_t> skipped_steps;  // fp16: steps skipped on an overflow (1-based)
  // Rank 0's parameters + gradients + optimizer state (ZeRO: + master shards), in bytes, at the
  // end of the run (torch/model_state_bytes.h, which this torch-free header mirrors): what
  // ZeRO's stages shard.
  struct ModelState {
    std::int64_t parameters = 0, gradients = 0, master = 0, optimizer_state = 0;
    std::int64_t total() const { return parameters + gradients + master + optimizer_state; }
    // Not model states, reported beside them: GradSync's staging (send and shard buffers), and
    // with --zero 2 the most full-gradient bytes alive at once during a backward (the DDP
    // releases each bucket's as it is sent).
    std::int64_t communication_buffers = 0, peak_gradients = 0;
  } model_state;
  // --zero 3: the gather counters at the end of the run (torch/fully_sharded.h,
  // parallel/unit_gather_tracker.h), and the bytes the units' full buffers held after the last step.
  struct Gathers {
    int units = 0, cap = 0, max_gathered = 0;
    std::int64_t peak_gathered_bytes = 0, allgathers = 0, reduce_scatters = 0;
    std::int64_t storage_bytes_after_step = 0;
    std::int64_t pool_bytes = 0;  // the storage pools' buffers (communication memory, not model states)
    std::int64_t host_allgathers = 0;  // hpZ: backward gathers that stayed inside the host
  };
  std::optional<Gathers> gathers;
  // --elastic (elastic_trainer.h): each loss of ranks and the recovery from it, as rank 0 saw it.
  struct ElasticEvent {
    std::int64_t generation = 0;       // the generation the survivors formed
    std::vector<int> lost;             // member ids (launch ranks) no longer in it
    std::vector<int> joined;           // newcomers' member ids admitted into it (a join: nothing lost)
    int world_after = 0;
    std::int64_t noticed_at_step = 0;  // steps completed when the loss was noticed
    std::int64_t resume_step = 0;      // the step the survivors rolled back to
    std::int64_t steps_lost = 0;       // steps trained again: the one in progress + those rolled back
    double recover_seconds = 0;        // from noticing the loss (a join: deciding it) to the first step completed after
  };
  std::vector<ElasticEvent> elastic_events;
  std::optional<MoeRunFigures> moe;  // --model moe-gpt (moe_report.h)
};

// "epoch 2: train loss 0.412  test accuracy 85.31%  1843 samples/s  communication 23% ..."
std::string epoch_line(const EpochFigures& epoch, bool classification);
// The closing table: one row per epoch plus the run's figures.
std::string summary_table(const RunSummary& summary, bool classification);

nlohmann::json to_json(const RunSummary& summary, const TrainConfig& config);
// `braid-train compare A.json B.json ...`: the runs' last epochs side by side.
std::string comparison_table(const std::vector<nlohmann::json>& runs, const std::vector<std::string>& names);

}  // namespace braid::train
