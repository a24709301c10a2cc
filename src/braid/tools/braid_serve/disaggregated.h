// braid-serve --prefill-ranks N: prefill/decode disaggregation (docs/serving.md). Ranks [0, N)
// prefill the prompt with TP N and stream its KV cache to the other ranks layer by layer
// (serving/kv_stream_sender.h: each layer as soon as the decoder has written it, so layer i's
// transfer overlaps layer i + 1's compute; --kv-after-prefill: all after the last); those decode
// with TP --tp, starting once every layer is in their paged cache (serving/kv_stream_receiver.h
// writes the blocks in place, resharding the heads when the TP sizes differ).
#pragma once

#include <cstdint>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/tools/braid_serve/serve_config.h"
#include "braid/tools/braid_train/models.h"

namespace braid::serve {

struct DisaggregatedGeneration {
  std::vector<std::int64_t> tokens;  // on every rank (the decode side's, sent back to the prefill side)
  std::int64_t ttft_ns = 0;          // prefill start to the decode side holding every layer (+ the first token)
  std::int64_t kv_bytes = 0;         // what this rank sent (prefill) or received (decode)
};

// Collective over `world`. REQUIRES: validate(config, world.size()) passed.
DisaggregatedGeneration generate_disaggregated(Communicator& world, train::TrainModel& full, const ServeConfig& config,
                                               const std::vector<std::int64_t>& prompt);

}  // namespace braid::serve
