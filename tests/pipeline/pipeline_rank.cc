// braid-pipeline-rank SCENARIO ARGS...: the rank program of tests/pipeline.
//   train SCHEDULE MICROBATCHES STEPS [PIPELINE_SIZE]
//                                       pipeline-parallel training of the MLP (mlp_model.h) on
//                                       pipelines of PIPELINE_SIZE ranks (default: all, else
//                                       groups from Communicator::split); every rank compares
//                                       its layers' gradients and parameters with a
//                                       single-process run.
//   shape-mismatch SCHEDULE             stage 1 declares an input width stage 0 does not
//                                       produce: the runtime must refuse before any data moves.
//   wrong-output SCHEDULE STAGE MB      that stage's forward of micro-batch MB returns a tensor
//                                       of another shape than it declared: the runtime names it.
//   wrong-size                          a schedule with one stage more than the group's ranks.
// Prints "PASS <scenario>" per rank on success, "FAIL ..." or "ERROR <message>" otherwise.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "braid/parallel/pipeline_runtime.h"
#include "braid/trace/trace_recorder.h"
#include "mlp_model.h"

namespace {

using namespace braid;
using namespace braid::testing;

// Pipeline and reference do the same float operations in the same order (each layer's
// gradient accumulates micro-batches in ascending order under every schedule), so they are
// expected to agree bitwise; the bound leaves room only for a compiler contracting a
// multiply-add differently in two inlined copies (~1 ulp, ~1e-7, per operation over a few
// steps of O(1) values), and is still orders of magnitude below what any misrouted
// micro-batch or missing gradient would produce (>= 1e-3 here).
constexpr float kTolerance = 1e-6f;

float max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::fabs(a[k] - b[k]));
  return worst;
}

std::size_t compute_actions(const parallel::Schedule& schedule, int stage) {
  const auto& list = schedule.stages[static_cast<std::size_t>(stage)];
  return static_cast<std::size_t>(
      std::count_if(list.begin(), list.end(), [](const parallel::Action& a) { return parallel::is_compute(a.type); }));
}

int train(Communicator& world, const std::string& kind, int microbatches, int steps, int pipeline_size) {
  // Pipelines of pipeline_size consecutive ranks (what data parallelism x pipeline looks like:
  // each group is one replica's pipeline); the whole world by default.
  std::optional<Communicator> group = world.split(world.rank() / pipeline_size, world.rank());
  Communicator& comm = *group;
  const int rank = comm.rank();
  const parallel::ParsedKind parsed = parallel::parse_schedule_kind(kind);
  const parallel::Schedule schedule = parallel::make_schedule({parsed.kind, comm.size(), microbatches, parsed.chunks});
  MlpConfig config;
  config.microbatches = microbatches;
  std::vector<DenseLayer> model = make_mlp(config);
  const parallel::LayerPartition partition = parallel::even_layer_partition(config.layers, comm.size(), parsed.chunks);
  MlpStage stage(config, model, partition, rank);
  trace::TraceRecorder tracer(trace::TraceOptions{.rank = rank});
  parallel::PipelineRuntime runtime(comm, schedule, stage, {.trace = &tracer});

  std::vector<std::vector<float>> reference_gradients;
  std::vector<DenseLayer> reference = make_mlp(config);
  reference_train(config, reference, steps, reference_gradients);

  float worst = 0;
  for (int step = 0; step < steps; ++step) {
    stage.set_step(step);
    runtime.run_step();
    for (int chunk = 0; chunk < parsed.chunks; ++chunk) {
      const parallel::LayerRange& layers = partition.range(rank, chunk);
      if (step == steps - 1) {
        for (int l = layers.begin; l < layers.end; ++l) {
          const auto i = static_cast<std::size_t>(l);
          worst = std::max(worst, max_difference(model[i].grad_weight, reference_gradients[2 * i]));
          worst = std::max(worst, max_difference(model[i].grad_bias, reference_gradients[2 * i + 1]));
        }
      }
      sgd_step(model, layers.begin, layers.end, config.learning_rate);
    }
  }
  for (int chunk = 0; chunk < parsed.chunks; ++chunk) {
    for (int l = partition.range(rank, chunk).begin; l < partition.range(rank, chunk).end; ++l) {
      const auto i = static_cast<std::size_t>(l);
      worst = std::max(worst, max_difference(model[i].weight, reference[i].weight));
      worst = std::max(worst, max_difference(model[i].bias, reference[i].bias));
    }
  }
  const std::size_t spans = tracer.snapshot().compute.size();
  const std::size_t expected_spans = static_cast<std::size_t>(steps) * compute_actions(schedule, rank);
  if (worst > kTolerance || spans != expected_spans) {
    std::printf("[rank %d] FAIL train %s: max difference %.3g (tolerance %.1g), %zu traced spans (expected %zu)\n",
                rank, kind.c_str(), static_cast<double>(worst), static_cast<double>(kTolerance), spans, expected_spans);
    return 1;
  }
  std::printf("[rank %d] PASS train %s max difference %.3g\n", rank, kind.c_str(), static_cast<double>(worst));
  return 0;
}

