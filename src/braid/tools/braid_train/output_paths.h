// Checking, before the first step, that braid-train can write every output it was asked for.
// Otherwise a run trains for hours and then fails (or only warns) at its end, when it writes
// the JSON, the exported model or the first checkpoint. Torch-free.
#pragma once

#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/train_config.h"

namespace braid::train {

// Collective. Each rank probes what it will write itself: rank 0 the --json and --export files
// and --checkpoint-dir, every rank its --trace file (the directories are created here if
// missing, as they would be later). A probe creates and removes a file, since permissions
// alone do not tell (root ignores them). The ranks then agree: every rank throws
// InvalidArgument with the first failing rank's reason, e.g.
//   rank 0 failed: --json /data/run.json: /data is not a directory (checked before the first step)
void check_output_paths(Communicator& comm, const TrainConfig& config);

}  // namespace braid::train
