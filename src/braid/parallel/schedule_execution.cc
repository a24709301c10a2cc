#include "braid/parallel/schedule_execution.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "braid/base/error.h"

namespace braid::parallel {
namespace {

constexpr int kActionTypes = 8;

struct Message {
  int microbatch;
  int chunk;  // the receiver's
  double arrival;
};

class Execution {
 public:
  Execution(const Schedule& schedule, const ActionCosts& costs)
      : schedule_(schedule), spec_(schedule.spec), costs_(costs) {
    const std::size_t p = static_cast<std::size_t>(spec_.stages);
    done_.assign(p, std::vector<char>(static_cast<std::size_t>(kActionTypes * spec_.microbatches * spec_.chunks), 0));
    clock_.assign(p, 0.0);
    next_.assign(p, 0);
    result_.resize(p);
  }

  ExecutedSchedule run() {
    for (;;) {
      bool moved = false;
      bool finished = true;
      for (int s = 0; s < spec_.stages; ++s) {
        while (next_[idx(s)] < list(s).size() && step(s)) moved = true;
        finished = finished && next_[idx(s)] == list(s).size();
      }
      if (finished) return std::move(result_);
      if (!moved) report_deadlock();
    }
  }

 private:
  static std::size_t idx(int i) { return static_cast<std::size_t>(i); }
  const std::vector<Action>& list(int s) const { return schedule_.stages[idx(s)]; }
  char& done(int stage, ActionType type, int mb, int chunk) {
    return done_[idx(stage)][idx((static_cast<int>(type) * spec_.microbatches + mb) * spec_.chunks + chunk)];
  }
  ActionType backward_type() const {
    return schedule_.split_backward() ? ActionType::kBackwardInput : ActionType::kBackward;
  }

  // Executes stage s's next action if it can; false when it must wait for a message.
  bool step(int s) {
    const Action& a = list(s)[next_[idx(s)]];
    if (std::optional<std::string> unmet = unmet_dependency(s, a)) {
      throw InvalidArgument(
          {}, fmt::format("schedule: stage {}: {} (action {}) runs before {}", s, describe(a), next_[idx(s)], *unmet));
    }
    TimedAction timed{a, clock_[idx(s)], clock_[idx(s)]};
    if (is_recv(a.type)) {
      std::deque<Message>& channel = channels_[{a.peer, s, a.type == ActionType::kRecvActivation}];
      if (channel.empty()) return false;
      const Message m = channel.front();
      if (m.microbatch != a.microbatch || m.chunk != a.chunk) {
        throw InvalidArgument({}, fmt::format("schedule: stage {}: {} pairs with the send of (mb {}, chunk {}) "
                                              "that stage {} posted first: sends and recvs between two stages must "
                                              "come in the same order",
                                              s, describe(a), m.microbatch, m.chunk, a.peer));
      }
      channel.pop_front();
      timed.end = std::max(timed.start, m.arrival);
    } else if (is_send(a.type)) {
      // The message carries the receiver's chunk: chunk numbers change across the wrap from
      // the last stage to the first (virtual stage p-1, chunk 0 -> virtual stage p, chunk 1).
      const bool activation = a.type == ActionType::kSendActivation;
      const int to = virtual_stage(spec_, s, a.chunk) + (activation ? 1 : -1);
      channels_[{s, a.peer, activation}].push_back({a.microbatch, chunk_of(spec_, to), timed.start + costs_.p2p});
    } else {
      timed.end = timed.start + compute_cost(spec_, costs_, a);
    }
    clock_[idx(s)] = timed.end;
    done(s, a.type, a.microbatch, a.chunk) = 1;
    result_[idx(s)].push_back(timed);
    ++next_[idx(s)];
    return true;
  }

  // What `a` on stage s depends on that has not run yet, described; nullopt when all has.
  std::optional<std::string> unmet_dependency(int s, const Action& a) {
    const int vs = virtual_stage(spec_, s, a.chunk);
    const int last = spec_.stages * spec_.chunks - 1;
    auto need_local = [&](ActionType type) -> std::optional<std::string> {
      if (done(s, type, a.microbatch, a.chunk)) return std::nullopt;
      return describe({type, a.microbatch, a.chunk, -1}) + " on this stage";
    };
    auto need_remote = [&](ActionType type, int other_vs, ActionType transfer) -> std::optional<std::string> {
      const int other = stage_of(spec_, other_vs);
      if (other != s && !done(s, transfer, a.microbatch, a.chunk)) {
        return describe({transfer, a.microbatch, a.chunk, other}) + " on this stage";
      }
      if (done(other, type, a.microbatch, chunk_of(spec_, other_vs))) return std::nullopt;
      return fmt::format("{} on stage {} (virtual stage {})",
                         describe({type, a.microbatch, chunk_of(spec_, other_vs), -1}), other, other_vs);
    };
    switch (a.type) {
      case ActionType::kForward:
        return vs > 0 ? need_remote(ActionType::kForward, vs - 1, ActionType::kRecvActivation) : std::nullopt;
      case ActionType::kBackward:
      case ActionType::kBackwardInput:
        if (auto unmet = need_local(ActionType::kForward)) return unmet;
        return vs < last ? need_remote(backward_type(), vs + 1, ActionType::kRecvGradient) : std::nullopt;
      case ActionType::kBackwardWeight: return need_local(ActionType::kBackwardInput);
      case ActionType::kSendActivation: return need_local(ActionType::kForward);
      case ActionType::kSendGradient: return need_local(backward_type());
      case ActionType::kRecvActivation:
      case ActionType::kRecvGradient: return std::nullopt;
    }
    return std::nullopt;
  }

  [[noreturn]] void report_deadlock() const {
    std::string stuck;
    for (int s = 0; s < spec_.stages; ++s) {
      if (next_[idx(s)] == list(s).size()) continue;
      if (!stuck.empty()) stuck += "; ";
      stuck += fmt::format("stage {} waits at {} (action {})", s, describe(list(s)[next_[idx(s)]]), next_[idx(s)]);
    }
    throw InvalidArgument({}, "schedule deadlocks: " + stuck);
  }

  const Schedule& schedule_;
  const ScheduleSpec& spec_;
  ActionCosts costs_;
  std::vector<std::vector<char>> done_;                                 // per stage, per (type, mb, chunk)
  std::vector<double> clock_;                                           // per stage: when its next action may start
  std::vector<std::size_t> next_;                                       // per stage: index of its next action
  std::map<std::tuple<int, int, bool>, std::deque<Message>> channels_;  // (from, to, activation?)
  ExecutedSchedule result_;
};

}  // namespace

double compute_cost(const ScheduleSpec& spec, const ActionCosts& costs, const Action& action) {
  const double per_chunk = 1.0 / spec.chunks;
  switch (action.type) {
    case ActionType::kForward: return costs.forward * per_chunk;
    case ActionType::kBackward: return (costs.backward_input + costs.backward_weight) * per_chunk;
    case ActionType::kBackwardInput: return costs.backward_input * per_chunk;
    case ActionType::kBackwardWeight: return costs.backward_weight * per_chunk;
    default: return 0;
  }
}

ExecutedSchedule execute_schedule(const Schedule& schedule, const ActionCosts& costs) {
  return Execution(schedule, costs).run();
}

}  // namespace braid::parallel
