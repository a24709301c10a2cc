// What the multi-process tests of braid-train share (train_test.cc, train_mesh_test.cc,
// train_zero_test.cc): a per-test directory, launching braid-train through braid-run, reading
// its --json report, comparing loss curves, exported parameters, and the rank program of the
// DDP and ZeroOptimizer scenarios (tests/torch/programs/ddp_scenarios.cc).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"

namespace braid::testing {

class TrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("braid-train-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static LaunchResult train(int ranks, std::vector<std::string> args, double timeout = 240) {
    args.insert(args.end(), {"--quiet", "--test-samples", "200"});
    return launch({.ranks = ranks, .program = tool_path("braid-train"), .args = args,
                   .env = {{"BRAID_TIMEOUT", "60"}}, .timeout_seconds = timeout});
  }
  static void expect_success(const LaunchResult& r) {
    ASSERT_FALSE(r.timed_out) << r.output;
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  nlohmann::json json(const std::string& name) const {
    std::ifstream in(path(name));
    return nlohmann::json::parse(in);
  }

  std::vector<double> step_losses(const std::string& name) const { return json(name)["step_losses"].get<std::vector<double>>(); }
  static void expect_same_curve(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                                const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]) / want[i]);
    EXPECT_LT(worst, rtol) << what;
    std::printf("%s: worst relative difference of the loss curve %.3g\n", what.c_str(), worst);
  }

  std::string digest(const std::string& name) const { return json(name)["parameter_digest"].get<std::string>(); }
  std::int64_t state(const std::string& name, const std::string& part) const {
    return json(name)["model_state"][part].get<std::int64_t>();
  }
  // braid-plan memory's model states per rank (plan/memory.h) for the model of the DDP run `ddp`
  // (its parameter count), fp32 weights and gradients and `optimizer_bytes` of state per
  // parameter (no master copy: fp32 training steps the parameters themselves).
  double planned_model_state(const std::string& ddp, int ranks, int zero, int optimizer_bytes) const {
    return plan_memory(fmt::format("--params {} --dtype fp32 --optimizer-bytes {} --dp {} --zero {}",
                                   state(ddp, "parameters") / 4, optimizer_bytes, ranks, zero));
  }
  // `braid-plan memory <args> --json`'s model_state_bytes.
  static double plan_memory(const std::string& args) {
    ToolResult plan = run_tool("braid-plan", "memory " + args + " --json");
    EXPECT_EQ(plan.exit_code, 0) << plan.output;
    nlohmann::json report = nlohmann::json::parse(plan.output);
    for (const nlohmann::json& section : report["sections"]) {
      for (const nlohmann::json& result : section["results"]) {
        if (result["name"] == "model_state_bytes") return result["value"].get<double>();
      }
    }
    ADD_FAILURE() << "no model_state_bytes in\n" << plan.output;
    return 0;
  }

  std::filesystem::path dir_;
};

// The byte at `offset` XORed with `mask`, or `count` bytes from `offset` overwritten with 0xA5:
// the two damages of the checkpoint tests (a flipped bit, a 4 KiB overwrite in the middle).
void damage(const std::string& file, std::uintmax_t offset, std::size_t count, std::uint8_t mask);

// The command line `a` followed by `b`.
inline std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Parameters of an exported model (--export), flattened in registration order (train_fixture.cc).
std::vector<float> exported_parameters(const std::string& model, const std::string& file);

inline LaunchResult ddp_scenario(int ranks, const std::string& scenario) {
  return launch({.ranks = ranks, .program = test_program_path("braid-torch-rank"), .args = {scenario},
                 .env = {{"BRAID_TIMEOUT", "60"}}, .timeout_seconds = 120});
}

}  // namespace braid::testing
