#include "braid/parallel/pipeline_runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "braid/base/check.h"
#include "braid/base/clock.h"
#include "braid/base/error.h"
#include "braid/parallel/schedule_validator.h"

namespace braid::parallel {
namespace {

// Data tags are ((mb * virtual_stages + sender virtual stage) * 2 + direction); the shape
// exchange uses tags from kShapeTagBase up, so the two never meet.
constexpr int kShapeTagBase = 1 << 30;
constexpr std::size_t kMaxDims = 8;
using EncodedShape = std::array<std::int64_t, kMaxDims + 1>;  // [ndims, d0, ..., d7]

double seconds_between(std::int64_t start_ns, std::int64_t end_ns) {
  return static_cast<double>(end_ns - start_ns) * 1e-9;
}

std::string virtual_stage_name(const ScheduleSpec& spec, int vs) {
  return fmt::format("stage {} (chunk {}, virtual stage {})", stage_of(spec, vs), chunk_of(spec, vs), vs);
}

// The message both sides of a disagreeing boundary throw, so that it reads the same on each.
[[noreturn]] void shape_mismatch(const ScheduleSpec& spec, int producer_vs, const TensorShape& produced,
                                 const TensorShape& expected) {
  throw InvalidArgument({}, fmt::format("pipeline: activation shape mismatch: {} produces {} (output_shape) but {} "
                                        "expects {} (input_shape)",
                                        virtual_stage_name(spec, producer_vs), shape_string(produced),
                                        virtual_stage_name(spec, producer_vs + 1), shape_string(expected)));
}

EncodedShape encode(const TensorShape& shape) {
  EncodedShape out{};
  out[0] = static_cast<std::int64_t>(shape.size());
  std::copy(shape.begin(), shape.end(), out.begin() + 1);
  return out;
}

TensorShape decode(const EncodedShape& in) {
  const auto dims = static_cast<std::size_t>(std::clamp<std::int64_t>(in[0], 0, kMaxDims));
  return TensorShape(in.begin() + 1, in.begin() + 1 + static_cast<std::ptrdiff_t>(dims));
}

std::string compute_label(const ScheduleSpec& spec, const Action& a) {
  std::string label = fmt::format("{}{}", action_type_name(a.type), a.microbatch);
  if (spec.chunks > 1) label += static_cast<char>('a' + a.chunk % 26);
  return label;
}

}  // namespace

struct PipelineRuntime::Inbound {
  StageTensor tensor;
  Work work;  // default: complete (a local hand-off)
};

struct PipelineRuntime::Outbound {
  StageTensor tensor;
  Work work;
};

PipelineRuntime::PipelineRuntime(Communicator& comm, Schedule schedule, PipelineStage& model,
                                 PipelineRuntimeOptions options)
    : comm_(comm), schedule_(std::move(schedule)), stage_(model), options_(options) {
  const ScheduleSpec& spec = schedule_.spec;
  if (comm_.size() != spec.stages) {
    throw InvalidArgument({comm_.rank(), -1, "pipeline", -1},
                          fmt::format("pipeline: the communicator has {} ranks but the schedule has {} stages (p)",
                                      comm_.size(), spec.stages));
  }
  if (options_.prefetch < 1) {
    throw InvalidArgument({comm_.rank(), -1, "pipeline", -1},
                          fmt::format("pipeline: prefetch must be >= 1, got {}", options_.prefetch));
  }
  if (static_cast<std::int64_t>(spec.microbatches) * schedule_.virtual_stages() * 2 >= kShapeTagBase) {
    throw InvalidArgument({comm_.rank(), -1, "pipeline", -1},
                          "pipeline: micro-batches x virtual stages too large for message tags");
  }
  validate_schedule(schedule_);
  for (const Action& a : schedule_.stages[static_cast<std::size_t>(stage())]) receives_per_step_ += is_recv(a.type);
  for (int chunk = 0; chunk < spec.chunks; ++chunk) {
    for (const TensorShape& shape : {stage_.input_shape(chunk), stage_.output_shape(chunk)}) {
      if (shape.size() > kMaxDims) {
        throw InvalidArgument({comm_.rank(), -1, "pipeline", -1},
                              fmt::format("pipeline: stage {} chunk {}: shape {} has more than {} dimensions", stage(),
                                          chunk, shape_string(shape), kMaxDims));
      }
      element_count(shape);  // rejects negative dimensions
    }
  }
  exchange_shapes();
}

PipelineRuntime::~PipelineRuntime() {
  // Only a step that threw leaves transfers in flight, and they use our buffers. Receives
  // posted ahead may never be matched (the peers wait for this rank, which has stopped), so
  // waiting for them without bound would hang: give in-flight transfers kAbandonSeconds, after
  // which the Timeout poisons the communicator, which fails every pending request (so none
  // touches our buffers any more) and tells the peers, who then stop with an error instead of
  // waiting for a step this rank will not finish.
  constexpr Seconds kAbandonSeconds{2.0};
  auto settle = [&](Work& work) {
    try {
      work.wait(kAbandonSeconds);
    } catch (const Error&) {
    }
  };
  for (Outbound& send : sends_) settle(send.work);
  for (auto& [key, in] : inbound_) settle(in.work);
}

void PipelineRuntime::exchange_shapes() {
  const ScheduleSpec& spec = schedule_.spec;
  const int last = schedule_.virtual_stages() - 1;
  struct Exchange {
    int producer_vs;  // the boundary is between producer_vs and producer_vs + 1
    bool we_produce;
    EncodedShape mine;
    EncodedShape theirs;
  };
  std::vector<Exchange> exchanges;
  for (int chunk = 0; chunk < spec.chunks; ++chunk) {
    const int vs = virtual_stage(spec, stage(), chunk);
    if (vs < last) {
      if (stage_of(spec, vs + 1) == stage()) {
        TensorShape produced = stage_.output_shape(chunk);
        TensorShape expected = stage_.input_shape(chunk_of(spec, vs + 1));
        if (produced != expected) shape_mismatch(spec, vs, produced, expected);
      } else {
        exchanges.push_back({vs, true, encode(stage_.output_shape(chunk)), {}});
      }
    }
    if (vs > 0 && stage_of(spec, vs - 1) != stage())
      exchanges.push_back({vs - 1, false, encode(stage_.input_shape(chunk)), {}});
  }
  std::vector<Work> works;
  for (Exchange& e : exchanges) {
    const int peer = stage_of(spec, e.we_produce ? e.producer_vs + 1 : e.producer_vs);
    const int send_tag = kShapeTagBase + 2 * e.producer_vs + (e.we_produce ? 0 : 1);
    const int recv_tag = kShapeTagBase + 2 * e.producer_vs + (e.we_produce ? 1 : 0);
    works.push_back(comm_.isend(e.mine.data(), static_cast<std::int64_t>(e.mine.size()), DType::kI64, peer, send_tag));
    works.push_back(
        comm_.irecv(e.theirs.data(), static_cast<std::int64_t>(e.theirs.size()), DType::kI64, peer, recv_tag));
  }
  for (Work& w : works) w.wait();
  for (const Exchange& e : exchanges) {
    const TensorShape produced = decode(e.we_produce ? e.mine : e.theirs);
    const TensorShape expected = decode(e.we_produce ? e.theirs : e.mine);
    if (produced != expected) shape_mismatch(spec, e.producer_vs, produced, expected);
  }
}

int PipelineRuntime::tag_of(ActionType transfer, int microbatch, int sender_virtual_stage) const {
  const bool gradient = transfer == ActionType::kSendGradient || transfer == ActionType::kRecvGradient;
  return (microbatch * schedule_.virtual_stages() + sender_virtual_stage) * 2 + (gradient ? 1 : 0);
}

void PipelineRuntime::post_receive(const Action& recv) {
  const ScheduleSpec& spec = schedule_.spec;
  const int vs = virtual_stage(spec, stage(), recv.chunk);
  const bool activation = recv.type == ActionType::kRecvActivation;
  const TensorShape shape = activation ? stage_.input_shape(recv.chunk) : stage_.output_shape(recv.chunk);
  Inbound& in = inbound_[{recv.type, recv.microbatch, recv.chunk}];
  in.tensor.shape = shape;
  in.tensor.data = spare_buffer(static_cast<std::size_t>(element_count(shape)));
  in.work = comm_.irecv(in.tensor.data.data(), static_cast<std::int64_t>(in.tensor.data.size()), DType::kF32, recv.peer,
                        tag_of(recv.type, recv.microbatch, activation ? vs - 1 : vs + 1));
}

// A buffer of n floats, reusing one a previous action is done with (DESIGN.md: memory is
// allocated once and reused; fresh pages cost far more than the copy into them here). Received
// tensors and sent ones return to spare_ once consumed, so after the first step receives
// allocate nothing.
std::vector<float> PipelineRuntime::spare_buffer(std::size_t n) {
  if (spare_.empty()) return std::vector<float>(n);
  std::vector<float> buffer = std::move(spare_.back());
  spare_.pop_back();
  buffer.resize(n);
  return buffer;
}

// Keeps `buffer` for a later receive; no more than one step's receives need (the rest, and
// empty ones, are freed).
void PipelineRuntime::recycle(std::vector<float> buffer) {
  if (buffer.capacity() > 0 && spare_.size() < receives_per_step_) spare_.push_back(std::move(buffer));
}

// Posts every recv of the list before index `limit` not posted yet.
void PipelineRuntime::post_receives(std::size_t limit) {
  const std::vector<Action>& list = schedule_.stages[static_cast<std::size_t>(stage())];
  for (; next_to_post_ < std::min(limit, list.size()); ++next_to_post_) {
    if (is_recv(list[next_to_post_].type)) post_receive(list[next_to_post_]);
  }
}

StageTensor PipelineRuntime::take_input(const Action& a, ActionType transfer) {
  const ScheduleSpec& spec = schedule_.spec;
  const int vs = virtual_stage(spec, stage(), a.chunk);
  if ((transfer == ActionType::kRecvActivation && vs == 0) ||
      (transfer == ActionType::kRecvGradient && vs == schedule_.virtual_stages() - 1)) {
    return {};
  }
  auto found = inbound_.find({transfer, a.microbatch, a.chunk});
  if (found == inbound_.end()) {  // cannot happen for a validated schedule: its recv came first
    throw InvalidArgument({comm_.rank(), -1, "pipeline", -1},
                          fmt::format("pipeline: stage {}: no input for {}", stage(), describe(a)));
  }
  StageTensor tensor = std::move(found->second.tensor);
  inbound_.erase(found);
  return tensor;
}

void PipelineRuntime::keep_output(const Action& a, ActionType transfer, StageTensor tensor) {
  const ScheduleSpec& spec = schedule_.spec;
  const int vs = virtual_stage(spec, stage(), a.chunk);
  const bool activation = transfer == ActionType::kSendActivation;
  const int to = activation ? vs + 1 : vs - 1;
  if (to < 0 || to >= schedule_.virtual_stages()) return;  // the ends of the model: nothing to pass on
  if (stage_of(spec, to) == stage()) {                     // a chunk of this stage: hand it over in memory
    ActionType as = activation ? ActionType::kRecvActivation : ActionType::kRecvGradient;
    inbound_[{as, a.microbatch, chunk_of(spec, to)}].tensor = std::move(tensor);
    return;
  }
  outbound_[{transfer, a.microbatch, a.chunk}] = std::move(tensor);
}

void PipelineRuntime::check_shape(const Action& a, const StageTensor& t, const TensorShape& declared,
                                  const char* what) const {
  if (t.shape != declared || static_cast<std::int64_t>(t.data.size()) != element_count(declared)) {
    throw InvalidArgument(
        {comm_.rank(), -1, "pipeline", -1},
        fmt::format("pipeline: stage {}: {} returned shape {} with {} elements, but {} is {}", stage(), describe(a),
                    shape_string(t.shape), t.data.size(), what, shape_string(declared)));
  }
}

void PipelineRuntime::run_compute(const Action& a, StepReport& report) {
  const ScheduleSpec& spec = schedule_.spec;
  const int vs = virtual_stage(spec, stage(), a.chunk);
  const bool first = vs == 0;
  const bool last = vs == schedule_.virtual_stages() - 1;
  const std::int64_t start = now_ns();
  {
    trace::ComputeScope scope(options_.trace, compute_label(spec, a));
    switch (a.type) {
      case ActionType::kForward: {
        StageTensor input = take_input(a, ActionType::kRecvActivation);
        StageTensor out = stage_.forward(a.microbatch, a.chunk, input);
        if (!last) check_shape(a, out, stage_.output_shape(a.chunk), "its output_shape");
        keep_output(a, ActionType::kSendActivation, std::move(out));
        recycle(std::move(input.data));
        break;
      }
      case ActionType::kBackward:
      case ActionType::kBackwardInput: {
        StageTensor grad = take_input(a, ActionType::kRecvGradient);
        StageTensor grad_in = a.type == ActionType::kBackward ? stage_.backward(a.microbatch, a.chunk, grad)
                                                              : stage_.backward_input(a.microbatch, a.chunk, grad);
        if (!first) check_shape(a, grad_in, stage_.input_shape(a.chunk), "its input_shape");
        keep_output(a, ActionType::kSendGradient, std::move(grad_in));
        recycle(std::move(grad.data));
        break;
      }
      case ActionType::kBackwardWeight: stage_.backward_weight(a.microbatch, a.chunk); break;
      default: break;
    }
  }
  report.compute_seconds += seconds_between(start, now_ns());
}

void PipelineRuntime::run_recv(const Action& a, StepReport& report) {
  auto found = inbound_.find({a.type, a.microbatch, a.chunk});
  // Cannot fail for a validated schedule: prefetch posted every receive before it runs.
  BRAID_CHECK(found != inbound_.end(), InvalidArgument, {comm_.rank(), -1, "pipeline", -1},
              "pipeline: stage {}: {} was never posted", stage(), describe(a));
  Inbound& in = found->second;
  const std::int64_t start = now_ns();
  {
    trace::CommScope scope(options_.trace, fmt::format("{} mb {}", action_type_name(a.type), a.microbatch));
    if (scope.active()) scope.event().bytes = in.tensor.data.size() * sizeof(float);
    in.work.wait();
  }
  report.wait_seconds += seconds_between(start, now_ns());
}

void PipelineRuntime::run_send(const Action& a, StepReport& report) {
  auto found = outbound_.find({a.type, a.microbatch, a.chunk});
  Outbound& out = sends_.emplace_back(Outbound{std::move(found->second), {}});
  outbound_.erase(found);
  const int vs = virtual_stage(schedule_.spec, stage(), a.chunk);
  // Posting is short (the transport starts copying at once and the rest moves while this
  // rank waits later); traced so that a transport that stalls the sender shows up.
  trace::CommScope scope(options_.trace, fmt::format("{} mb {}", action_type_name(a.type), a.microbatch));
  report.sent_bytes += static_cast<double>(out.tensor.data.size() * sizeof(float));
  if (scope.active()) scope.event().bytes = out.tensor.data.size() * sizeof(float);
  out.work = comm_.isend(out.tensor.data.data(), static_cast<std::int64_t>(out.tensor.data.size()), DType::kF32, a.peer,
                         tag_of(a.type, a.microbatch, vs));
}

// Progress is caller-driven (docs/architecture.md): bytes move only while this rank is inside
// a braid call. One pass before each computation lets a send that did not fit the transport's
// buffer at posting, or a message that has arrived, move on instead of waiting for the next
// recv action. A test() on any pending request runs one pass over every transport.
void PipelineRuntime::drive_progress() {
  for (Outbound& send : sends_) {
    if (!send.work.completed()) {
      send.work.test();
      return;
    }
  }
  for (auto& [key, in] : inbound_) {
    if (!in.work.completed()) {
      in.work.test();
      return;
    }
  }
}

StepReport PipelineRuntime::run_step() {
  StepReport report;
  const std::int64_t start = now_ns();
  if (options_.trace != nullptr) options_.trace->step(step_);
  const std::vector<Action>& list = schedule_.stages[static_cast<std::size_t>(stage())];
  // post_limit: for action i, receives are posted up to the prefetch-th compute action after it.
  std::vector<std::size_t> computes;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (is_compute(list[i].type)) computes.push_back(i);
  }
  next_to_post_ = 0;
  std::size_t computes_passed = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Action& a = list[i];
    if (is_compute(a.type)) ++computes_passed;
    const std::size_t target = computes_passed + static_cast<std::size_t>(options_.prefetch) - 1;
    post_receives(std::max(i + 1, target < computes.size() ? computes[target] : list.size()));
    if (is_compute(a.type)) {
      drive_progress();
      run_compute(a, report);
    } else if (is_recv(a.type))
      run_recv(a, report);
    else
      run_send(a, report);
  }
  for (Outbound& send : sends_) {
    send.work.wait();
    recycle(std::move(send.tensor.data));
  }
  sends_.clear();
  ++step_;
  report.wall_seconds = seconds_between(start, now_ns());
  return report;
}

}  // namespace braid::parallel
