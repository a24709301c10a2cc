// collective and calibrate: the alpha-beta cost model, from presets or fitted to braid-bench.
#include <cmath>
#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>

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
    if (bench_name == algorithm_name(a) && a != Algorithm::kHierarchical) return a;
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
  int ranks_per_node = 0;
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
  std::ifstream in(f.calibration);
  if (!in) throw InvalidArgument({.op = "braid-plan"}, fmt::format("--calibration: cannot open '{}'", f.calibration));
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.contains("fits")) {
    throw InvalidArgument({.op = "braid-plan"},
                          fmt::format("--calibration: '{}' is not a braid-plan calibrate -o file", f.calibration));
  }
  Estimates items;
  for (const nlohmann::json& fit : doc["fits"]) {
    if (fit.value("op", std::string()) != op_name(op)) continue;
    Calibration cal{.op = op, .algorithm = parse_algorithm(fit.value("model", std::string("ring")))};
    for (const nlohmann::json& s : fit["segments"]) {
      cal.segments.push_back({s["min_bytes"].get<double>(), s["max_bytes"].get<double>(), s["alpha"].get<double>(),
                              s["beta"].get<double>()});
    }
    items.push_back({fmt::format("calibrated_{}", fit.value("algorithm", std::string("?"))), cal.predict(bytes, f.ranks),
                     Unit::kSeconds, "the fitted segment's a(n) alpha + b(n) S beta", f.calibration});
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
  // the inter-node link's pace. Only the hierarchical one uses the intra-node link as well.
  const int per_node = f.ranks_per_node > 0 ? f.ranks_per_node : f.ranks;
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
                       .link = spans_nodes && a != Algorithm::kHierarchical ? inter : link,
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
};

struct Group {
  std::string label;
  std::string op, bench_algorithm;
  std::vector<Sample> samples;
};

