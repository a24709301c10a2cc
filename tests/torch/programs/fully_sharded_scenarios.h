// braid-torch-rank's ZeRO stage 3 scenarios (fully_sharded_scenarios.cc), run from
// ddp_scenarios.cc's main:
//   fully-sharded-vs-ddp     FullyShardedModule against DDP + the same torch optimizer, with an
//                            unused parameter (allow_unused), caps 1-3, accumulation 1 and 2,
//                            SGD/Adam/AdamW, with and without clipping: "FSDP ..." lines
//   fully-sharded-unused     the same parameter unused without allow_unused, on every rank and
//                            then on all but rank 0: the error on every rank both times, then
//                            a step that uses it trains
#pragma once

#include <string>

#include "braid/comm/communicator.h"

// False when `scenario` is not one of these.
bool run_fully_sharded_scenario(braid::Communicator& comm, const std::string& scenario);
