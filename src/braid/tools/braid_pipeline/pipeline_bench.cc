#include "pipeline_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/parallel/pipeline_runtime.h"
#include "braid/parallel/pipeline_simulator.h"
#include "braid/trace/trace_recorder.h"

namespace braid::tools {
namespace {

// Per rank and step: compute time and step time; per rank: sums and counts of the measured
// action durations by kind (F, B, I, W), to simulate with measured costs.
constexpr std::size_t kKinds = 4;

struct RankMeasurement {
  std::vector<double> busy;  // per measured step, seconds
  std::vector<double> wall;
  std::array<double, kKinds> action_sum{};
  std::array<double, kKinds> action_count{};

  std::vector<double> pack() const {
    std::vector<double> out(busy);
    out.insert(out.end(), wall.begin(), wall.end());
    out.insert(out.end(), action_sum.begin(), action_sum.end());
    out.insert(out.end(), action_count.begin(), action_count.end());
    return out;
  }
};

int kind_index(char first) {
  switch (first) {
    case 'F': return 0;
    case 'B': return 1;
    case 'I': return 2;
    case 'W': return 3;
    default: return -1;
  }
}

// Reads the compute spans of the measured steps off the trace.
RankMeasurement measure(const trace::TraceData& data, const std::vector<double>& walls, int warmup) {
  RankMeasurement m;
  m.wall.assign(walls.begin() + warmup, walls.end());
  m.busy.assign(m.wall.size(), 0.0);
  for (const trace::ComputeSpan& span : data.compute) {
    // The step a span belongs to: the last boundary at or before its start.
    auto after = std::upper_bound(data.steps.begin(), data.steps.end(), span.start_ns,
                                  [](std::int64_t t, const trace::StepBoundary& b) { return t < b.start_ns; });
    const int step = after == data.steps.begin() ? -1 : std::prev(after)->step;
    if (step < warmup) continue;
    const double seconds = static_cast<double>(span.end_ns - span.start_ns) * 1e-9;
    m.busy[static_cast<std::size_t>(step - warmup)] += seconds;
    if (int k = kind_index(span.name.empty() ? '?' : span.name[0]); k >= 0) {
      m.action_sum[static_cast<std::size_t>(k)] += seconds;
      m.action_count[static_cast<std::size_t>(k)] += 1;
    }
  }
  return m;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

struct Measured {
  double bubble = 0;            // median over steps
  double step_ms = 0;           // median over steps
  parallel::ActionCosts costs;  // mean measured action times, per stage (x v), in ms
};

Measured summarise(const std::vector<double>& gathered, int ranks, int steps, const parallel::ScheduleSpec& spec) {
  const std::size_t stride = static_cast<std::size_t>(2 * steps) + 2 * kKinds;
  std::vector<double> bubbles, makespans;
  for (int s = 0; s < steps; ++s) {
    double busy = 0, makespan = 0;
    for (int r = 0; r < ranks; ++r) {
      const double* rank = gathered.data() + static_cast<std::size_t>(r) * stride;
      busy += rank[s];
      makespan = std::max(makespan, rank[steps + s]);
    }
    bubbles.push_back(makespan > 0 ? 1 - busy / (ranks * makespan) : 0);
    makespans.push_back(makespan);
  }
  std::array<double, kKinds> sum{}, count{};
  for (int r = 0; r < ranks; ++r) {
    const double* kinds = gathered.data() + static_cast<std::size_t>(r) * stride + 2 * static_cast<std::size_t>(steps);
    for (std::size_t k = 0; k < kKinds; ++k) sum[k] += kinds[k], count[k] += kinds[kKinds + k];
  }
  auto mean_ms = [&](std::size_t k) { return count[k] > 0 ? sum[k] / count[k] * 1e3 * spec.chunks : 0.0; };
  Measured m{median(bubbles), median(makespans) * 1e3, {}};
  m.costs.forward = mean_ms(0);
  if (spec.kind == parallel::ScheduleKind::kZeroBubbleH1) {
    m.costs.backward_input = mean_ms(2);
    m.costs.backward_weight = mean_ms(3);
  } else {
    m.costs.backward_input = mean_ms(1);  // only B = I + W matters without the split
    m.costs.backward_weight = 0;
  }
  return m;
}

}  // namespace

void check_pipeline_bench_options(const PipelineBenchOptions& o) {
  auto bad = [](const std::string& detail) { throw InvalidArgument({}, detail); };
  if (o.schedules.empty()) bad("--schedules: give at least one schedule");
  for (const std::string& s : o.schedules) parallel::parse_schedule_kind(s, "--schedules");
  if (o.microbatches < 1) bad(fmt::format("--microbatches must be >= 1, got {}", o.microbatches));
  for (auto [name, value] : {std::pair{"--forward-ms", o.costs.forward_ms},
                             {"--backward-input-ms", o.costs.backward_input_ms},
                             {"--backward-weight-ms", o.costs.backward_weight_ms},
                             {"--p2p-ms", o.p2p_ms}}) {
    if (!(value >= 0 && value <= 60000)) bad(fmt::format("{} must be in 0..60000, got {}", name, value));
  }
  if (o.costs.activation_elements < 1 || o.costs.activation_elements > (std::int64_t{1} << 28)) {
    bad(fmt::format("--activation-elements must be in 1..2^28, got {}", o.costs.activation_elements));
  }
  if (o.steps < 1) bad(fmt::format("--steps must be >= 1, got {}", o.steps));
  if (o.warmup < 0) bad(fmt::format("--warmup must be >= 0, got {}", o.warmup));
}

std::string run_pipeline_bench(Communicator& comm, const PipelineBenchOptions& options) {
  check_pipeline_bench_options(options);
  const int p = comm.size();
  // Every rank calibrates at once (as they will compute at once) and all use the fastest
  // rate seen: the cores are alike, and a rank whose calibration another process interrupted
  // would otherwise size its actions short.
  comm.barrier();
  const double own_rate = calibrate_work_rate();
  double rate = 0;
  allreduce(comm, &own_rate, &rate, 1, DType::kF64, ReduceOp::kMax);
  const parallel::ActionCosts nominal{options.costs.forward_ms, options.costs.backward_input_ms,
                                      options.costs.backward_weight_ms, options.p2p_ms};
  std::string out = fmt::format(
      "braid-pipeline run: p={} m={} F={} ms I={} ms W={} ms (per stage, {} work), activation {} KiB, P2P {} ms in "
      "the simulator; {} measured steps (median) after {} warm-up\n",
      p, options.microbatches, nominal.forward, nominal.backward_input, nominal.backward_weight,
      options.costs.timed ? "timed" : "fixed", options.costs.activation_elements * 4 / 1024, options.p2p_ms,
      options.steps, options.warmup);
  out += fmt::format("{:<15} {:>8} {:>10} {:>11} {:>9} {:>9} {:>9} {:>11}\n", "schedule", "theory", "simulated",
                     "sim(meas.)", "measured", "step ms", "sim step", "sim(meas.)");
  for (const std::string& name : options.schedules) {
    const parallel::ParsedKind kind = parallel::parse_schedule_kind(name);
    const parallel::ScheduleSpec spec{kind.kind, p, options.microbatches, kind.chunks};
    try {
      parallel::check_schedule_spec(spec);
    } catch (const InvalidArgument& e) {
      out += fmt::format("{:<15} skipped: {}\n", name, e.detail());
      continue;
    }
    const parallel::Schedule schedule = parallel::make_schedule(spec);
    SyntheticStage stage(options.costs, spec.chunks, rate);
    std::string dir = options.trace_dir.empty() ? "" : options.trace_dir + "/" + parallel::schedule_name(spec);
    for (char& c : dir)
      if (c == ':') c = '-';
    trace::TraceRecorder tracer(trace::TraceOptions{.rank = comm.rank(), .output_dir = dir});
    parallel::PipelineRuntime runtime(comm, schedule, stage, {.trace = &tracer});
    std::vector<double> walls;
    for (int step = 0; step < options.warmup + options.steps; ++step) {
      comm.barrier();
      walls.push_back(runtime.run_step().wall_seconds);
    }
    comm.barrier();
    const std::vector<double> mine = measure(tracer.snapshot(), walls, options.warmup).pack();
    std::vector<double> all(comm.rank() == 0 ? mine.size() * static_cast<std::size_t>(p) : 0);
    gather(comm, mine.data(), all.data(), static_cast<std::int64_t>(mine.size()), DType::kF64, 0);
    if (comm.rank() != 0) continue;
    const Measured measured = summarise(all, p, options.steps, spec);
    const parallel::SimulationResult simulated = parallel::simulate(schedule, nominal);
    parallel::ActionCosts measured_costs = measured.costs;
    measured_costs.p2p = options.p2p_ms;
    const parallel::SimulationResult resimulated = parallel::simulate(schedule, measured_costs);
    out += fmt::format("{:<15} {:>7.2f}% {:>9.2f}% {:>10.2f}% {:>8.2f}% {:>9.2f} {:>9.2f} {:>11.2f}\n", name,
                       100 * parallel::theoretical_bubble_rate(spec, nominal), 100 * simulated.bubble_rate(),
                       100 * resimulated.bubble_rate(), 100 * measured.bubble, measured.step_ms, simulated.makespan,
                       resimulated.makespan);
  }
  if (comm.rank() != 0) return "";
  out +=
      "bubble: 1 - compute / (p x step time). step ms: median measured step; sim step: simulated with the costs\n"
      "asked for; sim(meas.): simulated with the mean F/B/I/W times the trace measured, so that a gap between\n"
      "measured and sim(meas.) is the runtime's own (transfers, wake-ups), not actions taking longer than asked\n";
  return out;
}

}  // namespace braid::tools
