// braid-train --pp P: pipeline-parallel training (parallel/pipeline_runtime.h over
// torch/sequential_stage.h), combined with data parallelism when the world holds several
// pipelines.
//
// Layout: world rank r is stage r % P of pipeline (replica) r / P, so a pipeline's stages are
// neighbouring ranks. Communicator::split gives each rank its pipeline group (P stages) and its
// data-parallel group (the same stage in every replica). Every rank builds the whole model from
// the seed; the model's layers (a Sequential) are cut into P*V pieces balanced by parameter
// count; each stage trains its pieces' parameters only.
//
// One optimizer step: replica d takes its next batch/replicas samples (DistributedSampler over
// the replicas), the pipeline runs the schedule over M micro-batches (loss = cross-entropy mean
// per micro-batch / M, so the step's gradient is the batch mean), each stage averages its
// gradients over its data-parallel group (DistributedDataParallel, overlap off), and steps its
// optimizer. At each epoch's end every stage broadcasts its layers to its pipeline, so every
// rank holds the whole trained model to evaluate, check and export.
#pragma once

#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/train_config.h"
#include "braid/tools/braid_train/train_report.h"

namespace braid::train {

RunSummary train_pipeline(Communicator& world, const TrainConfig& config);

}  // namespace braid::train
