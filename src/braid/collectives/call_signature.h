// For algorithms that synchronise through shared memory rather than messages: before touching
// the shared workspace, every rank sends its call's signature (operation, sequence number,
// dtype and byte count in the envelope; element count and reduction op in the payload) to
// every peer and compares what it receives. Ranks that called different collectives, counts,
// dtypes or ops raise braid::Mismatch here (and a peer inside a message-based collective
// sees an envelope it does not expect) instead of reading each other's memory out of step.
// One 16-byte message per ordered pair of ranks: negligible next to the bulk data of the
// sizes these algorithms serve.
#pragma once

#include "braid/collectives/collective_args.h"

namespace braid::algorithms {

void agree_on_call(const CollectiveArgs& args);

}  // namespace braid::algorithms
