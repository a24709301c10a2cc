// braid-train on a process mesh: data x pipeline x tensor parallelism (--pp P, --tp T, the rest
// data parallel), for any model the pipeline can cut and, with --tp, the GPT. Also runs models
// with dropout on one stage and one TP rank, since this is where the dropout streams are kept.
//
// Layout (parallel::ProcessMesh, dp x pp x tp, tp innermost): world rank r is TP rank r % T of
// stage (r / T) % P of replica r / (T P), so a TP group is T neighbouring ranks (one host) and,
// with T = 1, a pipeline's stages are neighbouring ranks as before. Every rank builds the whole
// single-process model from the seed; with --tp it is then split over the TP group
// (make_tensor_parallel_gpt), starting from exactly the single-process parameters. The model's
// layers (a Sequential) are cut into P*V pieces balanced by parameter count; each stage trains
// its pieces' parameters only.
//
// One optimizer step: replica d takes its next batch/replicas samples (DistributedSampler over
// the replicas), the pipeline runs the schedule over M micro-batches (one stage when P = 1; loss
// = cross-entropy mean per micro-batch / M, vocabulary-parallel with --tp), sequence-parallel
// replicated gradients are summed over TP (--sp), each rank averages its gradients over its
// data-parallel group (DistributedDataParallel, overlap off), the global gradient norm is
// clipped over the model-parallel group (--clip-grad), and the optimizer steps. At each epoch's
// end the TP shards are gathered and every stage broadcasts its layers to its pipeline, so every
// rank holds the whole trained single-process model to evaluate, check and export.
//
// Mixed precision (--precision, mixed_precision_training.h; docs/zero.md "On the mesh"): bf16
// runs every stage's forward under autocast (TP collectives then move bf16, pipeline boundaries
// stay fp32); the dp gradients (and ZeRO-1's allgather) travel in 16 bits; fp16's loss scale
// multiplies the last stage's micro-batch losses, and after the dp reduce every rank unscales
// its gradients and the overflow is agreed over the whole world, so a step is skipped on every
// stage, TP rank and replica alike; clipping sees the unscaled gradients.
//
// ZeRO (docs/zero.md "ZeRO on the mesh"): --zero 1 is a ZeroOptimizer over that DDP (Megatron's
// distributed optimizer); --zero 3 replaces the DDP by a FullyShardedModule over the dp group
// (mesh_fully_sharded.h): each pipeline chunk gathered around every micro-batch's forward and
// backward, the step's gradients reduce-scattered once; clipping over the whole job either way.
//
// Checkpoints (--checkpoint-dir): one shard per (stage, TP rank) and a manifest
// (mesh_checkpoint.h); the dropout streams ride in each shard as a buffer. Resuming under another
// layout (a different --tp, --pp or world) is refused on every rank, naming both.
#pragma once

#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/train_config.h"
#include "braid/tools/braid_train/train_report.h"

namespace braid::train {

RunSummary train_on_mesh(Communicator& world, const TrainConfig& config);

}  // namespace braid::train
