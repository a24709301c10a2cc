// volume, memory, kv, bubble, quant, kernel: the calculators of braid::plan on the command line.
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/pipeline_schedule_kind.h"
#include "braid/plan/bubble.h"
#include "braid/plan/comm_volume.h"
#include "braid/plan/kernel_launch.h"
#include "braid/plan/kv_cache.h"
#include "braid/plan/memory.h"
#include "braid/plan/precision.h"
#include "braid/plan/step_model.h"
#include "braid/plan/units.h"
#include "commands.h"
#include "plan_flags.h"

namespace braid::plan::cli {

namespace {

struct VolumeFlags {
  ModelFlags model;
  LayoutFlags layout;
  PrecisionFlags precision;
  std::string bytes;
  int ranks = 0;
  double experts = 0, top_k = 2;
  double capacity_factor = 0;    // 0: dropless
  std::optional<double> tokens;  // unset: micro-batch x seq; a given value must be a real count
  std::optional<int> ep;         // unset: one expert per rank (E)
};

Report volume_report(const VolumeFlags& f) {
  const ModelSpec m = model_from(f.model);
  const Layout l = layout_from(f.layout);
  const StepOptions o = options_from(f.precision);
  validate_model_split(m, l.tp, l.pp);
  Report r{.command = "volume"};
  r.inputs = {{"model", describe(m)}, {"layout", describe(l)}, {"dtype", f.precision.dtype}};
  if (!f.bytes.empty()) {
    require_range("--ranks", f.ranks, 2, 1 << 24, "give --ranks with --bytes");
    const double s = parse_bytes(f.bytes, "--bytes");
    r.sections.push_back({fmt::format("ring collectives, {} ranks, S = {}", f.ranks, format_bytes(s)),
                          {ring_reduce_scatter_bytes(s, f.ranks), ring_allgather_bytes(s, f.ranks),
                           ring_allreduce_bytes(s, f.ranks)}});
  }
  const double shard_params = m.params() / (static_cast<double>(l.tp) * l.pp);
  if (l.dp > 1) {
    Estimates dp = zero_bytes(l.zero, shard_params, o.grad_bytes, l.dp, l.microbatches);
    dp.push_back(bucket_size_rule(shard_params * o.grad_bytes, l.dp * l.tp * l.pp));
    r.sections.push_back({fmt::format("data parallel: dp = {}, ZeRO-{}, m = {}, Phi = {:.4g} parameters per tp x pp shard", l.dp,
                                      l.zero, l.microbatches, shard_params),
                          dp});
  }
  const ActivationShape shape{.micro_batch = static_cast<double>(l.micro_batch), .seq = static_cast<double>(m.seq),
                              .hidden = static_cast<double>(m.hidden), .bytes = o.activation_bytes};
  if (l.tp > 1) {
    Estimates tp = tp_layer_bytes(shape, l.tp, l.sequence_parallel, l.recompute == Recompute::kFull);
    const double per_layer = find_estimate(tp, "tp_bytes_per_layer_per_rank").value;
    const double layers = static_cast<double>(m.layers) / l.pp;
    tp.push_back({"tp_bytes_per_iteration_per_rank", per_layer * layers * l.microbatches, Unit::kBytes,
                  "per layer x layers/pp x m", fmt::format("{} x {} x {} B", num(per_layer), num(layers), l.microbatches)});
    r.sections.push_back({fmt::format("tensor parallel: tp = {}{}", l.tp, l.sequence_parallel ? ", sequence parallel" : ""),
                          tp});
  }
  if (l.pp > 1) {
    r.sections.push_back({fmt::format("pipeline: pp = {}, m = {}, v = {}", l.pp, l.microbatches, l.chunks),
                          pp_bytes(shape, l.microbatches, l.chunks, l.tp, l.sequence_parallel)});
  }
  if (f.tokens) require_range("--tokens", *f.tokens, 1, 1e12);
  if (f.ep) require_range("--ep", *f.ep, 1, 1e6);
  require_range("--capacity-factor", f.capacity_factor, 0, 1e6, "0 is dropless");
  if (f.experts > 0) {
    MoeShape moe{.tokens = f.tokens.value_or(static_cast<double>(l.micro_batch) * m.seq), .top_k = f.top_k,
                 .hidden = static_cast<double>(m.hidden), .bytes = o.activation_bytes, .experts = f.experts,
                 .ep = f.ep.value_or(static_cast<int>(f.experts)), .capacity_factor = f.capacity_factor,
                 .tp = l.tp};
    r.sections.push_back({fmt::format("MoE all-to-all per MoE layer and rank: E = {}, top-{}, ep = {}, tp = {}",
                                      num(moe.experts), num(moe.top_k), moe.ep, moe.tp),
                          moe_alltoall_bytes(moe)});
  }
  if (r.sections.empty()) {
    r.notes.push_back("nothing communicates: give --dp, --tp, --pp or --experts > 1, or --bytes with --ranks");
  }
  return r;
}

struct MemoryFlags {
  ModelFlags model;
  LayoutFlags layout;
  PrecisionFlags precision;
  std::string device_memory = "80GiB";
  std::string grad_dtype;  // empty: --dtype's
};

Report memory_report(const MemoryFlags& f) {
  const ModelSpec m = model_from(f.model);
  const Layout l = layout_from(f.layout);
  const StepOptions o = options_from(f.precision);
  const double device = parse_bytes(f.device_memory, "--device-memory");
  Report r{.command = "memory"};
  r.inputs = {{"model", describe(m)}, {"layout", describe(l)}, {"dtype", f.precision.dtype}, {"device_memory", device}};
  if (!f.grad_dtype.empty()) r.inputs.push_back({"grad_dtype", f.grad_dtype});
  validate_model_split(m, l.tp, l.pp);
  const double grad_bytes = f.grad_dtype.empty() ? o.grad_bytes : precision_bytes(f.grad_dtype, "--grad-dtype");
  Estimates states = model_state_memory({.params = m.params(), .weight_bytes = o.weight_bytes,
                                         .grad_bytes = grad_bytes, .optimizer_bytes = o.optimizer_bytes, .dp = l.dp,
                                         .tp = l.tp, .pp = l.pp, .zero = l.zero});
  r.sections.push_back({fmt::format("model states per device: Phi = {:.4g}, dp = {}, tp = {}, pp = {}, ZeRO-{}",
                                    m.params(), l.dp, l.tp, l.pp, l.zero),
                        states});
  Estimates acts = activation_memory({.seq = static_cast<double>(m.seq), .micro_batch = static_cast<double>(l.micro_batch),
                                      .hidden = static_cast<double>(m.hidden), .heads = static_cast<double>(m.heads),
                                      .layers = m.layers, .tp = l.tp, .pp = l.pp, .microbatches = l.microbatches,
                                      .chunks = l.chunks, .sequence_parallel = l.sequence_parallel,
                                      .recompute = l.recompute, .schedule = l.schedule, .bytes = o.activation_bytes});
  r.sections.push_back({fmt::format("activations: {} recomputation, {} schedule", recompute_name(l.recompute),
                                    pipeline_schedule_kind_name(l.schedule)),
                        acts});
  const double total = find_estimate(states, "model_state_bytes").value + find_estimate(acts, "activation_bytes").value;
  r.sections.push_back({"total", {{"memory_bytes", total, Unit::kBytes, "model states + activations",
                                   fmt::format("{} + {} B", num(find_estimate(states, "model_state_bytes").value),
                                               num(find_estimate(acts, "activation_bytes").value))},
                                  {"device_share", total / device, Unit::kRatio, "memory / device memory",
                                   fmt::format("{} / {}", num(total), num(device))}}});
  r.notes.push_back(total <= device ? fmt::format("fits: {} of {}", format_bytes(total), format_bytes(device))
                                    : fmt::format("does NOT fit: {} needed, {} per device", format_bytes(total),
                                                  format_bytes(device)));
  return r;
}

struct KvFlags {
  ModelFlags model;
  std::optional<int> head_dim;  // unset: hidden / heads
  std::string kv_dtype = "bf16";
  std::string tokens;
  double sequences = 1;
  int block_size = 16;
  std::string prefix = "0";
  double requests = 1;
  std::string chunk = "0";
  int tp = 1;
  int prefill_tp = 0, decode_tp = 0;  // 0: no prefill/decode split
};

double count_or_zero(const std::string& text, const char* field) {
  return text == "0" ? 0 : parse_count(text, field);
}

Report kv_report(const KvFlags& f) {
  const ModelSpec m = model_from(f.model);
  if (f.head_dim) require_range("--head-dim", *f.head_dim, 1, 1e6);
  KvInput in{.layers = m.layers, .kv_heads = m.kv_heads, .head_dim = f.head_dim.value_or(m.head_dim()),
             .bytes = precision_bytes(f.kv_dtype, "--kv-dtype"),
             .tokens = f.tokens.empty() ? static_cast<double>(m.seq) : parse_count(f.tokens, "--tokens"),
             .sequences = f.sequences, .block_size = f.block_size,
             .prefix_tokens = count_or_zero(f.prefix, "--prefix"), .requests = f.requests,
             .chunk_size = count_or_zero(f.chunk, "--chunk"), .tp = f.tp, .prefill_tp = f.prefill_tp,
             .decode_tp = f.decode_tp};
  if ((f.prefill_tp > 0) != (f.decode_tp > 0)) {
    throw braid::InvalidArgument({.op = "braid-plan"}, "--prefill-tp and --decode-tp go together");
  }
  Report r{.command = "kv"};
  r.inputs = {{"model", describe(m)},      {"kv_dtype", f.kv_dtype},   {"tokens", in.tokens},
              {"sequences", in.sequences}, {"block_size", in.block_size}, {"tp", in.tp}};
  if (in.prefill_tp > 0) {
    r.inputs.push_back({"prefill_tp", in.prefill_tp});
    r.inputs.push_back({"decode_tp", in.decode_tp});
  }
  r.sections.push_back({fmt::format("KV cache: {} layers x {} KV heads x d_head {} in {}", in.layers, in.kv_heads,
                                    in.head_dim, f.kv_dtype),
                        kv_cache(in)});
  if (f.kv_dtype != "fp8") {
    r.sections.push_back({"in fp8 instead", {quantisation_ratio(f.kv_dtype, "fp8")}});
  }
  return r;
}

struct BubbleFlags {
  int pp = 4, microbatches = 8, chunks = 2;
  std::string schedule = "all";
  double forward = 1, backward_input = 1, backward_weight = 1;
};

Report bubble_report(const BubbleFlags& f) {
  Report r{.command = "bubble"};
  r.inputs = {{"pp", f.pp}, {"microbatches", f.microbatches}, {"chunks", f.chunks}};
  std::vector<PipelineScheduleName> schedules;
  if (f.schedule == "all") {
    for (Schedule s : all_pipeline_schedule_kinds()) schedules.push_back({s, std::nullopt});
  } else {
    for (const std::string& name : split_list(f.schedule)) schedules.push_back(parse_pipeline_schedule(name, "--schedule"));
  }
  BubbleInput in{.stages = f.pp, .microbatches = f.microbatches, .chunks = f.chunks, .forward = f.forward,
                 .backward_input = f.backward_input, .backward_weight = f.backward_weight};
  for (const PipelineScheduleName& name : schedules) {
    const Schedule s = name.kind;
    BubbleInput x = in;
    if (s != Schedule::kInterleaved1F1B) x.chunks = 1;
    if (name.chunks) x.chunks = *name.chunks;  // interleaved:V says v itself
    if (s == Schedule::kInterleaved1F1B && f.schedule == "all" && f.pp > 1 && f.microbatches % f.pp != 0) {
      r.notes.push_back(fmt::format("interleaved skipped: it needs m = {} to be a multiple of p = {}", f.microbatches,
                                    f.pp));
      continue;
    }
    r.sections.push_back({fmt::format("{}: p = {}, m = {}{}", pipeline_schedule_kind_name(s), f.pp, f.microbatches,
                                      s == Schedule::kInterleaved1F1B ? fmt::format(", v = {}", x.chunks) : ""),
                          pipeline_bubble(s, x)});
  }
  if (f.pp > 1 && 2 * f.pp > f.microbatches) {
    r.findings.push_back({"pp-microbatches", Severity::kWarning,
                          "p > m/2: keep p <= m/2 for a 1F1B bubble under 33% (seeds/000)"});
  }
  return r;
}

struct QuantFlags {
  std::string from = "bf16", to = "int4", params;
  double group = 0, scale_bytes = 2;
};

Report quant_report(const QuantFlags& f) {
  Report r{.command = "quant"};
  r.inputs = {{"from", f.from}, {"to", f.to}, {"group", f.group}};
  Estimates items{quantisation_ratio(f.from, f.to, f.group, f.scale_bytes)};
  if (!f.params.empty()) {
    const double params = parse_count(f.params, "--params");
    items.push_back(weight_memory(params, precision_bytes(f.from, "--from"), 1));
    items.back().name = "weight_bytes_before";
    Estimate after = weight_memory(params, precision_bytes(f.from, "--from") * items.front().value, 1);
    after.name = "weight_bytes_after";
    items.push_back(after);
  }
  r.sections.push_back({fmt::format("{} -> {}", f.from, f.to), items});
  return r;
}

struct KernelFlags {
  std::string elements = "1M";
  int block_dim = 256, items_per_thread = 4, cache_per_thread = 1;
  std::string dtype = "fp32";
  std::string smem_limit = "48K";
};

Report kernel_report(const KernelFlags& f) {
  Report r{.command = "kernel"};
  KernelInput in{.elements = parse_count(f.elements, "--elements"), .block_dim = f.block_dim,
                 .items_per_thread = f.items_per_thread, .cache_per_thread = f.cache_per_thread,
                 .dtype_bytes = precision_bytes(f.dtype, "--dtype"), .smem_limit = parse_bytes(f.smem_limit, "--smem-limit")};
  r.inputs = {{"elements", in.elements}, {"block_dim", in.block_dim}, {"items_per_thread", in.items_per_thread}};
  r.sections.push_back({"launch arithmetic", kernel_launch(in)});
  return r;
}

}  // namespace

Command add_volume_command(CLI::App& parent) {
  auto f = std::make_shared<VolumeFlags>();
  CLI::App* app = parent.add_subcommand("volume", "bytes each rank sends per iteration: DP/ZeRO, TP, PP, MoE, ring");
  add_model_flags(*app, f->model);
  add_layout_flags(*app, f->layout);
  add_precision_flags(*app, f->precision);
  app->add_option("--bytes", f->bytes, "a message size for the ring reduce-scatter/allgather/allreduce volumes");
  app->add_option("--ranks", f->ranks, "ranks for --bytes");
  app->add_option("--experts", f->experts, "MoE experts (E)");
  app->add_option("--top-k", f->top_k, "experts per token (k)")->capture_default_str();
  app->add_option("--tokens", f->tokens, "tokens on this rank (T; default micro-batch x seq)");
  app->add_option("--ep", f->ep, "expert-parallel ranks (default E)");
  app->add_option("--capacity-factor", f->capacity_factor,
                  "MoE capacity factor cf: each expert keeps at most ceil(cf T k / E) copies (0: dropless)")
      ->capture_default_str();
  return {app, [f] { return volume_report(*f); }};
}

Command add_memory_command(CLI::App& parent) {
  auto f = std::make_shared<MemoryFlags>();
  CLI::App* app = parent.add_subcommand("memory", "memory per device: weights, gradients, optimizer, activations");
  add_model_flags(*app, f->model);
  add_layout_flags(*app, f->layout);
  add_precision_flags(*app, f->precision);
  app->add_option("--device-memory", f->device_memory, "memory per device")->capture_default_str();
  app->add_option("--grad-dtype", f->grad_dtype,
                  "gradient storage precision (default: --dtype's). fp32 with --dtype bf16: gradients accumulated and "
                  "reduced in fp32 beside 16-bit weights (Megatron's main_grad; braid-train --zero 1|2 --precision "
                  "bf16)");
  return {app, [f] { return memory_report(*f); }};
}

Command add_kv_command(CLI::App& parent) {
  auto f = std::make_shared<KvFlags>();
  f->model.model = "llama-70b";
  CLI::App* app = parent.add_subcommand("kv", "KV cache: per token, total, paged blocks and waste, prefix, chunks");
  add_model_flags(*app, f->model);
  app->add_option("--head-dim", f->head_dim, "head dimension (default hidden / heads)");
  app->add_option("--kv-dtype", f->kv_dtype, "cache precision (bf16, fp16, fp8, int8)")->capture_default_str();
  app->add_option("--tokens", f->tokens, "tokens per sequence (default the model's seq)");
  app->add_option("--sequences,--batch", f->sequences, "concurrent sequences")->capture_default_str();
  app->add_option("--block-size", f->block_size, "paged-attention block size (0: not paged)")->capture_default_str();
  app->add_option("--prefix", f->prefix, "shared prefix tokens (P)")->capture_default_str();
  app->add_option("--requests", f->requests, "requests sharing the prefix (N)")->capture_default_str();
  app->add_option("--chunk", f->chunk, "chunked-prefill chunk size (0: none)")->capture_default_str();
  app->add_option("--tp", f->tp, "tensor-parallel ranks the KV heads are split over")->capture_default_str();
  app->add_option("--prefill-tp", f->prefill_tp,
                  "prefill/decode disaggregation: TP of the prefill ranks (with --decode-tp; the transfer per request)");
  app->add_option("--decode-tp", f->decode_tp, "prefill/decode disaggregation: TP of the decode ranks (with --prefill-tp)");
  return {app, [f] { return kv_report(*f); }};
}

Command add_bubble_command(CLI::App& parent) {
  auto f = std::make_shared<BubbleFlags>();
  CLI::App* app = parent.add_subcommand("bubble", "pipeline bubble of GPipe, 1F1B, interleaved and ZB-H1");
  app->add_option("--pp,-p", f->pp, "pipeline stages (p)")->capture_default_str();
  app->add_option("--microbatches,-m", f->microbatches, "micro-batches (m)")->capture_default_str();
  app->add_option("--chunks,-v", f->chunks, "model chunks per stage (interleaved)")->capture_default_str();
  app->add_option("--schedule", f->schedule, "all, or a list of gpipe, 1f1b, interleaved (v from -v) or interleaved:V, zb1 (alias zb-h1)")->capture_default_str();
  app->add_option("--forward", f->forward, "ZB-H1: forward time F")->capture_default_str();
  app->add_option("--backward-input", f->backward_input, "ZB-H1: input-gradient time B")->capture_default_str();
  app->add_option("--backward-weight", f->backward_weight, "ZB-H1: weight-gradient time W")->capture_default_str();
  return {app, [f] { return bubble_report(*f); }};
}

Command add_quant_command(CLI::App& parent) {
  auto f = std::make_shared<QuantFlags>();
  CLI::App* app = parent.add_subcommand("quant", "quantisation ratio between precisions (BF16 -> INT4 = 1/4)");
  app->add_option("--from", f->from, "precision before")->capture_default_str();
  app->add_option("--to", f->to, "precision after")->capture_default_str();
  app->add_option("--group", f->group, "elements per scale (0: no scales)")->capture_default_str();
  app->add_option("--scale-bytes", f->scale_bytes, "bytes per scale")->capture_default_str();
  app->add_option("--params", f->params, "parameter count, to show the weight bytes before and after");
  return {app, [f] { return quant_report(*f); }};
}

Command add_kernel_command(CLI::App& parent) {
  auto f = std::make_shared<KernelFlags>();
  CLI::App* app = parent.add_subcommand("kernel", "CUDA launch arithmetic: reduction rounds, shared memory, grid");
  app->add_option("--elements,-n", f->elements, "elements N (1M, 4096)")->capture_default_str();
  app->add_option("--block-dim", f->block_dim, "threads per block")->capture_default_str();
  app->add_option("--items-per-thread", f->items_per_thread, "elements per thread")->capture_default_str();
  app->add_option("--cache-per-thread", f->cache_per_thread, "shared-memory elements per thread")->capture_default_str();
  app->add_option("--dtype", f->dtype, "element type")->capture_default_str();
  app->add_option("--smem-limit", f->smem_limit, "shared memory per block")->capture_default_str();
  return {app, [f] { return kernel_report(*f); }};
}

}  // namespace braid::plan::cli
