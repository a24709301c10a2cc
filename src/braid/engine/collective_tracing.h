// Puts every collective a communicator runs on a TraceRecorder's timeline, as a communication
// event named "<operation> #<seq>" with its algorithm and its bytes (the call's count argument;
// wire bytes are not known at this level and stay 0). Blocking collectives, non-blocking ones
// (recorded from the background thread) and the collectives inside GradSync's buckets and
// compressed allreduces all pass through it. Collectives that move nothing (one rank, count 0)
// are not recorded.
//
//   braid::trace::TraceRecorder recorder = braid::trace::from_environment(comm.rank());
//   braid::trace_collectives(comm, recorder);     // until stop_tracing_collectives(comm)
//
// GradSync records its buckets itself (GradSyncOptions::trace); tracing the communicator as
// well adds the collectives inside each bucket, on `lane` (default: one lane below the
// buckets' kCommLane rows: kCommLane + 1).
//
// REQUIRES: `recorder` outlives the tracing (stop it, or destroy the communicator, first).
#pragma once

#include "braid/comm/communicator.h"
#include "braid/trace/trace_recorder.h"

namespace braid {

void trace_collectives(Communicator& comm, trace::TraceRecorder& recorder, int lane = trace::kCommLane + 1);
void stop_tracing_collectives(Communicator& comm);

}  // namespace braid
