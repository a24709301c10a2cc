// Checks that a schedule (built-in or hand-written) can run: every action exactly once, every
// dependency respected, and no deadlock under the send/recv pairing. Errors are
// braid::InvalidArgument naming the stage, the action and the micro-batch.
//
// What "can run" means (docs/pipeline.md, "Validator"):
//  1. Shape: one action list per stage; every action's micro-batch, chunk and peer in range.
//  2. Exactly once: each stage has F, and B (or I and W for split-backward schedules), once
//     per (micro-batch, chunk) it owns, plus the send/recv actions with_transfers() would put
//     there: a recv-act before each F whose input comes from another stage, a send-act after
//     each F whose output goes to another stage, and the same for gradients around B/I.
//  3. Dependencies, checked while executing the lists: F(mb) of virtual stage vs after F(mb)
//     of vs-1 (and after its own recv-act); B/I(mb) after its own F(mb), after B/I(mb) of
//     vs+1 and after its recv-grad; W after I; a send after the compute that produced it.
//  4. No deadlock. Execution model (the runtime's): a send hands its data off and returns (it
//     never waits for the receiver: the runtime uses isend); a recv waits until the matching
//     send has happened. Messages between two stages in one direction pair up in order (FIFO,
//     as MPI's non-overtaking rule): the k-th recv-act stage s posts from stage r must be for
//     the micro-batch and chunk of the k-th send-act r posts to s. If no stage can advance
//     and some have actions left, the schedule deadlocks; the error lists where each stage is
//     stuck.
#pragma once

#include "braid/parallel/pipeline_schedule.h"

namespace braid::parallel {

// Throws InvalidArgument on the first violation of 1-4 above.
void validate_schedule(const Schedule& schedule);

// Only checks 1 and 2 (what the simulator and the runtime need before they start).
void check_schedule_structure(const Schedule& schedule);

}  // namespace braid::parallel
