// The instructions a pipeline schedule is made of (STYLE.md principle 6: a schedule is a value;
// one executor, the runtime or the simulator, interprets it; DeepSpeed's pipe/schedule.py).
//
// Vocabulary (docs/pipeline.md):
//   p stages (one rank each), m micro-batches, v model chunks per stage. The model is cut into
//   p*v consecutive pieces, the *virtual stages*; virtual stage `chunk * p + stage` lives on
//   `stage` (Megatron's interleaved layout: stage 0 holds pieces 0, p, 2p, ...). With v = 1 a
//   virtual stage is just a stage.
//   F(mb, chunk)   forward of one micro-batch through one chunk.
//   B(mb, chunk)   its backward: input gradient *and* weight gradient (GPipe, 1F1B, interleaved).
//   I(mb, chunk)   input-gradient half of a split backward (zero-bubble's "B").
//   W(mb, chunk)   weight-gradient half of a split backward (zero-bubble's "W"); deferrable.
//   send/recv      explicit transfer points: the activation F produced goes to the next virtual
//                  stage, the gradient B/I produced goes to the previous one. A recv is where
//                  the stage waits for the data; a send is where it hands the data off (the
//                  runtime posts it asynchronously; the simulator treats it as free for the
//                  sender). Transfers between two chunks on the same rank (p = 1) are local and
//                  have no send/recv.
#pragma once

#include <cstdint>
#include <string>

namespace braid::parallel {

enum class ActionType : std::uint8_t {
  kForward,
  kBackward,        // full backward (input + weight gradient)
  kBackwardInput,   // split backward, input gradient ("B" in Qi et al. 2024)
  kBackwardWeight,  // split backward, weight gradient ("W")
  kSendActivation,  // to the stage holding the next virtual stage
  kRecvActivation,  // from the stage holding the previous virtual stage
  kSendGradient,    // to the stage holding the previous virtual stage
  kRecvGradient,    // from the stage holding the next virtual stage
};

struct Action {
  ActionType type = ActionType::kForward;
  int microbatch = 0;
  int chunk = 0;
  int peer = -1;  // the other stage of a send/recv; -1 for compute

  bool operator==(const Action&) const = default;
};

bool is_compute(ActionType type);
bool is_send(ActionType type);
bool is_recv(ActionType type);

// "F", "B", "I" (shown as "B" in zero-bubble diagrams, but kept distinct here), "W",
// "send-act", "recv-act", "send-grad", "recv-grad".
const char* action_type_name(ActionType type);

// "F(mb 3, chunk 1)", "recv-grad(mb 0, chunk 0, from stage 2)": for error messages.
std::string describe(const Action& action);

}  // namespace braid::parallel
