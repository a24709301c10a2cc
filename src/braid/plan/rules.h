// The rules of thumb of the seeds as checks on a layout, each with its explanation, so advice
// says why ("TP inside a node", "p <= m/2", "compress early, stop late", ...).
#pragma once

#include <string>
#include <vector>

#include "braid/plan/step_model.h"

namespace braid::plan {

enum class Severity { kInfo, kWarning, kError };
const char* severity_name(Severity severity);  // "info", "warning", "error"

struct Finding {
  std::string rule;  // stable id, e.g. "tp-inside-node"
  Severity severity = Severity::kInfo;
  std::string message;
};

// REQUIRES: `step` was computed for (model, cluster, step.layout).
std::vector<Finding> check_rules(const ModelSpec& model, const ClusterSpec& cluster, const StepEstimate& step,
                                 const StepOptions& options = {});

}  // namespace braid::plan
