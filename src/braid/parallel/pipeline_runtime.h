// The pipeline runtime: runs one stage's list of a schedule (pipeline_schedule.h) on this rank,
// moving activations and gradients with braid's point-to-point messages.
//
//   braid::parallel::Schedule schedule = make_schedule({ScheduleKind::k1F1B, comm.size(), 8});
//   MyStage stage(...);                                      // a PipelineStage
//   braid::parallel::PipelineRuntime runtime(comm, schedule, stage, {.trace = &tracer});
//   for (int step = 0; step < steps; ++step) { runtime.run_step(); optimizer_step(stage); }
//
// `comm` is the pipeline group (the whole world, or one of Communicator::split's groups when
// data parallelism is combined): its rank r runs stage r and holds chunks r, r+p, ... of the
// model. Every member must construct the runtime with the same schedule and call run_step the
// same number of times.
//
// Overlap. Receives are posted (irecv) as soon as they are at most `prefetch` compute actions
// ahead, so an activation or gradient arrives while the stage computes; sends are isend and are
// only waited for at the end of the step (their buffers are kept until then). A recv action of
// the schedule is where the stage waits for its data; the time spent there is the bubble the
// trace shows. braid has no progress thread: a message moves while its sender or receiver is
// inside a braid call. Posting copies what fits the transport's buffer (512 KiB per shm peer)
// at once and the runtime makes one progress pass before each computation; beyond that a large
// message moves while one of the two ranks waits (docs/pipeline.md, "Runtime").
//
// Errors. The constructor validates the schedule and exchanges the activation shapes with the
// neighbouring stages: if what stage s produces is not what stage s+1 expects, every rank
// involved throws InvalidArgument naming both stages and shapes, before any data moves (no
// hang). A stage returning a tensor of another shape than it declared throws InvalidArgument
// naming the stage, the action and the shapes. Communication errors are the Communicator's
// (Timeout, PeerLost, Mismatch). After run_step has thrown, the pipeline is out of step:
// destroy the runtime (its destructor gives in-flight transfers 2 s, then abandons them by
// poisoning the communicator, so that the other stages stop instead of hanging).
//
// Thread-safety: one thread at a time (the Communicator's rule).
#pragma once

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/parallel/pipeline_schedule.h"
#include "braid/parallel/pipeline_stage.h"
#include "braid/trace/trace_recorder.h"

namespace braid::parallel {

struct PipelineRuntimeOptions {
  // Records each compute action (compute lane, "F3", "I3b", ...) and each wait for a
  // receive (comm lane, "recv-act mb 3"), and a step boundary per run_step. Null: no trace.
  trace::TraceRecorder* trace = nullptr;
  // How many compute actions ahead receives are posted (>= 1). 2 covers 1F1B's steady state,
  // where the next forward and the next backward each wait for one message.
  int prefetch = 2;
};

// What one run_step measured on this rank (steady clock).
struct StepReport {
  double wall_seconds = 0;     // from entering run_step until its last action and sends completed
  double compute_seconds = 0;  // sum of the stage's forward/backward call durations
  double wait_seconds = 0;     // time spent waiting at recv actions
  double sent_bytes = 0;       // activations and gradients this stage sent (payload bytes)
};

class PipelineRuntime {
 public:
  // Collective over `comm` (shape exchange). REQUIRES: comm.size() == schedule.spec.stages;
  // `stage` outlives the runtime. Throws InvalidArgument (see above) on a bad schedule, group
  // size or shape. `model` is this rank's stage.
  PipelineRuntime(Communicator& comm, Schedule schedule, PipelineStage& model, PipelineRuntimeOptions options = {});
  ~PipelineRuntime();
  PipelineRuntime(const PipelineRuntime&) = delete;
  PipelineRuntime& operator=(const PipelineRuntime&) = delete;

  // Runs this stage's actions for one step (all m micro-batches).
  StepReport run_step();

  int stage() const { return comm_.rank(); }
  const Schedule& schedule() const { return schedule_; }

 private:
  struct Inbound;
  struct Outbound;
  using Key = std::tuple<ActionType, int, int>;  // (transfer type, micro-batch, chunk)

  void exchange_shapes();
  std::vector<float> spare_buffer(std::size_t n);
  void recycle(std::vector<float> buffer);
  void post_receives(std::size_t limit);
  void drive_progress();
  void post_receive(const Action& recv);
  void run_compute(const Action& a, StepReport& report);
  void run_recv(const Action& a, StepReport& report);
  void run_send(const Action& a, StepReport& report);
  int tag_of(ActionType transfer, int microbatch, int sender_virtual_stage) const;
  StageTensor take_input(const Action& a, ActionType transfer);
  void keep_output(const Action& a, ActionType transfer, StageTensor tensor);
  void check_shape(const Action& a, const StageTensor& t, const TensorShape& declared, const char* what) const;

  Communicator& comm_;
  Schedule schedule_;
  PipelineStage& stage_;
  PipelineRuntimeOptions options_;
  int step_ = 0;
  // Per step: received data by key, data waiting to be sent (or handed to a local chunk),
  // sends in flight. Index of the next recv action of the list not yet posted.
  std::map<Key, Inbound> inbound_;
  std::map<Key, StageTensor> outbound_;
  std::vector<Outbound> sends_;
  std::vector<std::vector<float>> spare_;  // buffers done with, for the next receives
  std::size_t receives_per_step_ = 0;      // recv actions in this stage's list: spare_'s bound
  std::size_t next_to_post_ = 0;
};

}  // namespace braid::parallel
