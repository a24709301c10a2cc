#include "braid/plan/bubble.h"

#include <algorithm>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/plan/units.h"

namespace braid::plan {

namespace {

void check(Schedule schedule, const BubbleInput& in) {
  require_range("pp", in.stages, 1, 1e6, "pipeline stages");
  require_range("microbatches", in.microbatches, 1, 1e9);
  require_range("chunks", in.chunks, 1, 1e6, "model chunks per stage");
  if (schedule == Schedule::kInterleaved1F1B && in.stages > 1 && in.microbatches % in.stages != 0) {
    throw InvalidArgument({.op = "braid-plan"},
                          fmt::format("microbatches = {} must be a multiple of pp = {} for the interleaved schedule",
                                      in.microbatches, in.stages));
  }
  if (schedule == Schedule::kZeroBubbleH1) {
    require_range("forward", in.forward, 1e-9, 1e9);
    require_range("backward-input", in.backward_input, 1e-9, 1e9);
    require_range("backward-weight", in.backward_weight, 0, in.forward + in.backward_input,
                  "ZB-H1 needs W <= F + B");
  }
}

// Idle time and useful time of a stage, in units of one micro-batch's forward + backward.
struct Times {
  double idle;
  double useful;
  std::string formula;
  std::string substituted;
};

Times times_of(Schedule schedule, const BubbleInput& in) {
  const double p = in.stages, m = in.microbatches, v = in.chunks;
  switch (schedule) {
    case Schedule::kGPipe:
    case Schedule::k1F1B:
      return {p - 1, m, "(p-1) / (m + p - 1)", fmt::format("({}-1) / ({} + {} - 1)", num(p), num(m), num(p))};
    case Schedule::kInterleaved1F1B:
      return {(p - 1) / v, m, "(p-1) / (v m + p - 1)",
              fmt::format("({}-1) / ({} x {} + {} - 1)", num(p), num(v), num(m), num(p))};
    case Schedule::kZeroBubbleH1: {
      const double whole = in.forward + in.backward_input + in.backward_weight;
      const double idle = (p - 1) * (in.forward + in.backward_input - in.backward_weight) / whole;
      return {idle, m, "(p-1)(F+B-W) / (m(F+B+W) + (p-1)(F+B-W))",
              fmt::format("({}-1)({}+{}-{}) / ({}({}+{}+{}) + ({}-1)({}+{}-{}))", num(p), num(in.forward),
                          num(in.backward_input), num(in.backward_weight), num(m), num(in.forward),
                          num(in.backward_input), num(in.backward_weight), num(p), num(in.forward),
                          num(in.backward_input), num(in.backward_weight))};
    }
  }
  return {0, m, "", ""};
}

}  // namespace

double bubble_fraction(Schedule schedule, const BubbleInput& input) {
  check(schedule, input);
  Times t = times_of(schedule, input);
  return t.idle / (t.idle + t.useful);
}

Estimates pipeline_bubble(Schedule schedule, const BubbleInput& in) {
  check(schedule, in);
  Times t = times_of(schedule, in);
  const int in_flight = schedule == Schedule::kGPipe ? in.microbatches : std::min(in.stages, in.microbatches);
  return {{"bubble_fraction", t.idle / (t.idle + t.useful), Unit::kRatio, t.formula, t.substituted},
          {"bubble_over_ideal", t.idle / t.useful, Unit::kRatio,
           "bubble time / useful time  ((p-1)/m for 1F1B, (p-1)/(v m) interleaved)",
           fmt::format("{} / {}", num(t.idle), num(t.useful))},
          {"microbatches_in_flight", static_cast<double>(in_flight), Unit::kCount,
           schedule == Schedule::kGPipe ? "m (all forwards before any backward)" : "min(p, m) on the first stage",
           schedule == Schedule::kGPipe ? num(in.microbatches)
                                        : fmt::format("min({}, {})", in.stages, in.microbatches)}};
}

}  // namespace braid::plan
