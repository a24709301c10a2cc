// braid-bench: the nccl-tests of braid. Run it under braid-run, e.g.
//   braid-run -n 4 braid-bench allreduce -b 8 -e 256M -f 4 -c 1
//   braid-run -n 2 braid-bench sendrecv -b 8 -e 256M -f 4 --json sendrecv.json
#include <cstdio>

#include <CLI/CLI.hpp>

#include "allreduce_bench.h"
#include "bench_options.h"
#include "braid/base/error.h"
#include "sendrecv_bench.h"

int main(int argc, char** argv) {
  CLI::App app{"braid-bench: measures braid's communication (nccl-tests style columns).\n"
               "Run under a launcher: braid-run -n 4 braid-bench allreduce -b 8 -e 64M -f 4"};
  app.require_subcommand(1);
  braid::bench::SweepOptions sendrecv_options, allreduce_options;
  CLI::App* sendrecv = app.add_subcommand("sendrecv", "ping-pong latency and bandwidth between ranks 0 and 1");
  braid::bench::add_sweep_flags(*sendrecv, sendrecv_options, false);
  CLI::App* allreduce = app.add_subcommand("allreduce", "allreduce time, algbw and busbw per message size");
  braid::bench::add_sweep_flags(*allreduce, allreduce_options, true);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "braid-bench: %s\n", e.detail().c_str());
    return 2;
  }
  try {
    // Check options before joining the job, so a typo fails at once on every rank.
    if (allreduce->parsed()) {
      (void)allreduce_options.dtype();
      (void)allreduce_options.op();
    }
    braid::Communicator comm = braid::Communicator::init();
    if (sendrecv->parsed()) return braid::bench::run_sendrecv(comm, sendrecv_options);
    return braid::bench::run_allreduce(comm, allreduce_options);
  } catch (const braid::InvalidArgument& e) {
    std::fprintf(stderr, "braid-bench: %s\n", e.detail().c_str());
    return 2;
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "braid-bench: %s\n", e.what());
    return 1;
  }
}
