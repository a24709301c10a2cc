// A PipelineStage whose forward and backward passes are a fixed amount of real arithmetic (a
// small matrix product repeated), sized so that each action takes a chosen time on this
// machine, and whose activations are buffers of a chosen size: a model-free way to measure
// the pipeline runtime's bubble against the simulator's (`braid-pipeline run`).
//
// Two ways to size an action (SyntheticCosts::timed):
//  - timed (default): repeat the work unit until the action has taken its time by the clock.
//    Every action then lasts what the simulator was told, even when other processes take the
//    core for a while, so measured-vs-simulated isolates what the runtime adds (transfer
//    latency, wake-ups, scheduling of the ranks themselves).
//  - fixed: a fixed number of work units, calibrated at start (calibrate_work_rate). Shows
//    what a real model would see: a rank sharing its core (4 ranks on 2 cores) really is
//    slower. Needs a quiet machine for the calibration to hold.
// Not sleep: a sleeping stage leaves its core to the other ranks, which a computing one does
// not.
#pragma once

#include <cstdint>

#include "braid/parallel/pipeline_stage.h"

namespace braid::tools {

struct SyntheticCosts {
  double forward_ms = 4;  // per stage (all its chunks); an action of one chunk does 1/v
  double backward_input_ms = 4;
  double backward_weight_ms = 4;
  std::int64_t activation_elements = 16384;  // floats per micro-batch activation (and gradient)
  bool timed = true;                         // see above
};

// Iterations of the work unit per millisecond on this core (the fastest of a few short timings).
double calibrate_work_rate();

class SyntheticStage : public parallel::PipelineStage {
 public:
  SyntheticStage(SyntheticCosts costs, int chunks, double iterations_per_ms);

  parallel::TensorShape input_shape(int chunk) const override;
  parallel::TensorShape output_shape(int chunk) const override;
  parallel::StageTensor forward(int mb, int chunk, const parallel::StageTensor& input) override;
  parallel::StageTensor backward_input(int mb, int chunk, const parallel::StageTensor& grad_output) override;
  void backward_weight(int mb, int chunk) override;

 private:
  void work(double stage_ms) const;
  parallel::StageTensor tensor() const;

  SyntheticCosts costs_;
  int chunks_;
  double iterations_per_ms_;
};

}  // namespace braid::tools
