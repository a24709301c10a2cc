// The command-line flags braid-plan's subcommands share (model, cluster, layout), kept as the
// text the user typed and turned into braid::plan values after parsing, so unit errors name the
// flag ("--device-memory: cannot read '80 gigs' ...").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "braid/plan/step_model.h"

namespace braid::plan::cli {

struct ModelFlags {
  std::string model = "llama-7b";  // a preset, or "custom"
  std::string params;              // overrides the count the shape gives
  // Unset: the preset's value. Given, each must be >= 1 (0 used to mean "unset" silently).
  std::optional<int> layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq;
};

struct ClusterFlags {
  int nodes = 1;
  int devices_per_node = 8;
  std::string device_flops = "989T";
  double efficiency = 0.5;
  std::string device_memory = "80GiB";
  std::string intra_link = "nvlink";
  std::string inter_link = "ib-ndr";
  std::string intra_bandwidth, inter_bandwidth, intra_alpha, inter_alpha;  // override the presets
};

struct LayoutFlags {
  int dp = 1, tp = 1, pp = 1, zero = 0, microbatches = 1, micro_batch = 1, chunks = 1;
  bool sequence_parallel = false;
  std::string recompute = "none";
  std::string schedule = "1f1b";
  std::string compression = "none";
};

struct PrecisionFlags {
  std::string dtype = "bf16";        // weights and gradients
  std::string activation_dtype = "bf16";
  // Adam's state per parameter; unset: 12 in mixed precision (fp32 master + m + v), 8 with
  // --dtype fp32 (m + v: the fp32 weights are the master, there is no copy; docs/zero.md).
  std::optional<double> optimizer_bytes;
  double overlap = 1.0;
};

void add_model_flags(CLI::App& app, ModelFlags& flags);
void add_cluster_flags(CLI::App& app, ClusterFlags& flags);
// `with_dp`: false where dp follows from the cluster (step: dp = devices / (tp pp) unless given).
void add_layout_flags(CLI::App& app, LayoutFlags& flags);
void add_precision_flags(CLI::App& app, PrecisionFlags& flags);

ModelSpec model_from(const ModelFlags& flags);    // validated
ClusterSpec cluster_from(const ClusterFlags& flags);
Layout layout_from(const LayoutFlags& flags);
StepOptions options_from(const PrecisionFlags& flags);

nlohmann::json describe(const ModelSpec& model);
nlohmann::json describe(const ClusterSpec& cluster);
nlohmann::json describe(const Layout& layout);

std::vector<std::string> split_list(const std::string& text);  // "0,1,3" -> {"0","1","3"}

}  // namespace braid::plan::cli
