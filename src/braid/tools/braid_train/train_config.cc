#include "braid/tools/braid_train/train_config.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "braid/base/error.h"
#include "braid/compress/codec_spec.h"
#include "braid/tools/braid_train/elastic_config.h"
#include "braid/parallel/pipeline_schedule.h"
#include "braid/tools/braid_train/zero_pp.h"

namespace braid::train {
namespace {

std::string pipeline_part(const TrainConfig& c) {
  std::string part = c.pp > 1 ? fmt::format(" pp={} microbatches={} schedule={}", c.pp, c.microbatches, c.schedule) : "";
  if (c.tp > 1) part += fmt::format(" tp={} sp={}", c.tp, c.sequence_parallel);
  if (c.uses_mesh() && c.pp == 1) part += fmt::format(" microbatches={}", c.microbatches);
  return part;
}

std::string gpt_part(const TrainConfig& c) {
  if (!c.is_gpt()) return "";
  GptSize g = c.gpt_size();
  return fmt::format(" context={} width={} layers={} heads={} dropout={} clip={}", g.context, g.width, g.layers,
                     g.heads, c.dropout, c.clip_grad);
}

}  // namespace

std::string TrainConfig::data_dir() const {
  if (!data.empty()) return data;
  return is_gpt() ? "/usr/share/games/fortunes" : "/usr/share/datasets/fashion-mnist";
}

GptSize TrainConfig::gpt_size() const {
  GptSize size = model == "gpt-small" ? GptSize{.width = 512, .layers = 8, .heads = 8, .context = 128} : GptSize{};
  if (width > 0) size.width = width;
  if (layers > 0) size.layers = layers;
  if (heads > 0) size.heads = heads;
  if (context > 0) size.context = context;
  return size;
}

double TrainConfig::learning_rate() const {
  if (lr) return *lr;
  return optimizer == "adam" ? 1e-3 : 0.02;
}

// Everything but the model and the world size: it shapes the trajectory at every world size.
std::string TrainConfig::trajectory_part() const {
  return fmt::format("batch={} accumulate={} optimizer={} lr={} compress={} min-elements={} warmup={} bucket-mb={} "
                     "seed={} train-samples={}{}{}",
                     batch, accumulate, optimizer, learning_rate(), compress, compress_min_elements, warmup_steps,
                     bucket_mb, seed, train_samples, gpt_part(*this), pipeline_part(*this));
}

// fp32 runs keep the fingerprints they had before --precision existed.
std::string TrainConfig::precision_part() const {
  if (precision == "fp32") return "";
  return " precision=" + precision + (precision == "fp16" ? " loss-scale=" + loss_scale : "");
}

std::string TrainConfig::fingerprint(int world) const {
  return fmt::format("model={} world={} {}", model, world, trajectory_part()) +
         (zero > 0 ? fmt::format(" zero={}", zero) : "") + (zero_pp.empty() ? "" : " zero-pp=" + zero_pp) +
         precision_part();
}

std::string TrainConfig::zero_fingerprint(std::int64_t steps_per_epoch) const {
  return fmt::format("model={} {} zero steps-per-epoch={}", model, trajectory_part(), steps_per_epoch) +
         (zero_pp.empty() ? "" : " zero-pp=" + zero_pp) + precision_part();
}

void add_train_flags(CLI::App& app, TrainConfig& c) {
  app.add_option("--model", c.model,
                 "mlp | cnn (Fashion-MNIST) | gpt (character LM on fortunes, ~1.2 M parameters) | gpt-small (~25 M) | "
                 "moe-gpt (gpt with MoE MLPs every other block: --ep, --experts, ...)")
      ->check(CLI::IsMember({"mlp", "cnn", "gpt", "gpt-small", "moe-gpt"}))
      ->capture_default_str();
  app.add_option("--data", c.data, "dataset directory (default: the Debian package's)");
  app.add_option("--epochs", c.epochs, "passes over the training set")->capture_default_str();
  app.add_option("--steps", c.steps, "stop after this many optimizer steps (overrides --epochs)");
  app.add_option("--batch", c.batch, "global batch: samples per optimizer step over all ranks")->capture_default_str();
  app.add_option_function<double>(
      "--lr", [&c](double v) { c.lr = v; }, "learning rate, a finite number > 0 (default: sgd 0.02, adam 0.001)");
  app.add_option("--optimizer", c.optimizer, "sgd (momentum 0.9) | adam")
      ->check(CLI::IsMember({"sgd", "adam"}))
      ->capture_default_str();
  app.add_option("--compress", c.compress, "none|fp16|bf16|int8|sign|topk:R|randomk:R|powersgd:r")
      ->capture_default_str();
  app.add_option("--compress-min-elements", c.compress_min_elements, "tensors smaller than this go uncompressed")
      ->capture_default_str();
  app.add_option("--warmup-steps", c.warmup_steps, "uncompressed steps before compression starts")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--overlap", [&c](const std::string& v) { c.overlap = v == "on"; },
         "on: allreduce buckets during backward; off: after it")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str("on");
  app.add_option("--bucket-mb", c.bucket_mb, "MiB per gradient bucket, or auto")->capture_default_str();
  app.add_option_function<std::string>(
         "--bucket-memory", [&c](const std::string& v) { c.registered_buckets = v == "registered"; },
         "registered: gradient buckets in registered memory, the zero-copy allreduce when every rank is on one "
         "host; ordinary: heap memory (the single-copy or staged allreduce; for A/B runs)")
      ->check(CLI::IsMember({"registered", "ordinary"}))
      ->default_str("registered");
  app.add_option_function<std::string>(
         "--bucket-views", [&c](const std::string& v) { c.bucket_views = v == "on"; },
         "on: each gradient is a view of its place in its bucket (PyTorch's gradient_as_bucket_view), so "
         "backward writes into the buckets and nothing is copied in or out of them (not with --zero); off: "
         "gradients copied into the buckets and back (for A/B runs)")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str("on");
  app.add_option("--accumulate", c.accumulate, "micro-batches per optimizer step (gradient accumulation)")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", c.checkpoint_dir,
                 "write checkpoints here (atomically; rank 0, or with --zero 1|2|3 every rank its shards, which "
                 "resume at any world size and stage; on the mesh one shard per stage and TP rank, --zero 3's at "
                 "any dp size)");
  app.add_option("--checkpoint-every", c.checkpoint_every, "steps between checkpoints (0: each epoch end)");
  app.add_flag("--resume", c.resume, "continue from --checkpoint-dir's checkpoint (an error when there is none)");
  app.add_flag("--resume-if-present", c.resume_if_present,
               "continue from --checkpoint-dir's checkpoint if there is one, else start at step 0");
  app.add_option("--trace", c.trace_dir, "write per-rank Chrome traces here");
  app.add_option("--json", c.json_path, "write the per-epoch figures and the summary here (rank 0)");
  app.add_option("--export", c.export_path, "save the final model here (torch::save, rank 0)");
  app.add_option("--threads", c.threads, "intra-op threads per rank (LibTorch and OpenBLAS)")->capture_default_str();
  app.add_option("--seed", c.seed, "initialisation and shuffling seed")->capture_default_str();
  app.add_option("--train-samples", c.train_samples, "use only the first N training samples (0: all)");
  app.add_option("--test-samples", c.test_samples, "evaluate on the first N test samples (0: all)");
  app.add_option("--context", c.context, "gpt: tokens per sample (default: gpt 64, gpt-small 128)");
  app.add_option("--width", c.width, "gpt: model width (default: gpt 128, gpt-small 512)");
  app.add_option("--layers", c.layers, "gpt: transformer blocks (default: gpt 6, gpt-small 8)");
  app.add_option("--heads", c.heads, "gpt: attention heads (default: gpt 4, gpt-small 8)");
  app.add_option("--dropout", c.dropout, "gpt: dropout probability, in [0, 1)")->capture_default_str();
  app.add_option("--clip-grad", c.clip_grad, "clip the global gradient norm to this (0: no clipping)")
      ->capture_default_str();
  app.add_option("--tp", c.tp, "gpt: tensor-parallel ranks (the world is dp x pp x tp, tp innermost)")
      ->capture_default_str();
  app.add_flag("--sp", c.sequence_parallel, "with --tp: sequence parallelism (LayerNorm, dropout on sequence shards)");
  app.add_flag("--allow-tp-across-hosts", c.allow_tp_across_hosts,
               "accept a TP group whose ranks are on several hosts (every layer's activations cross the network; "
               "warns)");
  app.add_option("--log-interval", c.log_interval, "seconds between progress lines")->capture_default_str();
  app.add_flag("--check-replicas", c.check_replicas, "verify every rank holds identical parameters after each step");
  app.add_flag("--quiet", c.quiet, "no progress lines");
  app.add_flag("--elastic", c.elastic,
               "under braid-run --elastic: when a rank dies the survivors agree on a smaller world, roll back to "
               "their in-memory copy of the last step every survivor completed, keep the global --batch and go on "
               "(DDP only; docs/reliability.md#elastic-recovery)");
  app.add_option("--rejoin-wait", c.rejoin_wait,
                 "with --elastic: seconds a step boundary waits for a newcomer that took a member id but has not "
                 "announced yet (braid-run --max-restarts restarting a rank); 0: never wait, it joins when ready. "
                 "Keep it below BRAID_TIMEOUT (docs/reliability.md#rejoin)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--grow-to", c.grow_to,
                 "with --elastic and --rejoin-wait: step boundaries also wait (up to --rejoin-wait each) for "
                 "newcomers until the job has this many ranks, e.g. a job started small that ranks started by hand "
                 "join (BRAID_ELASTIC_JOIN=new)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_flag("--allow-nonfinite-loss", c.allow_nonfinite_loss,
               "keep training when the loss becomes NaN or infinite (default: stop naming the step)");
  app.add_option("--pp", c.pp, "pipeline stages (the world is pp x data-parallel replicas)")->capture_default_str();
  app.add_option("--microbatches", c.microbatches, "micro-batches per step and pipeline (with --pp or --tp)")
      ->capture_default_str();
  app.add_option("--schedule", c.schedule, "pipeline schedule: gpipe | 1f1b | interleaved:V | zb1 (alias zb-h1)")
      ->capture_default_str();
  app.add_option("--zero", c.zero,
                 "ZeRO stage: 0 (DDP), 1 (optimizer state sharded, gradients reduce-scattered after backward), 2 (as 1, "
                 "each bucket reduce-scattered during backward), 3 (parameters sharded too, each layer gathered for its forward "
                 "and backward; with --tp/--pp/--dropout each pipeline chunk gathered for each micro-batch's forward and backward)")
      ->capture_default_str();
  app.add_option("--max-gathered-units", c.max_gathered_units,
                 "--zero 3: layers gathered at once, prefetches included (1: no prefetch)")
      ->capture_default_str();
  app.add_option("--zero-unit-layers", c.zero_unit_layers,
                 "--zero 3 with --tp/--pp/--dropout (the mesh): 0 gathers each pipeline chunk as one unit; K >= 1 "
                 "cuts every chunk into units of K layers with parameters (1: a transformer block each), gathered "
                 "one by one with the next prefetched inside the chunk under --max-gathered-units (the data-parallel "
                 "trainer's units are one layer each: 0 or 1 there)")
      ->capture_default_str();
  app.add_option("--zero-pp", c.zero_pp,
                 "ZeRO++ with --zero 1|2|3: comma list of qwz (int8 parameter allgather), qgz (int8 gradient "
                 "reduce-scatter), qgz-ef (qgz with error feedback; not --zero 3), hpz (--zero 3: backward gathers "
                 "from a host-local copy; refused on the mesh). On the mesh (--tp, --pp, --dropout) qwz and qgz "
                 "compress the data-parallel group's collectives (--zero 1: not with --tp)");
  app.add_option("--precision", c.precision,
                 "fp32 | bf16 (forward under CPU autocast in bf16, gradients and ZeRO's parameter allgather in bf16 "
                 "on the wire, fp32 master weights) | fp16 (gradients and ZeRO's parameters in fp16 on the wire under "
                 "a dynamic loss scale; compute fp32: LibTorch 1.13 has no fp16 CPU matmul). On the mesh (--tp, --pp, "
                 "--dropout; --zero 0|1|3) bf16 also moves the TP collectives in bf16; pipeline activations stay fp32")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--param-storage", c.param_storage,
                 "with --zero 1|2|3 (data-parallel trainer) or --zero 3 (the mesh): the dtype the full parameters "
                 "(stages 1-2) and the gathered units (stage 3) are stored in. compute: the compute dtype, bf16 under "
                 "--precision bf16 (only the rank's fp32 master shard stays 32-bit), fp32 otherwise (fp16 computes in "
                 "fp32 on CPU; the mesh's --zero 1 keeps fp32); fp32: always fp32 (the 16-bit values held in fp32)")
      ->check(CLI::IsMember({"compute", "fp32"}))
      ->capture_default_str();
  app.add_option("--loss-scale", c.loss_scale,
                 "with --precision fp16: dynamic (start 65536, halve and skip the step on an overflow, double after "
                 "2000 clean steps) or a fixed scale")
      ->capture_default_str();
  app.add_option("--inject-overflow", c.inject_overflow,
                 "testing, with --precision fp16: at this step the last rank's first gradient element becomes inf "
                 "(the step must be skipped on every rank; on the mesh, of every stage, TP rank and replica)");
  add_moe_flags(app, c.moe);
}

