#include "braid/parallel/pipeline_action.h"

#include <fmt/format.h>

namespace braid::parallel {

bool is_compute(ActionType type) {
  return type == ActionType::kForward || type == ActionType::kBackward || type == ActionType::kBackwardInput ||
         type == ActionType::kBackwardWeight;
}

bool is_send(ActionType type) { return type == ActionType::kSendActivation || type == ActionType::kSendGradient; }

bool is_recv(ActionType type) { return type == ActionType::kRecvActivation || type == ActionType::kRecvGradient; }

const char* action_type_name(ActionType type) {
  switch (type) {
    case ActionType::kForward: return "F";
    case ActionType::kBackward: return "B";
    case ActionType::kBackwardInput: return "I";
    case ActionType::kBackwardWeight: return "W";
    case ActionType::kSendActivation: return "send-act";
    case ActionType::kRecvActivation: return "recv-act";
    case ActionType::kSendGradient: return "send-grad";
    case ActionType::kRecvGradient: return "recv-grad";
  }
  return "?";
}

std::string describe(const Action& action) {
  if (is_send(action.type)) {
    return fmt::format("{}(mb {}, chunk {}, to stage {})", action_type_name(action.type), action.microbatch,
                       action.chunk, action.peer);
  }
  if (is_recv(action.type)) {
    return fmt::format("{}(mb {}, chunk {}, from stage {})", action_type_name(action.type), action.microbatch,
                       action.chunk, action.peer);
  }
  return fmt::format("{}(mb {}, chunk {})", action_type_name(action.type), action.microbatch, action.chunk);
}

}  // namespace braid::parallel
