// What the sharded-checkpoint tests of braid-train share (train_zero_checkpoint_test.cc for
// stages 1-2, train_zero3_checkpoint_test.cc for stage 3 and across the stages): a run stopped
// half way with a checkpoint and resumed under other flags and world sizes, held against the
// uninterrupted run, and the rank program of the library-level scenarios.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "launch.h"
#include "train_fixture.h"

namespace braid::testing {

// How far a resumed run at another world size may drift from the uninterrupted one, and why.
// The checkpoint itself loads exactly (every element of the parameters and of the optimizer
// state lands where it was: the reshard scenarios check it bit for bit); what differs after it
// is the arithmetic at m ranks: each rank's loss is the mean over batch / m samples and the
// ranks' gradients are summed over m in another grouping, so every averaged gradient element
// differs from the 4-rank one by a few float ulps (~1e-7 relative), and so does every logged
// loss, already at the first resumed step. Measured over 3 (MLP) and 2 (GPT) resumed steps on 2
// and 3 ranks: loss curves within 1.2e-7 relative, the MLP's parameters within 7.5e-9 absolute
// (a float ulp of its ~0.05 weights is 3.7e-9), at stages 1-2 and at stage 3 alike (stage 3 adds
// like DDP: train_zero3_test.cc). The bounds below leave about two orders of magnitude of margin
// for other BLAS kernels and core counts, and still catch a resharding error, which is not a
// rounding: one element of the momentum shifted, lost or zeroed moves its parameter by about the
// learning rate times a gradient (0.1 x ~1e-3 here, 100 times the parameter bound), and a
// misplaced range of a shard moves the loss far beyond 1e-5.
constexpr double kLossRtol = 1e-5;
constexpr double kParameterAtol = 1e-6;

// One resumed run: `name` names its checkpoint copy (ckpt-<name>) and its outputs (resumed-<name>).
struct Resume {
  std::string name;
  int ranks = 4;
  std::vector<std::string> flags;
};

class ZeroCheckpointTest : public TrainTest {
 protected:
  // Before the names of every file the helpers below write: several stop-and-resume rounds in one test.
  std::string label_;
  std::string at(const std::string& name) const { return path(label_ + name); }
  // The world size of the uninterrupted run and of the saving one.
  int world_ = 4;
  // How the helpers launch braid-train (a test may wrap it, e.g. to emulate hosts).
  virtual LaunchResult run_training(int ranks, const std::vector<std::string>& args) const { return train(ranks, args); }

  // Trains `steps` uninterrupted on world_ ranks ("full"), then steps / 2 on world_ with a checkpoint
  // ("ckpt"), both with `run_flags`, then resumes a copy of the checkpoint ("ckpt-<name>", first
  // handed to `before_resume`) to `steps` for every entry of `resumes`. Every name gets label_ first.
  void stop_and_resume(const std::vector<std::string>& common, int steps, bool export_parameters,
                       const std::vector<std::string>& run_flags, const std::vector<Resume>& resumes,
                       const std::function<void(const std::string&, const Resume&)>& before_resume = {}) {
    auto outputs = [&](const std::string& name) {
      std::vector<std::string> out = {"--json", at(name + ".json")};
      if (export_parameters) out.insert(out.end(), {"--export", at(name + ".pt")});
      return out;
    };
    std::vector<std::string> run = plus(common, run_flags);
    expect_success(run_training(world_, plus(plus(run, {"--steps", std::to_string(steps)}), outputs("full"))));
    expect_success(run_training(world_, plus(run, {"--steps", std::to_string(steps / 2), "--checkpoint-dir", at("ckpt")})));
    for (const Resume& r : resumes) {
      std::string dir = at("ckpt-" + r.name);
      std::filesystem::copy(at("ckpt"), dir, std::filesystem::copy_options::recursive);
      if (before_resume) before_resume(dir, r);
      LaunchResult result = run_training(r.ranks, plus(plus(plus(common, r.flags), {"--steps", std::to_string(steps),
                                                                             "--checkpoint-dir", dir, "--resume"}),
                                                outputs("resumed-" + r.name)));
      expect_success(result);
      EXPECT_EQ(result.count(fmt::format("resumed from {}/zero-checkpoint.json at step {}", dir, steps / 2)), 1)
          << result.output;
    }
  }

  // The resumed runs' losses against the uninterrupted run's last steps: bit for bit (and the
  // digest) for `bitwise`, within kLossRtol for `within`.
  void expect_resumed_curves(int steps, const std::vector<std::string>& bitwise,
                             const std::vector<std::string>& within) const {
    std::vector<double> full = step_losses(label_ + "full.json");
    ASSERT_EQ(full.size(), std::size_t(steps));
    std::vector<double> tail(full.begin() + steps / 2, full.end());
    for (const std::string& name : bitwise) {
      EXPECT_EQ(step_losses(label_ + "resumed-" + name + ".json"), tail) << label_ << name << ": bit for bit";
      EXPECT_EQ(digest(label_ + "resumed-" + name + ".json"), digest(label_ + "full.json")) << label_ << name;
    }
    for (const std::string& name : within) {
      expect_same_curve(step_losses(label_ + "resumed-" + name + ".json"), tail, kLossRtol, "resumed " + label_ + name);
    }
  }

