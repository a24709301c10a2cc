#include "plan_flags.h"

#include "braid/base/pipeline_schedule_kind.h"
#include "braid/plan/precision.h"
#include "braid/plan/units.h"

namespace braid::plan::cli {

void add_model_flags(CLI::App& app, ModelFlags& f) {
  app.add_option("--model", f.model, "preset: llama-7b, llama-13b, llama-70b, gpt3-175b, or custom")
      ->capture_default_str();
  app.add_option("--params", f.params, "parameter count (7B, 70e9), overriding the shape's");
  app.add_option("--layers", f.layers, "transformer layers");
  app.add_option("--hidden", f.hidden, "hidden size");
  app.add_option("--heads", f.heads, "attention heads");
  app.add_option("--kv-heads", f.kv_heads, "key/value heads (GQA; = heads for MHA)");
  app.add_option("--ffn-hidden", f.ffn_hidden, "MLP inner size");
  app.add_option("--vocab", f.vocab, "vocabulary size");
  app.add_option("--seq", f.seq, "sequence length");
}

void add_cluster_flags(CLI::App& app, ClusterFlags& f) {
  app.add_option("--nodes", f.nodes, "nodes")->capture_default_str();
  app.add_option("--gpus-per-node,--devices-per-node", f.devices_per_node, "devices per node")->capture_default_str();
  app.add_option("--device-flops", f.device_flops, "peak 16-bit FLOP/s per device (989T, 312TFLOPS)")
      ->capture_default_str();
  app.add_option("--efficiency", f.efficiency, "share of peak FLOP/s the matmuls reach (0..1]")->capture_default_str();
  app.add_option("--device-memory", f.device_memory, "memory per device (80GiB, 40GB)")->capture_default_str();
  app.add_option("--intra-link", f.intra_link, "link inside a node (nvlink, pcie4, ...)")->capture_default_str();
  app.add_option("--inter-link", f.inter_link, "link between nodes (ib-ndr, ib-hdr, roce, eth-100g, ...)")
      ->capture_default_str();
  app.add_option("--intra-bandwidth", f.intra_bandwidth, "override the intra-node bandwidth (900GB/s, 400Gbps)");
  app.add_option("--inter-bandwidth", f.inter_bandwidth, "override the inter-node bandwidth");
  app.add_option("--intra-alpha", f.intra_alpha, "override the intra-node latency (1us)");
  app.add_option("--inter-alpha", f.inter_alpha, "override the inter-node latency");
}

void add_layout_flags(CLI::App& app, LayoutFlags& f) {
  app.add_option("--dp", f.dp, "data-parallel degree")->capture_default_str();
  app.add_option("--tp", f.tp, "tensor-parallel degree")->capture_default_str();
  app.add_option("--pp", f.pp, "pipeline stages")->capture_default_str();
  app.add_option("--zero", f.zero, "ZeRO stage 0..3")->capture_default_str();
  app.add_option("--microbatches,-m", f.microbatches, "micro-batches per iteration (m)")->capture_default_str();
  app.add_option("--micro-batch", f.micro_batch, "sequences per micro-batch (b)")->capture_default_str();
  app.add_option("--chunks", f.chunks, "model chunks per stage (v, interleaved)")->capture_default_str();
  app.add_flag("--sequence-parallel", f.sequence_parallel, "Megatron sequence parallelism with tp");
  app.add_option("--recompute", f.recompute, "activation recomputation: none, selective, full")->capture_default_str();
  app.add_option("--schedule", f.schedule, "pipeline schedule: gpipe, 1f1b, interleaved (v from --chunks) or interleaved:V, zb1 (alias zb-h1)")->capture_default_str();
  app.add_option("--compression", f.compression, "gradient codec: none, fp16, int8[:B], sign[:B], topk:R, randomk:R, "
                                                 "powersgd:r")
      ->capture_default_str();
}

void add_precision_flags(CLI::App& app, PrecisionFlags& f) {
  app.add_option("--dtype", f.dtype, "weight and gradient precision (fp32, bf16, fp16, fp8)")->capture_default_str();
  app.add_option("--activation-dtype", f.activation_dtype, "activation precision")->capture_default_str();
  app.add_option("--optimizer-bytes", f.optimizer_bytes,
                 "optimizer bytes per parameter (default Adam's: 12 mixed precision, 8 with --dtype fp32)");
  app.add_option("--overlap", f.overlap, "share of backward that DP communication can hide behind (0..1)")
      ->capture_default_str();
}

ModelSpec model_from(const ModelFlags& f) {
  ModelSpec m = f.model == "custom" ? ModelSpec{} : model_preset(f.model);
  // Unset keeps the preset's value; a given one, 0 included, must be a real size.
  auto set = [](std::optional<int> given, int& field, const char* flag) {
    if (!given) return;
    require_range(flag, *given, 1, 1e8);
    field = *given;
  };
  set(f.layers, m.layers, "--layers");
  set(f.hidden, m.hidden, "--hidden");
  set(f.heads, m.heads, "--heads");
  set(f.kv_heads, m.kv_heads, "--kv-heads");
  if (f.heads && !f.kv_heads && m.kv_heads > *f.heads) m.kv_heads = *f.heads;
  set(f.ffn_hidden, m.ffn_hidden, "--ffn-hidden");
  set(f.vocab, m.vocab, "--vocab");
  set(f.seq, m.seq, "--seq");
  if (!f.params.empty()) m.params_override = parse_count(f.params, "--params");
  validate(m);
  return m;
}

ClusterSpec cluster_from(const ClusterFlags& f) {
  ClusterSpec c;
  require_range("--nodes", f.nodes, 1, 1e6);
  require_range("--gpus-per-node", f.devices_per_node, 1, 1024);
  require_range("--efficiency", f.efficiency, 0.01, 1, "share of peak FLOP/s");
  c.nodes = f.nodes;
  c.devices_per_node = f.devices_per_node;
  c.flops = parse_flop_rate(f.device_flops, "--device-flops");
  c.efficiency = f.efficiency;
  c.memory = parse_bytes(f.device_memory, "--device-memory");
  c.intra = link_preset(f.intra_link, "--intra-link");
  c.inter = link_preset(f.inter_link, "--inter-link");
  if (!f.intra_bandwidth.empty()) c.intra.bandwidth = parse_bandwidth(f.intra_bandwidth, "--intra-bandwidth");
  if (!f.inter_bandwidth.empty()) c.inter.bandwidth = parse_bandwidth(f.inter_bandwidth, "--inter-bandwidth");
  if (!f.intra_alpha.empty()) c.intra.alpha = parse_time(f.intra_alpha, "--intra-alpha");
  if (!f.inter_alpha.empty()) c.inter.alpha = parse_time(f.inter_alpha, "--inter-alpha");
  return c;
}

Layout layout_from(const LayoutFlags& f) {
  Layout l;
  require_range("--dp", f.dp, 1, 1 << 24);
  require_range("--tp", f.tp, 1, 1 << 20);
  require_range("--pp", f.pp, 1, 1 << 20);
  require_range("--zero", f.zero, 0, 3, "ZeRO stages are 0 (off), 1, 2, 3");
  require_range("--microbatches", f.microbatches, 1, 1e7);
  require_range("--micro-batch", f.micro_batch, 1, 1e6);
  require_range("--chunks", f.chunks, 1, 1e5);
  l.dp = f.dp, l.tp = f.tp, l.pp = f.pp, l.zero = f.zero;
  l.microbatches = f.microbatches, l.micro_batch = f.micro_batch, l.chunks = f.chunks;
  l.sequence_parallel = f.sequence_parallel;
  l.recompute = parse_recompute(f.recompute, "--recompute");
  const PipelineScheduleName schedule = parse_pipeline_schedule(f.schedule, "--schedule");
  l.schedule = schedule.kind;
  if (schedule.chunks) l.chunks = *schedule.chunks;  // interleaved:V says v itself
  l.compression = parse_compression(f.compression, "--compression");
  return l;
}

StepOptions options_from(const PrecisionFlags& f) {
  StepOptions o;
  o.weight_bytes = o.grad_bytes = precision_bytes(f.dtype, "--dtype");
  o.activation_bytes = precision_bytes(f.activation_dtype, "--activation-dtype");
  // fp32 training steps the fp32 weights themselves: no master copy (4 of the 12 bytes).
  const double optimizer_bytes = f.optimizer_bytes.value_or(f.dtype == "fp32" ? 8 : 12);
  require_range("--optimizer-bytes", optimizer_bytes, 0, 64);
  require_range("--overlap", f.overlap, 0, 1);
  o.optimizer_bytes = optimizer_bytes;
  o.overlap = f.overlap;
  return o;
}

nlohmann::json describe(const ModelSpec& m) {
  return {{"name", m.name},     {"params", m.params()},     {"layers", m.layers}, {"hidden", m.hidden},
          {"heads", m.heads},   {"kv_heads", m.kv_heads},   {"ffn_hidden", m.ffn_hidden},
          {"vocab", m.vocab},   {"seq", m.seq}};
}

nlohmann::json describe(const ClusterSpec& c) {
  return {{"nodes", c.nodes},
          {"devices_per_node", c.devices_per_node},
          {"device_flops", c.flops},
          {"efficiency", c.efficiency},
          {"device_memory", c.memory},
          {"intra_link", {{"name", c.intra.name}, {"alpha", c.intra.alpha}, {"bandwidth", c.intra.bandwidth}}},
          {"inter_link", {{"name", c.inter.name}, {"alpha", c.inter.alpha}, {"bandwidth", c.inter.bandwidth}}}};
}

nlohmann::json describe(const Layout& l) {
  return {{"dp", l.dp},
          {"tp", l.tp},
          {"pp", l.pp},
          {"zero", l.zero},
          {"microbatches", l.microbatches},
          {"micro_batch", l.micro_batch},
          {"chunks", l.chunks},
          {"sequence_parallel", l.sequence_parallel},
          {"recompute", recompute_name(l.recompute)},
          {"schedule", std::string(pipeline_schedule_kind_name(l.schedule))},
          {"compression", compression_name(l.compression)}};
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

}  // namespace braid::plan::cli
