// braid-train across two (emulated) hosts against the computation it replaces, shared by the
// launchers' tests (multinode_test: two braid-runs; mpirun_test: mpirun): a short run's
// arguments, the parameter crc32c braid-train prints, and the reference run, one braid-run of 2
// ranks whose rank r claims "host" host<r> (BRAID_HOST_ID), so the same algorithms run over TCP
// in the same order (same seed, data and algorithms: the crc must be equal bit for bit).
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "launch.h"

namespace braid::testing {

// One rank per host: braid-train's start-up (LibTorch, the data set) is most of its time.
inline const std::vector<std::string> kTwoHostTrainArgs{
    "--model", "mlp", "--steps", "4", "--batch", "64", "--train-samples", "512", "--test-samples", "64", "--threads", "1"};

// The crc32c braid-train prints once every rank holds the same parameters; "" if absent.
inline std::string parameter_crc(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex(R"(final parameters identical on every rank \(crc32c ([0-9a-f]{8})\))"))) {
    return "";
  }
  return m[1];
}

// The reference: braid-train kTwoHostTrainArgs under one braid-run of 2 emulated hosts.
inline LaunchResult run_two_host_train_reference() {
  LaunchOptions one;
  one.ranks = 2;
  one.program = "/bin/sh";
  one.args = {"-c", "BRAID_HOST_ID=host$BRAID_RANK exec \"$0\" \"$@\"", tool_path("braid-train")};
  one.args.insert(one.args.end(), kTwoHostTrainArgs.begin(), kTwoHostTrainArgs.end());
  one.env = {{"BRAID_TIMEOUT", "60"}};
  one.timeout_seconds = 120;
  return launch(one);
}

}  // namespace braid::testing