namespace {

// The mesh trainer (--pp, --tp, --dropout): the batch splits over world/(pp x tp) replicas and m
// micro-batches; accumulation is the micro-batches' job.
void validate_mesh(const TrainConfig& c, int world) {
  auto bad = [](const std::string& detail) { throw InvalidArgument({.op = "braid-train"}, detail); };
  int replicas = world / (c.pp * c.tp);
  parallel::ParsedKind kind = parallel::parse_schedule_kind(c.schedule, "--schedule");  // names the accepted forms
  if (c.pp > 1) {
    parallel::check_schedule_spec({.kind = kind.kind, .stages = c.pp, .microbatches = c.microbatches, .chunks = kind.chunks});
  }
  if (c.microbatches < 1) bad(fmt::format("--microbatches {}: must be at least 1", c.microbatches));
  if (c.batch % (static_cast<std::int64_t>(replicas) * c.microbatches) != 0) {
    bad(fmt::format("--batch {} is not divisible by {} data-parallel replicas x --microbatches {}", c.batch, replicas,
                    c.microbatches));
  }
  if (c.accumulate != 1) bad("--accumulate with --pp or --tp: the micro-batches (--microbatches) already accumulate");
}

// --tp: only the GPT has tensor-parallel layers; its heads, width and (with --sp) context must
// split evenly. The layers check it too, but here it fails before any rank loads data.
void validate_tensor_parallel(const TrainConfig& c) {
  auto bad = [](const std::string& detail) { throw InvalidArgument({.op = "braid-train --tp"}, detail); };
  GptSize g = c.gpt_size();
  if (c.sequence_parallel && c.tp == 1) bad("--sp needs --tp greater than 1");
  if (c.tp == 1) return;
  if (!c.is_gpt()) bad(fmt::format("--tp {} with --model {}: only gpt and gpt-small have tensor-parallel layers", c.tp, c.model));
  if (g.heads % c.tp != 0) {
    bad(fmt::format("--tp {}: the attention of every block has {} heads, which {} ranks cannot share evenly", c.tp,
                    g.heads, c.tp));
  }
  if (c.sequence_parallel && g.context % c.tp != 0) {
    bad(fmt::format("--sp with --tp {}: the context of {} tokens does not split into {} sequence shards", c.tp,
                    g.context, c.tp));
  }
}

void validate_gpt_size(const TrainConfig& c) {
  auto bad = [](const std::string& detail) { throw InvalidArgument({.op = "braid-train"}, detail); };
  GptSize g = c.gpt_size();
  if (g.context < 2 || g.context > 4096) bad(fmt::format("--context {}: must be in 2..4096", g.context));
  if (g.width < 1 || g.layers < 1 || g.heads < 1) {
    bad(fmt::format("--width {}, --layers {}, --heads {}: each must be at least 1", g.width, g.layers, g.heads));
  }
  if (g.width % g.heads != 0) {
    bad(fmt::format("--width {} is not divisible by --heads {}: every head needs the same width", g.width, g.heads));
  }
  if (!(c.dropout >= 0 && c.dropout < 1)) bad(fmt::format("--dropout {}: must be in [0, 1)", c.dropout));
  if (c.dropout > 0 && !c.is_gpt()) bad("--dropout: only the gpt models have dropout");
  if (!(std::isfinite(c.clip_grad) && c.clip_grad >= 0)) bad(fmt::format("--clip-grad {}: must be a finite number >= 0", c.clip_grad));
}

// --zero: stages 1-3 on the data-parallel trainer, 1 and 3 on the mesh; what they do not
// support yet is refused rather than silently run as DDP.
void validate_zero(const TrainConfig& c) {
  auto bad = [&c](const std::string& detail) {
    throw InvalidArgument({.op = "braid-train --zero"}, fmt::format("--zero {}: {}", c.zero, detail));
  };
  if (c.zero < 0 || c.zero > 3) bad("the stage must be 0, 1, 2 or 3");
  if (c.max_gathered_units < 1) bad(fmt::format("--max-gathered-units {}: must be >= 1", c.max_gathered_units));
  parse_zero_pp(c.zero_pp, c.zero);  // refuses --zero-pp without ZeRO, hpz, qgz-ef on stage 3
  if (c.zero_unit_layers < 0) bad(fmt::format("--zero-unit-layers {}: must be >= 0", c.zero_unit_layers));
  if (c.zero_unit_layers > 0 && c.zero != 3) {
    bad(fmt::format("--zero-unit-layers {}: units are stage 3's (the parameters gathered unit by unit); use --zero 3",
                    c.zero_unit_layers));
  }
  if (c.zero_unit_layers > 1 && !c.uses_mesh()) {
    bad(fmt::format("--zero-unit-layers {}: the data-parallel trainer's units are one layer with parameters each; "
                    "K layers per unit is the mesh's (--tp, --pp, --dropout)",
                    c.zero_unit_layers));
  }
  if (c.zero == 0) return;
  // hpZ keeps a second copy of a unit's shards inside each host for the backward's gather. The
  // mesh's dp group is the outermost axis: with tp and pp inside a host it holds host_ranks / (tp x
  // pp) ranks per host (one, for tp 8 on 8-rank hosts), so the host copy is most or all of the
  // stage's parameters again, and the mesh gathers a chunk per call, without the forward/backward
  // distinction hpZ's copy rides on (mesh_fully_sharded.h).
  if (c.uses_mesh() && parse_zero_pp(c.zero_pp, c.zero).hpz) {
    bad(fmt::format("with --tp, --pp or --dropout (the mesh trainer) and --zero-pp {}: hpz is refused on the mesh: "
                    "its data-parallel group is the outermost axis, so a host holds few of its ranks and the "
                    "host-local copy would hold most of the stage's parameters; drop hpz (qwz, qgz work)",
                    c.zero_pp));
  }
  // ZeroOptimizer's int8 blocks mix each TP rank's pieces with the TP-replicated parameters
  // (LayerNorms, row-parallel biases), so the TP ranks round their copies of one replicated
  // parameter with other block scales and the copies drift apart (stage 3 agrees them over the
  // TP group: mesh_fully_sharded.h average_replicated_shard_gradients; stage 1 does not: its
  // parameters are the dequantised allgather itself, which differs on the TP ranks).
  if (c.uses_mesh() && c.tp > 1 && c.zero == 1 && !c.zero_pp.empty()) {
    bad(fmt::format("with --tp {} and --zero-pp {}: ZeRO++ on the mesh's stage 1 works over --pp and --dropout "
                    "meshes; with --tp the int8 blocks mix each TP rank's pieces with the TP-replicated parameters, "
                    "whose copies would be rounded differently on the TP ranks and drift apart; use --zero 3 (which "
                    "agrees them over the TP group) or drop --zero-pp",
                    c.tp, c.zero_pp));
  }
  if (c.uses_mesh() && c.zero == 2) {
    bad("with --tp, --pp or --dropout (the mesh trainer): its gradients accumulate over the micro-batches and are "
        "reduced once after the last backward, so stage 2 would be stage 1; use --zero 1 (Megatron's distributed "
        "optimizer: the optimizer state of each stage and TP piece sharded over its data-parallel group)");
  }
  if (c.compress != "none") bad(fmt::format("with --compress {}: ZeRO reduce-scatters uncompressed gradients", c.compress));
}

// --precision sets the compute dtype and the wire's: what else would set the wire is refused
// rather than silently overridden.
void validate_precision(const TrainConfig& c) {
  auto bad = [&c](const std::string& detail) {
    throw InvalidArgument({.op = "braid-train --precision"}, fmt::format("--precision {}: {}", c.precision, detail));
  };
  bool fp16 = c.precision == "fp16";
  if (c.loss_scale != "dynamic") {
    char* end = nullptr;
    double scale = std::strtod(c.loss_scale.c_str(), &end);
    if (c.loss_scale.empty() || *end != '\0' || !std::isfinite(scale) || scale < 1) {
      throw InvalidArgument({.op = "braid-train --loss-scale"},
                            fmt::format("--loss-scale '{}': expected dynamic or a finite number >= 1", c.loss_scale));
    }
    if (!fp16) bad("--loss-scale applies to --precision fp16 only (bf16 has fp32's range)");
  }
  if (c.inject_overflow < 0) {
    throw InvalidArgument({.op = "braid-train --inject-overflow"}, fmt::format("--inject-overflow {}: a step >= 1", c.inject_overflow));
  }
  if (c.inject_overflow > 0 && !fp16) bad("--inject-overflow tests the loss scale of --precision fp16");
  if (c.precision == "fp32") return;
  if (!c.zero_pp.empty()) bad(fmt::format("with --zero-pp {}: both set the wire's dtypes; choose one", c.zero_pp));
  if (c.compress != "none") bad(fmt::format("with --compress {}: --precision sets the gradients' wire dtype", c.compress));
}

}  // namespace

