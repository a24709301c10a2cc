// braid-bench: the nccl-tests of braid. Run it under a launcher, e.g.
//   braid-run -n 4 braid-bench allreduce -b 8 -e 256M -f 4 -c 1 [--algo ring]
//   braid-run -n 2 braid-bench sendrecv -b 8 -e 256M -f 4 --json sendrecv.json
#include <cstdio>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_options.h"
#include "braid/base/error.h"
#include "collective_bench.h"
#include "sendrecv_bench.h"

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

  std::vector<Subcommand> collectives;
  collectives.reserve(8);
  for (braid::bench::CollectiveSpec spec : braid::bench::collective_specs()) {
    std::string help = spec.name + ": time, algbw, busbw and #wrong per message size";
    collectives.push_back({app.add_subcommand(spec.name, help), std::move(spec), {}});
    Subcommand& s = collectives.back();
    braid::bench::add_sweep_flags(*s.app, s.options, true, s.spec.reduces);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "braid-bench: %s\n", e.detail().c_str());
    return 2;
  }
  try {
    const Subcommand* chosen = nullptr;
    for (const auto& s : collectives) {
      if (s.app->parsed()) chosen = &s;
    }
    // Check options before joining the job, so a typo fails at once on every rank.
    if (chosen != nullptr) {
      (void)chosen->options.dtype();
      (void)chosen->options.op();
    }
    braid::Communicator comm = braid::Communicator::init();
    if (sendrecv->parsed()) return braid::bench::run_sendrecv(comm, sendrecv_options);
    return braid::bench::run_collective_bench(comm, chosen->spec, chosen->options);
  } catch (const braid::InvalidArgument& e) {
    std::fprintf(stderr, "braid-bench: %s\n", e.detail().c_str());
    return 2;
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "braid-bench: %s\n", e.what());
    return 1;
  }
}
