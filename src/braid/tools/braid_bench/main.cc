// braid-bench: the nccl-tests of braid. Run it under a launcher, e.g.
//   braid-run -n 4 braid-bench allreduce -b 8 -e 256M -f 4 -c 1 [--algo ring]
//   braid-run -n 2 braid-bench sendrecv -b 8 -e 256M -f 4 --json sendrecv.json
//   braid-run -n 4 braid-bench allreduce -b 8 -e 64M -f 4 --plot allreduce.png --tune allreduce.json
//   braid-run -n 4 braid-bench tune -o tuning.json --ops allreduce,allgather -b 8 -e 64M -f 4
//   braid-run -n 2 braid-bench overlap --buckets 1,4,25,auto --compress none,int8
#include <vector>

#include <CLI/CLI.hpp>

#include "algorithm_sweep.h"
#include "bench_options.h"
#include "braid/base/error.h"
#include "braid/tools/common/tool_main.h"
#include "collective_bench.h"
#include "compressed_bench.h"
#include "overlap_bench.h"
#include "braid/compress/codec_spec.h"
#include "sendrecv_bench.h"
#include "tune_bench.h"

namespace {

struct Subcommand {
  CLI::App* app;
  braid::bench::CollectiveSpec spec;
  braid::bench::SweepOptions options;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"braid-bench: measures braid's communication (nccl-tests style columns).\n"
               "Run under a launcher: braid-run -n 4 braid-bench allreduce -b 8 -e 64M -f 4"};
  app.require_subcommand(1);
  braid::bench::SweepOptions sendrecv_options;
  CLI::App* sendrecv = app.add_subcommand("sendrecv", "ping-pong latency and bandwidth between ranks 0 and 1");
  braid::bench::add_sweep_flags(*sendrecv, sendrecv_options, false, false);

  std::vector<braid::bench::CollectiveSpec> specs = braid::bench::collective_specs();
  std::vector<Subcommand> collectives;
  collectives.reserve(specs.size());  // the flags keep pointers into each Subcommand's options
  for (braid::bench::CollectiveSpec& spec : specs) {
    std::string help = spec.name() + ": time, algbw, busbw and #wrong per message size";
    collectives.push_back({app.add_subcommand(spec.name(), help), std::move(spec), {}});
    Subcommand& s = collectives.back();
    for (std::string_view alias : braid::op_kind_aliases(s.spec.op)) s.app->alias(std::string(alias));
    braid::bench::add_sweep_flags(*s.app, s.options, true, s.spec.reduces);
  }
  braid::bench::OverlapOptions overlap_options;
  CLI::App* overlap = app.add_subcommand(
      "overlap", "how much gradient communication GradSync hides behind a synthetic backward pass");
  braid::bench::add_overlap_flags(*overlap, overlap_options);
  braid::bench::TuneOptions tune_options;
  CLI::App* tune = app.add_subcommand(
      "tune", "time every algorithm of several collectives at every size and write a tuning file (BRAID_TUNING_FILE)");
  braid::bench::add_tune_flags(*tune, tune_options);
  return braid::tools::run_tool("braid-bench", app, argc, argv, [&] {
    const Subcommand* chosen = nullptr;
    for (const auto& s : collectives) {
      if (s.app->parsed()) chosen = &s;
    }
    // Check options before joining the job, so a typo fails at once on every rank.
    const bool compares = chosen != nullptr && (!chosen->options.tune_path.empty() || !chosen->options.plot_path.empty());
    const bool compresses = chosen != nullptr && !chosen->options.compress.empty();
    if (compresses) {
      if (compares) throw braid::InvalidArgument({.op = "braid-bench"}, "--compress cannot be combined with --tune or --plot");
      if (chosen->options.dtype_name != "f32") {
        throw braid::InvalidArgument({.op = "braid-bench"}, "--compress compresses f32 gradients only (-d f32)");
      }
      (void)braid::bench::compressed_codecs(chosen->options.compress);
    }
    if (chosen != nullptr) {
      (void)chosen->options.dtype();
      (void)chosen->options.op();
      if (compares) (void)braid::bench::algorithms_to_sweep(chosen->spec.op, chosen->options.algorithm);
    }
    if (overlap->parsed()) braid::bench::check_overlap_options(overlap_options);
    if (tune->parsed()) {
      (void)tune_options.sweep.dtype();
      (void)braid::bench::specs_to_tune(tune_options.ops);
    }
    braid::Communicator comm = braid::Communicator::init();
    if (sendrecv->parsed()) return braid::bench::run_sendrecv(comm, sendrecv_options);
    if (tune->parsed()) return braid::bench::run_tune(comm, tune_options);
    if (overlap->parsed()) return braid::bench::run_overlap_bench(comm, overlap_options);
    if (compresses) return braid::bench::run_compressed_bench(comm, chosen->options);
    if (compares) return braid::bench::run_algorithm_bench(comm, chosen->spec, chosen->options);
    return braid::bench::run_collective_bench(comm, chosen->spec, chosen->options);
  });
}
