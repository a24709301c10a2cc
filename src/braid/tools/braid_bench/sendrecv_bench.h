// braid-bench sendrecv: ping-pong between ranks 0 and 1 (the others wait), for each size.
// Reports the median one-way time (half a round trip), the bandwidth it implies, and that
// bandwidth as a share of this host's single-thread memcpy measured in the same run.
#pragma once

#include "bench_options.h"
#include "braid/comm/communicator.h"

namespace braid::bench {

int run_sendrecv(Communicator& comm, const SweepOptions& options);

}  // namespace braid::bench
