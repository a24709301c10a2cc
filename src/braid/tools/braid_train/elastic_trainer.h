// braid-train --elastic: the data-parallel loop over an ElasticGroup (comm/elastic_group.h), run
// under braid-run --elastic. When a rank dies the survivors
//   1. agree on the new membership through braid-run's store and connect a communicator of the
//      survivors, ranks renumbered densely (braid's own shrink; no process restarts);
//   2. roll back to the in-memory snapshot (model_snapshot.h) of the last step every survivor
//      completed: under DDP every replica is the whole state, so each survivor's own copy is the
//      "buddy copy"; the new DDP then broadcasts new rank 0's parameters, as at the start;
//   3. keep the global batch: step t trains on the same --batch samples of the epoch's
//      permutation whatever the world size, split over the survivors by DistributedSampler's
//      striding (a rank may get one sample more); each rank's loss is weighted by its share so
//      that the DDP's average is the global batch's mean gradient. The trajectory is that of the
//      undisturbed run up to the summation order of the gradients.
// The report (RunSummary::elastic_events, --json's "elastic_events") states per loss the ranks
// lost, the steps trained again and the seconds from noticing the loss to the next completed step.
// Refused modes: elastic_config.h. docs/reliability.md#elastic-recovery.
#pragma once

#include "braid/tools/braid_train/train_config.h"
#include "braid/tools/braid_train/train_report.h"

namespace braid::train {

// Joins the elastic job (ElasticGroup::join), validates `config` against it and trains.
RunSummary train_elastic(const TrainConfig& config);

}  // namespace braid::train