std::vector<Group> group_runs(const CalibrateFlags& f) {
  const double lo = f.min_bytes.empty() ? 0 : parse_bytes(f.min_bytes, "--min-bytes");
  const double hi = f.max_bytes.empty() ? 1e30 : parse_bytes(f.max_bytes, "--max-bytes");
  std::map<std::string, Group> groups;
  for (const std::string& file : f.files) {
    for (const BenchRun& run : read_bench_json(file)) {
      const std::string key = f.per_file ? fmt::format("{} {} {}", file, run.op, run.algorithm)
                                         : fmt::format("{} {}", run.op, run.algorithm);
      Group& g = groups[key];
      g.label = f.per_file ? fmt::format("{} ({} ranks, {})", run.algorithm, run.ranks, file) : run.algorithm;
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

Report calibrate_report(const CalibrateFlags& f) {
  Report r{.command = "calibrate"};
  r.inputs = {{"files", f.files}, {"segments", f.segments}, {"link", f.link}};
  const double gamma = f.gamma.empty() ? 0 : parse_time(f.gamma, "--gamma");
  nlohmann::json fits = nlohmann::json::array();
  for (const Group& g : group_runs(f)) {
    std::string note;
    const Algorithm algo = f.algorithm == "auto" ? model_algorithm(g.bench_algorithm, note)
                                                 : parse_algorithm(f.algorithm, "--algorithm");
    if (!note.empty()) r.notes.push_back(note);
    const Calibration cal = fit_segments(g.samples, parse_op(g.op, "benchmark"), algo, f.segments, gamma);
    Estimates items;
    nlohmann::json segments = nlohmann::json::array();
    for (std::size_t i = 0; i < cal.segments.size(); ++i) {
      const Fit& s = cal.segments[i];
      const std::string range = fmt::format("{}..{} B", num(s.min_bytes), num(s.max_bytes));
      items.push_back({fmt::format("alpha[{}]", i), s.alpha, Unit::kSeconds, "least squares on relative error", range});
      items.push_back({fmt::format("bandwidth[{}]", i), s.bandwidth(), Unit::kBytesPerSecond, "1 / beta", range});
      segments.push_back({{"min_bytes", s.min_bytes}, {"max_bytes", s.max_bytes}, {"alpha", s.alpha}, {"beta", s.beta},
                          {"bandwidth", s.bandwidth()}});
    }
    items.push_back({"rms_relative_error", cal.rms_relative_error, Unit::kRatio, "sqrt(mean(((pred - meas)/meas)^2))",
                     fmt::format("{} samples", cal.predictions.size())});
    items.push_back({"max_relative_error", cal.max_relative_error, Unit::kRatio, "max |pred - meas| / meas",
                     fmt::format("{} samples", cal.predictions.size())});
    std::string ranges;
    for (const Fit& s : cal.segments) ranges += fmt::format("{}[{}..{} B]", ranges.empty() ? "" : ", ", num(s.min_bytes),
                                                            num(s.max_bytes));
    r.sections.push_back({fmt::format("{} {} (model: {}; size ranges {})", g.op, g.label, algorithm_name(algo), ranges),
                          items});
    add_prediction_table(g, cal, r);
    fits.push_back({{"op", g.op}, {"algorithm", g.label}, {"link", f.link}, {"model", algorithm_name(algo)},
                    {"gamma", gamma},
                    {"segments", segments}, {"rms_relative_error", cal.rms_relative_error},
                    {"max_relative_error", cal.max_relative_error}});
  }
  if (!f.output.empty()) {
    std::ofstream out(f.output);
    out << nlohmann::json{{"fits", fits}}.dump(2) << "\n";
    if (!out) throw InvalidArgument({.op = "braid-plan"}, fmt::format("-o: cannot write '{}'", f.output));
    r.notes.push_back(fmt::format("wrote {} (use it with braid-plan collective --calibration)", f.output));
  }
  return r;
}

}  // namespace

Command add_collective_command(CLI::App& parent) {
  auto f = std::make_shared<CollectiveFlags>();
  CLI::App* app = parent.add_subcommand("collective", "alpha-beta-gamma time of a collective per algorithm and link");
  app->add_option("--op", f->op, "allreduce, reduce_scatter, allgather, broadcast, alltoall, sendrecv")
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
                                                "hierarchical")
      ->capture_default_str();
  app->add_option("--ranks-per-node", f->ranks_per_node, "hierarchical: ranks per node (default all)");
  app->add_option("--inter-link", f->inter_link, "hierarchical: link between nodes")->capture_default_str();
  app->add_option("--calibration", f->calibration, "a braid-plan calibrate -o file: add its prediction");
  return {app, [f] { return collective_report(*f); }};
}

Command add_calibrate_command(CLI::App& parent) {
  auto f = std::make_shared<CalibrateFlags>();
  CLI::App* app = parent.add_subcommand(
      "calibrate", "fit alpha and beta to braid-bench --json files by least squares, and report the fit's error");
  app->add_option("files", f->files, "braid-bench --json output files")->required();
  app->add_option("--algorithm", f->algorithm, "formula to fit: auto (from the file), ring, tree, recursive_doubling, "
                                               "rabenseifner")
      ->capture_default_str();
  app->add_option("--segments", f->segments, "at most this many size ranges, one fit each (1..8)")->capture_default_str();
  app->add_option("--gamma", f->gamma, "fixed reduction time per byte (default 0: folded into beta)");
  app->add_option("--min-bytes", f->min_bytes, "ignore smaller sizes");
  app->add_option("--max-bytes", f->max_bytes, "ignore larger sizes");
  app->add_flag("--per-file", f->per_file, "fit every file on its own instead of all files of an algorithm together");
  app->add_option("-o,--output", f->output, "write the fitted model as JSON");
  app->add_option("--link", f->link, "name of the link the files were measured on (kept in -o's file)")
      ->capture_default_str();
  return {app, [f] { return calibrate_report(*f); }};
}

}  // namespace braid::plan::cli