int shape_mismatch(Communicator& comm, const std::string& kind) {
  const parallel::ParsedKind parsed = parallel::parse_schedule_kind(kind);
  MlpConfig config;
  config.microbatches = 4 * comm.size();
  std::vector<DenseLayer> model = make_mlp(config);
  MlpStage stage(config, model, parallel::even_layer_partition(config.layers, comm.size(), parsed.chunks), comm.rank());
  if (comm.rank() == 1) stage.declare_wrong_input_width(config.hidden_width + 1);
  parallel::PipelineRuntime runtime(
      comm, parallel::make_schedule({parsed.kind, comm.size(), config.microbatches, parsed.chunks}), stage);
  runtime.run_step();  // reached only by ranks the mismatch does not concern; they are stopped by braid-run
  std::printf("[rank %d] PASS shape-mismatch (no error seen)\n", comm.rank());
  return 0;
}

// Stage `bad_stage` returns an activation of the wrong shape for micro-batch `bad_mb`: the
// runtime must name the stage and the action instead of sending it, and the job must end (the
// failed stage abandons its posted receives, which stops the others).
int wrong_output(Communicator& comm, const std::string& kind, int bad_stage, int bad_mb) {
  const parallel::ParsedKind parsed = parallel::parse_schedule_kind(kind);
  MlpConfig config;
  config.microbatches = 4 * comm.size();
  std::vector<DenseLayer> model = make_mlp(config);
  MlpStage stage(config, model, parallel::even_layer_partition(config.layers, comm.size(), parsed.chunks), comm.rank());
  if (comm.rank() == bad_stage) stage.truncate_output_of(bad_mb);
  parallel::PipelineRuntime runtime(
      comm, parallel::make_schedule({parsed.kind, comm.size(), config.microbatches, parsed.chunks}), stage);
  runtime.run_step();
  std::printf("[rank %d] PASS wrong-output (no error seen)\n", comm.rank());
  return 0;
}

// A schedule for one more stage than the group has: refused on every rank before any message.
int wrong_size(Communicator& comm) {
  MlpConfig config;
  std::vector<DenseLayer> model = make_mlp(config);
  const std::vector<int> boundaries{1, 2, 3, 4, 5, 6, 7};  // one layer per stage: any size up to 8 stages
  const std::vector<int> cuts(boundaries.begin(), boundaries.begin() + comm.size());
  MlpStage stage(config, model, parallel::layer_partition_from_boundaries(config.layers, comm.size() + 1, 1, cuts),
                 comm.rank());
  parallel::PipelineRuntime runtime(
      comm, parallel::make_schedule({parallel::ScheduleKind::k1F1B, comm.size() + 1, 4, 1}), stage);
  std::printf("[rank %d] PASS wrong-size (no error seen)\n", comm.rank());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  // Both ends of a mismatched boundary must get to print their error: once one rank fails,
  // braid-run sends SIGTERM to the others. The ranks not involved stop on their own when a
  // peer they wait for exits (PeerLost).
  if (scenario == "shape-mismatch" || scenario == "wrong-output") std::signal(SIGTERM, SIG_IGN);
  try {
    braid::Communicator comm = braid::Communicator::init();
    if (scenario == "train" && (argc == 5 || argc == 6)) {
      return train(comm, argv[2], std::atoi(argv[3]), std::atoi(argv[4]), argc == 6 ? std::atoi(argv[5]) : comm.size());
    }
    if (scenario == "wrong-size" && argc == 2) return wrong_size(comm);
    if (scenario == "wrong-output" && argc == 5)
      return wrong_output(comm, argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
    if (scenario == "shape-mismatch" && argc == 3) return shape_mismatch(comm, argv[2]);
    std::fprintf(stderr,
                 "usage: braid-pipeline-rank train SCHEDULE MICROBATCHES STEPS [PIPELINE_SIZE] | "
                 "shape-mismatch SCHEDULE | wrong-output SCHEDULE STAGE MB | wrong-size\n");
    return 2;
  } catch (const braid::Error& e) {
    std::printf("ERROR %s\n", e.what());
    std::fflush(stdout);
    return 3;
  }
}