void validate(const TrainConfig& c, int world) {
  auto bad = [](const std::string& detail) { throw InvalidArgument({.op = "braid-train"}, detail); };
  if (c.epochs < 1 && c.steps < 1) bad(fmt::format("--epochs {}: must be at least 1 (or give --steps)", c.epochs));
  if (c.steps < 0) bad(fmt::format("--steps {}: must be at least 0", c.steps));
  if (c.batch < 1) bad(fmt::format("--batch {}: must be at least 1", c.batch));
  if (c.accumulate < 1) bad(fmt::format("--accumulate {}: must be at least 1", c.accumulate));
  validate_moe(c, world);  // first: it names what moe-gpt does not combine with
  if (c.pp < 1 || c.tp < 1 || world % (c.pp * c.tp) != 0) {
    bad(fmt::format("--pp {} x --tp {}: each must be at least 1 and their product divide the world size {} (the "
                    "mesh is dp x pp x tp)",
                    c.pp, c.tp, world));
  }
  if (c.elastic) {
    if (std::string why = elastic_refusal(c); !why.empty()) throw InvalidArgument({.op = "braid-train --elastic"}, why);
  } else if (c.rejoin_wait > 0 || c.grow_to > 0) {
    throw InvalidArgument({.op = "braid-train"}, "--rejoin-wait and --grow-to need --elastic (newcomers join elastic jobs)");
  }
  validate_gpt_size(c);
  validate_zero(c);
  validate_precision(c);
  validate_tensor_parallel(c);
  // moe-gpt's mesh: validate_moe; its pipeline (--pp) also splits the batch into micro-batches
  if ((c.uses_mesh() && c.model != "moe-gpt") || (c.model == "moe-gpt" && c.pp > 1)) validate_mesh(c, world);
  if (c.batch % (world * c.accumulate) != 0 && !c.uses_mesh() && c.model != "moe-gpt") {
    bad(fmt::format("--batch {} is not divisible by the world size {} x --accumulate {}: every rank must get the "
                    "same number of samples per micro-batch",
                    c.batch, world, c.accumulate));
  }
  if (c.lr && !(std::isfinite(*c.lr) && *c.lr > 0)) {
    bad(fmt::format("--lr {}: must be a finite number greater than 0", *c.lr));
  }
  if (c.threads < 1 || c.threads > 256) bad(fmt::format("--threads {}: must be in 1..256", c.threads));
  if (c.train_samples < 0 || c.test_samples < 0) bad("--train-samples and --test-samples must be at least 0");
  if (c.checkpoint_every < 0) bad(fmt::format("--checkpoint-every {}: must be at least 0", c.checkpoint_every));
  if (c.resumes() && c.checkpoint_dir.empty()) {
    bad(fmt::format("{} needs --checkpoint-dir", c.resume ? "--resume" : "--resume-if-present"));
  }
  if (c.log_interval <= 0) bad(fmt::format("--log-interval {}: must be positive", c.log_interval));
  compress::parse_codec_spec(c.compress);  // throws InvalidArgument naming the bad spec
}

}  // namespace braid::train
