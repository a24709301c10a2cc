#include "braid/parallel/schedule_validator.h"

#include <fmt/format.h>

#include <optional>

#include "braid/base/error.h"
#include "braid/parallel/schedule_execution.h"

namespace braid::parallel {
namespace {

constexpr int kActionTypes = 8;

[[noreturn]] void invalid(int stage, const std::string& detail) {
  throw InvalidArgument({}, fmt::format("schedule: stage {}: {}", stage, detail));
}

// The actions stage `stage` must hold, as counts indexed by (type, mb, chunk).
class ExpectedActions {
 public:
  ExpectedActions(const Schedule& schedule, int stage) : spec_(schedule.spec) {
    counts_.assign(static_cast<std::size_t>(kActionTypes * spec_.microbatches * spec_.chunks), 0);
    const int last_virtual = schedule.virtual_stages() - 1;
    for (int chunk = 0; chunk < spec_.chunks; ++chunk) {
      const int vs = virtual_stage(spec_, stage, chunk);
      const bool remote_prev = vs > 0 && stage_of(spec_, vs - 1) != stage;
      const bool remote_next = vs < last_virtual && stage_of(spec_, vs + 1) != stage;
      for (int mb = 0; mb < spec_.microbatches; ++mb) {
        add(ActionType::kForward, mb, chunk);
        if (schedule.split_backward()) {
          add(ActionType::kBackwardInput, mb, chunk);
          add(ActionType::kBackwardWeight, mb, chunk);
        } else {
          add(ActionType::kBackward, mb, chunk);
        }
        if (remote_prev) add(ActionType::kRecvActivation, mb, chunk), add(ActionType::kSendGradient, mb, chunk);
        if (remote_next) add(ActionType::kSendActivation, mb, chunk), add(ActionType::kRecvGradient, mb, chunk);
      }
    }
  }

  int& at(ActionType type, int mb, int chunk) {
    return counts_[static_cast<std::size_t>((static_cast<int>(type) * spec_.microbatches + mb) * spec_.chunks + chunk)];
  }
  // The first expected action still unseen, if any.
  std::optional<Action> first_missing() {
    for (int t = 0; t < kActionTypes; ++t) {
      for (int mb = 0; mb < spec_.microbatches; ++mb) {
        for (int chunk = 0; chunk < spec_.chunks; ++chunk) {
          if (at(static_cast<ActionType>(t), mb, chunk) > 0) return Action{static_cast<ActionType>(t), mb, chunk, -1};
        }
      }
    }
    return std::nullopt;
  }

 private:
  void add(ActionType type, int mb, int chunk) { ++at(type, mb, chunk); }
  ScheduleSpec spec_;
  std::vector<int> counts_;
};

// The peer a transfer action must name, given the stage that runs it.
int expected_peer(const ScheduleSpec& spec, int stage, const Action& a) {
  const int vs = virtual_stage(spec, stage, a.chunk);
  const bool toward_prev = a.type == ActionType::kRecvActivation || a.type == ActionType::kSendGradient;
  const int other = toward_prev ? vs - 1 : vs + 1;
  if (other < 0 || other >= spec.stages * spec.chunks) return -1;
  return stage_of(spec, other);
}

void check_stage(const Schedule& schedule, int stage) {
  const ScheduleSpec& spec = schedule.spec;
  ExpectedActions expected(schedule, stage);
  for (const Action& a : schedule.stages[static_cast<std::size_t>(stage)]) {
    if (a.microbatch < 0 || a.microbatch >= spec.microbatches) {
      invalid(stage,
              fmt::format("{} has micro-batch {} outside 0..{}", describe(a), a.microbatch, spec.microbatches - 1));
    }
    if (a.chunk < 0 || a.chunk >= spec.chunks) {
      invalid(stage, fmt::format("{} has chunk {} outside 0..{}", describe(a), a.chunk, spec.chunks - 1));
    }
    if (is_compute(a.type) && a.peer != -1)
      invalid(stage, fmt::format("{} is a computation but names peer {}", describe(a), a.peer));
    if (!is_compute(a.type) && a.peer != expected_peer(spec, stage, a)) {
      invalid(stage, fmt::format("{} names the wrong peer: that data goes between this stage and stage {}", describe(a),
                                 expected_peer(spec, stage, a)));
    }
    int& left = expected.at(a.type, a.microbatch, a.chunk);
    if (left == 0) {
      invalid(stage, fmt::format("{} appears more than once, or does not belong in a {} schedule on this stage",
                                 describe(a), schedule_name(spec)));
    }
    --left;
  }
  if (std::optional<Action> missing = expected.first_missing()) {
    invalid(stage, fmt::format("{} is missing", describe(*missing)));
  }
}

}  // namespace

void check_schedule_structure(const Schedule& schedule) {
  check_schedule_spec(schedule.spec);
  if (static_cast<int>(schedule.stages.size()) != schedule.spec.stages) {
    throw InvalidArgument(
        {}, fmt::format("schedule: {} action lists for {} stages", schedule.stages.size(), schedule.spec.stages));
  }
  for (int s = 0; s < schedule.spec.stages; ++s) check_stage(schedule, s);
}

void validate_schedule(const Schedule& schedule) {
  check_schedule_structure(schedule);
  execute_schedule(schedule, ActionCosts{});
}

}  // namespace braid::parallel