  // The exported parameters of resumed-<name> against the uninterrupted run's, within kParameterAtol.
  void expect_parameters_within(const std::string& model, const std::string& name) const {
    std::vector<float> full = exported_parameters(model, at("full.pt"));
    std::vector<float> resumed = exported_parameters(model, at("resumed-" + name + ".pt"));
    ASSERT_EQ(resumed.size(), full.size());
    double worst = 0;
    for (std::size_t i = 0; i < full.size(); ++i) worst = std::max(worst, double(std::abs(resumed[i] - full[i])));
    EXPECT_LT(worst, kParameterAtol) << name;
    std::printf("resumed %s: largest parameter difference %.3g\n", name.c_str(), worst);
  }

  // A checkpoint given to braid-train on 2 ranks after `damage`: the run must end non-zero with
  // `message` on both ranks and without a step trained (nothing loaded).
  struct BadCheckpoint {
    std::string name;
    std::vector<std::string> run;  // resumed with --steps 4 --resume
    std::string source;            // the checkpoint copied, then damaged
    std::function<void(const std::string&)> damage;
    std::string message;           // on every rank
  };
  static void undamaged(const std::string&) {}
  // The damages every kind of checkpoint is tested with, on `file` of the checkpoint directory.
  static std::function<void(const std::string&)> removing(const std::string& file) {
    return [file](const std::string& d) { std::filesystem::remove(d + "/" + file); };
  }
  static std::function<void(const std::string&)> truncating(const std::string& file, std::uintmax_t bytes) {
    return [file, bytes](const std::string& d) { std::filesystem::resize_file(d + "/" + file, bytes); };
  }
  // A quarter in lies in the first buffer's tensors (the middle may fall in the zip padding
  // between two tensors, which no reader looks at).
  static std::function<void(const std::string&)> flipping_a_bit_a_quarter_in(const std::string& file) {
    return [file](const std::string& d) {
      damage(d + "/" + file, std::filesystem::file_size(d + "/" + file) / 4, 1, 0x08);
    };
  }
  void expect_refused_on_both_ranks(const std::vector<BadCheckpoint>& cases) const {
    for (const BadCheckpoint& c : cases) {
      std::string dir = path("case-" + std::to_string(&c - cases.data()));
      std::filesystem::copy(path(c.source), dir, std::filesystem::copy_options::recursive);
      c.damage(dir);
      LaunchResult r = train(2, plus(c.run, {"--steps", "4", "--checkpoint-dir", dir, "--resume"}), 60);
      EXPECT_FALSE(r.timed_out) << c.name;
      EXPECT_NE(r.exit_code, 0) << c.name << "\n" << r.output;
      EXPECT_EQ(r.count(c.message), 2) << c.name << "\n" << r.output;
      EXPECT_EQ(r.count("resumed from"), 0) << c.name << "\n" << r.output;
      EXPECT_EQ(r.count("epoch 1:"), 0) << c.name << "\n" << r.output;
    }
  }

  // The refusal scenarios (refused, refused3) on 3 ranks: every damage refused on all 3 with its
  // kind and nothing changed ("<tag> <case> <kind> unchanged 1"), the missing file named on all 3
  // (rank 2 found it, ranks 0 and 1 were told).
  void expect_failed_loads_changed_nothing(const std::string& scenario_name, const std::string& tag) const {
    LaunchResult r = scenario(3, scenario_name);
    for (const char* refused : {"flipped-byte Corrupt", "truncated-shard Corrupt", "missing-shard Corrupt",
                                "damaged-manifest Corrupt", "another-model InvalidArgument"}) {
      std::string line = fmt::format("{} {} unchanged 1", tag, refused);
      EXPECT_EQ(r.count(line), 3) << line << "\n" << r.output;
    }
    EXPECT_EQ(r.count("zero-1-rank2.pt is missing"), 3) << r.output;
  }

  // braid-zero-checkpoint-rank SCENARIO on `ranks` ranks (programs/zero_checkpoint_scenarios.cc),
  // in this test's directory; every rank must reach its end.
  LaunchResult scenario(int ranks, const std::string& name) const {
    LaunchResult r = launch({.ranks = ranks, .program = test_program_path("braid-zero-checkpoint-rank"),
                             .args = {name, path("scenario")}, .env = {{"BRAID_TIMEOUT", "60"}},
                             .timeout_seconds = 120});
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.count("PASS " + name), ranks) << r.output;
    return r;
  }
};

}  // namespace braid::testing
