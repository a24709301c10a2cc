// What braid-train reports for --model moe-gpt (torch-free): per step, the tokens dropped
// (summed over the ranks and MoE layers) and rank 0's time in the all-to-alls; over the run,
// each MoE layer's expert load histogram (choices routed to each expert before drops, all
// ranks' tokens).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace braid::train {

struct MoeRunFigures {
  int ep = 1, experts = 0, top_k = 1;
  std::string capacity_factor;  // a number or "dropless"
  std::int64_t tokens_per_step = 0;              // global: batch x context x MoE layers
  std::vector<std::int64_t> dropped_tokens_per_step;  // tokens with every choice dropped, all ranks and layers
  std::vector<double> alltoall_seconds_per_step;      // rank 0: dispatch + combine, forward and backward
  std::vector<double> step_seconds;                   // rank 0
  std::vector<std::vector<std::int64_t>> load;        // [MoE layer][expert]: choices routed over the run

  double alltoall_share() const;  // of rank 0's step time
};

// A few lines for the closing table.
std::string moe_summary(const MoeRunFigures& moe);
nlohmann::json moe_json(const MoeRunFigures& moe);

}  // namespace braid::train
