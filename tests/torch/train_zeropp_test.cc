// ZeRO++ through braid-train (--zero-pp, docs/zero.md "ZeRO++") and ZeroOptimizer's qwZ on real
// rank processes: qwZ, qgZ and both keep every replica identical (--check-replicas compares
// every parameter after every step), train close to the fp32 ZeRO run, cut the bytes of the
// part they compress by at least 3.5x (the run report's zero_wire), keep an exact fp32 master
// only with qwZ; hpZ on stage 3 bit for bit; what makes no sense (hpz without stage 3, --zero 0) is refused naming the flag.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch.h"
#include "train_fixture.h"

namespace braid::testing {
namespace {

class ZeroPlusPlusTrainTest : public TrainTest {
 protected:
  const nlohmann::json zero_wire(const std::string& name) const { return json(name)["epochs"].back()["zero_wire"]; }
  std::int64_t state(const std::string& name, const std::string& part) const {
    return json(name)["model_state"][part].get<std::int64_t>();
  }
  // The part compressed is cut >= 3.5x (issue 19; int8 with blocks of 1024 gives 3.98x on these
  // 1 MiB buckets: 4 bytes -> 1 + 4/1024, plus a 56-byte header per shard); the other is fp32's.
  void expect_wire(const std::string& name, bool qwz, bool qgz) const {
    nlohmann::json wire = zero_wire(name);
    double fp32 = wire["fp32_each"].get<double>();
    double parameters = wire["parameters"].get<double>(), gradients = wire["gradients"].get<double>();
    std::printf("%s: parameters %.2fx, gradients %.2fx less than fp32\n", name.c_str(), fp32 / parameters, fp32 / gradients);
    if (qwz) {
      EXPECT_GE(fp32 / parameters, 3.5) << name;
    } else {
      EXPECT_EQ(parameters, fp32) << name;
    }
    if (qgz) {
      EXPECT_GE(fp32 / gradients, 3.5) << name;
    } else {
      EXPECT_EQ(gradients, fp32) << name;
    }
  }
};

// The MLP, 10 steps of SGD at lr 0.1 from the same seed, several 1 MiB buckets (padded on 3
// ranks), stages 1 and 2, against plain ZeRO. The loss tolerance is the compression docs' int8
// goal for a loss (2%): each weight is off by at most max|block| / 254 (0.4% of its block's
// largest), each gradient element likewise, and the measured curves stay within 0.4%. The
// parameters must differ from the fp32 run's (the int8 path really ran), yet be identical on
// every rank (braid-train exits non-zero otherwise).
TEST_F(ZeroPlusPlusTrainTest, QwzQgzAndBothKeepReplicasIdenticalAndTrainLikeFp32Zero) {
  std::vector<std::string> common = {"--model", "mlp", "--steps", "10", "--batch", "24", "--train-samples", "480",
                                     "--lr", "0.1", "--bucket-mb", "1", "--check-replicas"};
  for (int ranks : {2, 3}) {
    int stage = ranks == 2 ? 1 : 2;
    for (std::string parts : {"", "qwz", "qgz", "qwz,qgz"}) {
      std::vector<std::string> args = common;
      std::string name = fmt::format("mlp-{}-{}.json", ranks, parts.empty() ? "fp32" : parts);
      args.insert(args.end(), {"--zero", std::to_string(stage), "--json", path(name)});
      if (!parts.empty()) args.insert(args.end(), {"--zero-pp", parts});
      expect_success(train(ranks, args));
    }
    std::string fp32 = fmt::format("mlp-{}-fp32.json", ranks);
    expect_wire(fp32, false, false);
    for (std::string parts : {"qwz", "qgz", "qwz,qgz"}) {
      std::string name = fmt::format("mlp-{}-{}.json", ranks, parts);
      bool qwz = parts.find("qwz") != std::string::npos, qgz = parts.find("qgz") != std::string::npos;
      EXPECT_EQ(json(name)["zero_pp"], parts);
      EXPECT_NE(json(name)["parameter_digest"], json(fp32)["parameter_digest"]) << name;
      expect_same_curve(step_losses(name), step_losses(fp32), 0.02, name);
      expect_wire(name, qwz, qgz);
      // qwZ's master: rank 0's exact shard, one float per element of its shards (padding
      // included), as many as SGD's momentum (real elements only) within the padding.
      if (qwz) {
        EXPECT_NEAR(double(state(name, "master")), double(state(name, "optimizer_state")), 4.0 * ranks * 16) << name;
      } else {
        EXPECT_EQ(state(name, "master"), 0) << name;
      }
      EXPECT_EQ(state(name, "parameters"), state(fp32, "parameters")) << name;
    }
  }
}

// Stage 3 with qwZ and qgZ per unit (FullyShardedOptions::weight_codec / gradient_codec): each
// unit's forward and backward allgathers move int8 from every rank's exact fp32 shard, its
// reduce-scatter int8; on 2 and 3 ranks the replicas stay identical (every rank decodes the same
// bytes), the curve stays within the int8 goal of plain stage 3's (2%, as above), the
// parameters differ from the fp32 run's (the int8 path ran), and the step's bytes are cut by
// >= 3.5x: all three collectives are int8 (1 byte + 4/1024 per element + 56 per shard).
TEST_F(ZeroPlusPlusTrainTest, StageThreeGathersAndReducesEachUnitInInt8) {
  std::vector<std::string> common = {"--model", "mlp", "--steps", "10", "--batch", "24", "--train-samples", "480",
                                     "--lr", "0.1", "--zero", "3", "--check-replicas"};
  for (int ranks : {2, 3}) {
    std::string fp32 = fmt::format("z3-{}-fp32.json", ranks), both = fmt::format("z3-{}-qwz,qgz.json", ranks);
    std::vector<std::string> plain = common, compressed = common;
    plain.insert(plain.end(), {"--json", path(fp32)});
    compressed.insert(compressed.end(), {"--zero-pp", "qwz,qgz", "--json", path(both)});
    expect_success(train(ranks, plain));
    expect_success(train(ranks, compressed));
    EXPECT_NE(json(both)["parameter_digest"], json(fp32)["parameter_digest"]) << both;
    expect_same_curve(step_losses(both), step_losses(fp32), 0.02, both);
    double plain_wire = json(fp32)["epochs"].back()["wire_bytes"].get<double>();
    double cut = plain_wire / json(both)["epochs"].back()["wire_bytes"].get<double>();
    std::printf("%s: %.2fx fewer bytes per step than fp32 stage 3\n", both.c_str(), cut);
    EXPECT_GE(cut, 3.5) << both;
  }
}

// hpZ on stage 3 (torch/secondary_partition.h), 4 ranks on 2 emulated hosts (BRAID_HOST_ID from
// the rank): every backward allgather rebuilds its unit from the host-local copy the forward
// left, over the host's 2 ranks only (host_allgathers = steps x units, half of all gathers).
// The copy holds exactly the forward's fp32 values, so the run is plain stage 3's BIT FOR BIT;
// the price is memory, n / k = 2 more shards of parameters per unit (3x the shards). On hosts of
// unequal size (3 ranks: 2 + 1) hpZ is refused on every rank.
TEST_F(ZeroPlusPlusTrainTest, StageThreeHpzKeepsTheBackwardGathersInsideEachHostBitForBit) {
  auto run = [&](int ranks, std::vector<std::string> extra) {
    std::vector<std::string> args = {"-c", "BRAID_HOST_ID=host$((BRAID_RANK / 2)) exec \"$0\" \"$@\"",
                                     tool_path("braid-train"), "--model", "mlp", "--steps", "4", "--batch", "24",
                                     "--train-samples", "240", "--lr", "0.1", "--zero", "3", "--check-replicas",
                                     "--quiet", "--test-samples", "50"};
    args.insert(args.end(), extra.begin(), extra.end());
    return launch({.ranks = ranks, .program = "/bin/sh", .args = args, .env = {{"BRAID_TIMEOUT", "60"}},
                   .timeout_seconds = 120});
  };
  expect_success(run(4, {"--json", path("plain.json")}));
  expect_success(run(4, {"--zero-pp", "hpz", "--json", path("hpz.json")}));
  EXPECT_EQ(json("hpz.json")["parameter_digest"], json("plain.json")["parameter_digest"]);
  EXPECT_EQ(json("hpz.json")["step_losses"], json("plain.json")["step_losses"]);
  nlohmann::json g = json("hpz.json")["gathers"];
  EXPECT_EQ(g["host_allgathers"].get<int>(), 4 * g["units"].get<int>());
  EXPECT_EQ(g["allgathers"].get<int>(), 2 * g["host_allgathers"].get<int>());
  EXPECT_EQ(json("plain.json")["gathers"]["host_allgathers"].get<int>(), 0);
  EXPECT_EQ(state("hpz.json", "parameters"), 3 * state("plain.json", "parameters"));
  EXPECT_LT(json("hpz.json")["epochs"].back()["wire_bytes"].get<double>(),
            json("plain.json")["epochs"].back()["wire_bytes"].get<double>());
  LaunchResult uneven = run(3, {"--zero-pp", "hpz"});
  EXPECT_FALSE(uneven.timed_out);
  EXPECT_NE(uneven.exit_code, 0);
  EXPECT_EQ(uneven.count("every host must hold the same number of ranks"), 3) << uneven.output;
}

TEST_F(ZeroPlusPlusTrainTest, HpzUnknownPartsAndZeroZeroAreRefusedNamingTheFlag) {
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  for (const Case& c : {Case{{"--zero", "1", "--zero-pp", "hpz"}, "--zero-pp hpz: hpz (a secondary partition of stage 3's parameters inside each host) needs --zero 3"},
                        Case{{"--zero-pp", "qwz,qgz"}, "--zero-pp qwz,qgz: needs --zero 1, 2 or 3"},
                        Case{{"--zero", "2", "--zero-pp", "qwz,int4"}, "unknown part 'int4'"}}) {
    LaunchResult r = train(2, c.flags, 60);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_GE(r.count(c.message), 1) << r.output;
    EXPECT_EQ(r.count("epoch 1:"), 0) << r.output;
  }
}

// ZeroOptimizer with qwZ used directly (tests/torch/programs/ddp_scenarios.cc "qwz-vs-ddp"), the
// buckets of ZeroOptimizerTest (131 floats, or one per parameter: an all-padding shard on 3
// ranks), 1-4 ranks, stages 1 and 2, SGD and AdamW: after 3 steps the parameters are within 0.01
// of DDP's (the weights, ~0.35 at most, are each rounded by at most max|block| / 254 = 1.4e-3
// per step; AdamW's normalised step, lr 0.01, amplifies the gradients' small differences:
// measured <= 0.0046) and not equal to them (int8 really ran, the owner's own shard included);
// the layout holds: each inner shard views its master, the master's and the flat padding are
// 0.0, and this rank's flat slice is its master within the int8 bound, block by block.
TEST(ZeroOptimizerQwzTest, StepsExactMastersAndComputesWithTheirInt8Copies) {
  for (int ranks : {1, 2, 3, 4}) {
    LaunchResult r = ddp_scenario(ranks, "qwz-vs-ddp");
    EXPECT_FALSE(r.timed_out);
    ASSERT_EQ(r.count("PASS qwz-vs-ddp"), ranks) << r.output;
    std::vector<std::string> lines = r.lines_with("QWZ ");
    ASSERT_EQ(lines.size(), std::size_t(ranks) * 8) << r.output;
    for (const std::string& line : lines) {
      EXPECT_NE(line.find(" flat-faults 0 "), std::string::npos) << line;
      double difference = std::stod(line.substr(line.find("difference ") + 11));
      EXPECT_GT(difference, 0.0) << line;
      EXPECT_LT(difference, 0.01) << line;
    }
  }
}

}  // namespace
}  // namespace braid::testing
