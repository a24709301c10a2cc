// collective and calibrate: the alpha-beta cost model, from presets or fitted to braid-bench.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench_json.h"
#include "braid/base/error.h"
#include "braid/plan/calibration.h"
#include "braid/plan/cost_model.h"
#include "braid/plan/units.h"
#include "commands.h"
#include "plan_flags.h"

namespace braid::plan::cli {

namespace {

// The cost model's formula for a braid-bench algorithm name; names without a formula of their
// own (the tuner's "default", "shm_direct", "chain", ...) are fitted with the ring formula,
// whose 2(n-1) messages and 2(n-1)/n bytes are then only a shape for alpha and beta.
Algorithm model_algorithm(const std::string& bench_name, std::string& note) {
  if (bench_name == "recursive_halving") return Algorithm::kRabenseifner;
  if (bench_name == "binomial") return Algorithm::kTree;
  if (bench_name == "bruck") return Algorithm::kRecursiveDoubling;
  if (bench_name == "pairwise") return Algorithm::kRing;
  for (Algorithm a : all_algorithms()) {
    if (bench_name == algorithm_name(a) && !is_two_level(a)) return a;
  }
  note = fmt::format("'{}' has no formula of its own: fitted with the ring formula's shape", bench_name);
  return Algorithm::kRing;
}

struct CollectiveFlags {
  std::string op = "allreduce";
  std::string bytes = "256M";
  int ranks = 8;
  std::string link = "nvlink";
  std::string alpha, bandwidth, gamma;
  std::string algorithms = "all";
  std::optional<int> ranks_per_node;  // unset: every rank on one node
  std::string inter_link = "ib-ndr";
  std::string calibration;
};

LinkParams link_from(const CollectiveFlags& f) {
  LinkParams link = link_preset(f.link, "--link");
  if (!f.alpha.empty()) link.alpha = parse_time(f.alpha, "--alpha"), link.name = "custom";
  if (!f.bandwidth.empty()) link.bandwidth = parse_bandwidth(f.bandwidth, "--bandwidth"), link.name = "custom";
  if (!f.gamma.empty()) link.gamma = parse_time(f.gamma, "--gamma");  // seconds per byte
  return link;
}

void add_calibrated(const CollectiveFlags& f, Op op, double bytes, Report& r) {
  Estimates items;
  for (const ModelFit& fit : read_model_file(f.calibration, "--calibration")) {
    if (fit.calibration.op != op) continue;
    items.push_back({fmt::format("calibrated_{}", fit.label), fit.calibration.predict(bytes, f.ranks), Unit::kSeconds,
                     "the fitted segment's a(n) alpha + b(n) S beta", f.calibration});
  }
  if (!items.empty()) r.sections.push_back({"from the calibration", items});
}

Report collective_report(const CollectiveFlags& f) {
  const Op op = parse_op(f.op, "--op");
  const double bytes = parse_bytes(f.bytes, "--bytes");
  require_range("--ranks", f.ranks, 1, 1 << 24);
  const LinkParams link = link_from(f);
  std::vector<Algorithm> algorithms;
  if (f.algorithms == "all") {
    algorithms = all_algorithms();
  } else {
    for (const std::string& name : split_list(f.algorithms)) algorithms.push_back(parse_algorithm(name, "--algorithm"));
  }
  Report r{.command = "collective"};
  r.inputs = {{"op", f.op}, {"bytes", bytes}, {"ranks", f.ranks}, {"link", link.name}, {"alpha", link.alpha},
              {"bandwidth", link.bandwidth}, {"gamma", link.gamma}};
  // A flat algorithm over several nodes has inter-node hops on its critical path: it runs at
  // the inter-node link's pace. Only the two-level ones use the intra-node link as well.
  if (f.ranks_per_node) require_range("--ranks-per-node", *f.ranks_per_node, 1, f.ranks, "at most --ranks");
  const int per_node = f.ranks_per_node.value_or(f.ranks);
  const LinkParams inter = link_preset(f.inter_link, "--inter-link");
  const bool spans_nodes = per_node < f.ranks;
  if (spans_nodes) {
    r.notes.push_back(fmt::format("{} ranks over {} per node: flat algorithms run at the inter-node link ({})", f.ranks,
                                  per_node, inter.name));
  }
  Estimates items;
  const Estimate* best = nullptr;
  for (Algorithm a : algorithms) {
    CollectiveInput in{.op = op, .algorithm = a, .bytes = bytes, .ranks = f.ranks,
                       .link = spans_nodes && !is_two_level(a) ? inter : link,
                       .ranks_per_node = per_node, .inter_link = inter};
    std::optional<Estimate> e = collective_time(in);
    if (!e) continue;
    e->name = algorithm_name(a);
    items.push_back(*e);
  }
  for (const Estimate& e : items) {
    if (best == nullptr || e.value < best->value) best = &e;
  }
  if (items.empty()) {
    throw InvalidArgument({.op = "braid-plan"},
                          fmt::format("--algorithm: none of '{}' implements {}", f.algorithms, f.op));
  }
  r.notes.push_back(fmt::format("fastest: {} ({}, algbw {})", best->name, format_seconds(best->value),
                                format_rate(bytes / best->value)));
  r.sections.push_back({fmt::format("{} of {} on {} ranks over {} (alpha {}, {})", f.op, format_bytes(bytes), f.ranks,
                                    link.name, format_seconds(link.alpha), format_rate(link.bandwidth)),
                        items});
  if (!f.calibration.empty()) add_calibrated(f, op, bytes, r);
  return r;
}

struct CalibrateFlags {
  std::vector<std::string> files;
  std::string algorithm = "auto";
  int segments = 3;
  std::string gamma;
  std::string min_bytes, max_bytes;
  bool per_file = false;
  std::string output;
  std::string link = "measured";  // a label for the link the files were measured on
  std::string model;              // evaluate this calibrate -o file instead of fitting
};

struct Group {
  std::string label;
  std::string op, bench_algorithm;
  std::vector<Sample> samples;
};

std::vector<Group> group_runs(const CalibrateFlags& f, bool per_file) {
  const double lo = f.min_bytes.empty() ? 0 : parse_bytes(f.min_bytes, "--min-bytes");
  const double hi = f.max_bytes.empty() ? 1e30 : parse_bytes(f.max_bytes, "--max-bytes");
  std::map<std::string, Group> groups;
  for (const std::string& file : f.files) {
    for (const BenchRun& run : read_bench_json(file)) {
      const std::string key = per_file ? fmt::format("{} {} {}", file, run.op, run.algorithm)
                                       : fmt::format("{} {}", run.op, run.algorithm);
      Group& g = groups[key];
      g.label = per_file ? fmt::format("{} ({} ranks, {})", run.algorithm, run.ranks, file) : run.algorithm;
      g.op = run.op, g.bench_algorithm = run.algorithm;
      for (const Sample& s : run.samples) {
        if (s.bytes >= lo && s.bytes <= hi) g.samples.push_back(s);
      }
    }
  }
  std::vector<Group> out;
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

// The world sizes among `samples`, ascending, each once.
std::vector<int> ranks_of(const std::vector<Sample>& samples) {
  std::vector<int> ranks;
  for (const Sample& s : samples) ranks.push_back(s.ranks);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

// The model's segments and how far its predictions are from `cal.predictions`' measurements.
// One layout for a fit and for a fitted model evaluated on other files, so that a reader of the
// JSON (bench/plan_calibration.sh's verdict) takes both.
Section calibration_section(const Group& g, const Calibration& cal, const std::string& provenance) {
  Estimates items;
  std::string ranges;
  for (std::size_t i = 0; i < cal.segments.size(); ++i) {
    const Fit& s = cal.segments[i];
    const std::string range = fmt::format("{}..{} B", num(s.min_bytes), num(s.max_bytes));
    items.push_back({fmt::format("alpha[{}]", i), s.alpha, Unit::kSeconds, "least squares on relative error", range});
    items.push_back({fmt::format("bandwidth[{}]", i), s.bandwidth(), Unit::kBytesPerSecond, "1 / beta", range});
    ranges += fmt::format("{}[{}]", ranges.empty() ? "" : ", ", range);
  }
  const std::string count = fmt::format("{} samples", cal.predictions.size());
  items.push_back({"rms_relative_error", cal.rms_relative_error, Unit::kRatio, "sqrt(mean(((pred - meas)/meas)^2))",
                   count});
  items.push_back({"max_relative_error", cal.max_relative_error, Unit::kRatio, "max |pred - meas| / meas", count});
  return {fmt::format("{} {} (model: {}; size ranges {}{})", g.op, g.label, algorithm_name(cal.algorithm), ranges,
                      provenance),
          items};
}

void add_prediction_table(const Group& g, const Calibration& cal, Report& r) {
  Table t{.heading = fmt::format("{} {}: predicted vs measured", g.op, g.label),
          .columns = {"size", "ranks", "measured(us)", "predicted(us)", "error(%)"}};
  for (const Prediction& p : cal.predictions) {
    t.rows.push_back({num(p.sample.bytes), num(p.sample.ranks), fmt::format("{:.1f}", p.sample.seconds * 1e6),
                      fmt::format("{:.1f}", p.predicted * 1e6), fmt::format("{:+.1f}", 100 * p.relative_error)});
    t.json_rows.push_back({{"size", p.sample.bytes}, {"ranks", p.sample.ranks}, {"measured_seconds", p.sample.seconds},
                           {"predicted_seconds", p.predicted}, {"relative_error", p.relative_error}});
  }
  r.tables.push_back(std::move(t));
}

Report fit_report(const CalibrateFlags& f) {
  Report r{.command = "calibrate"};
  r.inputs = {{"files", f.files}, {"segments", f.segments}, {"link", f.link}};
  const double gamma = f.gamma.empty() ? 0 : parse_time(f.gamma, "--gamma");
  std::vector<ModelFit> fits;
  for (const Group& g : group_runs(f, f.per_file)) {
    std::string note;
    const Algorithm algo = f.algorithm == "auto" ? model_algorithm(g.bench_algorithm, note)
                                                 : parse_algorithm(f.algorithm, "--algorithm");
    // Once per algorithm, not per file of it.
    if (!note.empty() && std::find(r.notes.begin(), r.notes.end(), note) == r.notes.end()) r.notes.push_back(note);
    const Calibration cal = fit_segments(g.samples, parse_op(g.op, "benchmark"), algo, f.segments, gamma);
    r.sections.push_back(calibration_section(g, cal, ""));
    add_prediction_table(g, cal, r);
    fits.push_back({g.label, g.bench_algorithm, ranks_of(g.samples), f.link, cal});
  }
  if (!f.output.empty()) {
    write_model_file(f.output, fits, "-o");
    r.notes.push_back(fmt::format("wrote {} (use it with braid-plan collective --calibration, or calibrate --model)",
                                  f.output));
  }
  return r;
}

// The fit of `model` that predicts group `g` (one run of one file): the same op and braid-bench
// algorithm and, where several fits have those (a --per-file model of several world sizes), the
// one fitted on g's world size. A single fit also predicts world sizes it never saw (the formula
// carries its n-dependence), which the caller notes.
const ModelFit& matching_fit(const std::vector<ModelFit>& fits, const Group& g, const std::string& model) {
  const std::vector<int> ranks = ranks_of(g.samples);
  std::vector<const ModelFit*> same_algorithm, same_ranks;
  std::string available;
  for (const ModelFit& fit : fits) {
    available += fmt::format("{}{} '{}'", available.empty() ? "" : ", ", op_kind_name(fit.calibration.op), fit.bench_algorithm);
    if (!fit.ranks.empty()) available += fmt::format(" on {} ranks", fmt::join(fit.ranks, ","));
    if (fit.calibration.op != find_op_kind(g.op) || fit.bench_algorithm != g.bench_algorithm) continue;
    same_algorithm.push_back(&fit);
    if (std::includes(fit.ranks.begin(), fit.ranks.end(), ranks.begin(), ranks.end())) same_ranks.push_back(&fit);
  }
  if (same_algorithm.empty()) {
    throw InvalidArgument({.op = "braid-plan"},
                          fmt::format("--model: '{}' has no fit for {} '{}' to predict {}; it has {}", model, g.op,
                                      g.bench_algorithm, g.label, available.empty() ? "none" : available));
  }
  if (same_algorithm.size() == 1) return *same_algorithm.front();
  if (same_ranks.size() == 1) return *same_ranks.front();
  throw InvalidArgument({.op = "braid-plan"},
                        fmt::format("--model: '{}' has {} fits for {} '{}', {} of them on {} ranks as measured in {}; "
                                    "evaluate with a model of one fit per world size",
                                    model, same_algorithm.size(), g.op, g.bench_algorithm, same_ranks.size(),
                                    fmt::join(ranks, ","), g.label));
}

Report evaluation_report(const CalibrateFlags& f) {
  Report r{.command = "calibrate"};
  r.inputs = {{"files", f.files}, {"model", f.model}};
  const std::vector<ModelFit> fits = read_model_file(f.model, "--model");
  for (const Group& g : group_runs(f, true)) {
    if (g.samples.empty()) {
      throw InvalidArgument({.op = "braid-plan"},
                            fmt::format("--min-bytes/--max-bytes: no size of {} is left to evaluate", g.label));
    }
    const ModelFit& fit = matching_fit(fits, g, f.model);
    const std::vector<int> ranks = ranks_of(g.samples);
    if (!fit.ranks.empty() && !std::includes(fit.ranks.begin(), fit.ranks.end(), ranks.begin(), ranks.end())) {
      r.notes.push_back(fmt::format("{}: a fit on {} ranks predicts {} ranks through the {} formula", g.label,
                                    fmt::join(fit.ranks, ","), fmt::join(ranks, ","),
                                    algorithm_name(fit.calibration.algorithm)));
    }
    const Calibration cal = evaluate(fit.calibration, g.samples);
    r.sections.push_back(calibration_section(g, cal, fmt::format("; fitted as '{}' in {}", fit.label, f.model)));
    add_prediction_table(g, cal, r);
  }
  return r;
}

Report calibrate_report(const CalibrateFlags& f) { return f.model.empty() ? fit_report(f) : evaluation_report(f); }

}  // namespace

Command add_collective_command(CLI::App& parent) {
  auto f = std::make_shared<CollectiveFlags>();
  CLI::App* app = parent.add_subcommand("collective", "alpha-beta-gamma time of a collective per algorithm and link");
  app->add_option("--op", f->op, "allreduce, reduce_scatter, allgather, broadcast, alltoall or send/recv (aliases: docs/planner.md)")
      ->capture_default_str();
  app->add_option("--bytes,-s", f->bytes, "buffer size (256M, 1GB)")->capture_default_str();
  app->add_option("--ranks,-n", f->ranks, "ranks")->capture_default_str();
  app->add_option("--link", f->link, "link preset (nvlink, nvlink-a100, pcie4, pcie5, ib-hdr, ib-ndr, roce, eth-100g, "
                                     "eth-25g, eth-10g)")
      ->capture_default_str();
  app->add_option("--alpha", f->alpha, "latency per message, overriding the preset (5us)");
  app->add_option("--bandwidth", f->bandwidth, "bandwidth per direction, overriding the preset (25GB/s, 400Gbps)");
  app->add_option("--gamma", f->gamma, "reduction time per byte (e.g. 0.1ns)");
  app->add_option("--algorithm", f->algorithms, "all, or a list of ring, tree, recursive_doubling, rabenseifner, "
                                                "hierarchical, host_striped")
      ->capture_default_str();
  app->add_option("--ranks-per-node", f->ranks_per_node, "hierarchical, host_striped: ranks per node (default all)");
  app->add_option("--inter-link", f->inter_link, "hierarchical, host_striped: link between nodes")->capture_default_str();
  app->add_option("--calibration", f->calibration, "a braid-plan calibrate -o file: add its prediction");
  return {app, [f] { return collective_report(*f); }};
}

Command add_calibrate_command(CLI::App& parent) {
  auto f = std::make_shared<CalibrateFlags>();
  CLI::App* app = parent.add_subcommand(
      "calibrate", "fit alpha and beta to braid-bench --json files by least squares, and report the fit's error; "
                   "with --model, how well an earlier fit predicts these files");
  app->add_option("files", f->files, "braid-bench --json output files")->required();
  CLI::Option* algorithm =
      app->add_option("--algorithm", f->algorithm, "formula to fit: auto (from the file), ring, tree, "
                                                   "recursive_doubling, rabenseifner")
          ->capture_default_str();
  CLI::Option* segments =
      app->add_option("--segments", f->segments, "at most this many size ranges, one fit each (1..8)")
          ->capture_default_str();
  CLI::Option* gamma = app->add_option("--gamma", f->gamma, "fixed reduction time per byte (default 0: folded into beta)");
  app->add_option("--min-bytes", f->min_bytes, "ignore smaller sizes");
  app->add_option("--max-bytes", f->max_bytes, "ignore larger sizes");
  CLI::Option* per_file = app->add_flag("--per-file", f->per_file, "fit every file on its own instead of all files of an algorithm together");
  CLI::Option* output = app->add_option("-o,--output", f->output, "write the fitted model as JSON");
  CLI::Option* link = app->add_option("--link", f->link, "name of the link the files were measured on (kept in -o's file)")
      ->capture_default_str();
  app->add_option("--model", f->model, "evaluate this fitted model (a calibrate -o file) on the files instead of "
                                       "fitting: per size measured vs predicted, every file on its own")
      ->excludes(algorithm)
      ->excludes(segments)
      ->excludes(gamma)
      ->excludes(per_file)
      ->excludes(output)
      ->excludes(link);
  return {app, [f] { return calibrate_report(*f); }};
}

}  // namespace braid::plan::cli
