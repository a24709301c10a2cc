#include "braid/tools/braid_train/train_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include "braid/base/error.h"
#include "braid/tools/braid_train/zero_pp.h"

namespace braid::train {
namespace {

TrainConfig parse(std::vector<std::string> args) {
  CLI::App app;
  TrainConfig config;
  add_train_flags(app, config);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  return config;
}

std::string error_of(const TrainConfig& config, int world) {
  try {
    validate(config, world);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(TrainConfig, ParsesTheIssueFlags) {
  TrainConfig c = parse({"--model", "gpt", "--steps", "10", "--batch", "32", "--optimizer", "adam", "--compress",
                         "topk:0.01", "--overlap", "off", "--bucket-mb", "auto", "--accumulate", "2", "--threads", "2"});
  EXPECT_EQ(c.model, "gpt");
  EXPECT_FALSE(c.overlap);
  EXPECT_EQ(c.bucket_mb, "auto");
  EXPECT_DOUBLE_EQ(c.learning_rate(), 1e-3);
  EXPECT_EQ(c.data_dir(), "/usr/share/games/fortunes");
  EXPECT_EQ(error_of(c, 4), "");
}

TEST(TrainConfig, RejectsUnknownFlagsAndValues) {
  EXPECT_THROW(parse({"--no-such-flag"}), CLI::ParseError);
  EXPECT_THROW(parse({"--model", "resnet"}), CLI::ParseError);
  EXPECT_THROW(parse({"--overlap", "maybe"}), CLI::ParseError);
}

TEST(TrainConfig, NamesTheFlagAndRangeOfABadValue) {
  TrainConfig c;
  c.batch = 100;
  EXPECT_NE(error_of(c, 3).find("--batch 100 is not divisible by the world size 3"), std::string::npos);
  c.batch = 96;
  c.accumulate = 0;
  EXPECT_NE(error_of(c, 3).find("--accumulate 0"), std::string::npos);
  c = TrainConfig{};
  c.compress = "topk:2";
  EXPECT_NE(error_of(c, 2).find("topk"), std::string::npos);
  c = TrainConfig{};
  c.resume = true;
  EXPECT_NE(error_of(c, 2).find("--resume needs --checkpoint-dir"), std::string::npos);
  c = TrainConfig{};
  c.threads = 0;
  EXPECT_NE(error_of(c, 2).find("--threads 0"), std::string::npos);
}

// The learning rate is used as given or refused, never replaced by the default: 0, NaN and
// infinities used to train silently with 0.02 (or, for inf, to a NaN loss).
TEST(TrainConfig, ALearningRateThatIsNotAFinitePositiveNumberIsRefused) {
  for (const char* lr : {"0", "-0.5", "nan", "inf", "-inf"}) {
    TrainConfig c = parse({"--lr", lr});
    ASSERT_TRUE(c.lr.has_value()) << lr;
    EXPECT_NE(error_of(c, 1).find("must be a finite number greater than 0"), std::string::npos) << lr;
  }
  TrainConfig c = parse({"--lr", "1e-5", "--optimizer", "adam"});
  EXPECT_DOUBLE_EQ(c.learning_rate(), 1e-5);
  EXPECT_EQ(error_of(c, 1), "");
}

TEST(TrainConfig, ResumeIfPresentAlsoNeedsACheckpointDirectory) {
  TrainConfig c = parse({"--resume-if-present"});
  EXPECT_TRUE(c.resumes());
  EXPECT_NE(error_of(c, 2).find("--resume-if-present needs --checkpoint-dir"), std::string::npos);
}

TEST(TrainConfig, FingerprintCoversWhatShapesTheTrajectoryButNotItsLength) {
  TrainConfig a, b;
  b.epochs = 9;
  b.steps = 77;
  EXPECT_EQ(a.fingerprint(2), b.fingerprint(2));
  EXPECT_NE(a.fingerprint(2), a.fingerprint(4));
  b.compress = "int8";
  EXPECT_NE(a.fingerprint(2), b.fingerprint(2));
}

// --zero: 0-3 accepted on the data-parallel trainer (with --overlap on or off, --clip-grad,
// --accumulate); what is not implemented yet is refused naming the flags.
TEST(TrainConfig, ZeroStagesAndWhatTheyRefuse) {
  for (const char* stage : {"0", "1", "2", "3"}) {
    EXPECT_EQ(error_of(parse({"--zero", stage, "--accumulate", "2", "--clip-grad", "1", "--overlap", "off"}), 4), "");
  }
  EXPECT_EQ(parse({"--zero", "2"}).zero, 2);
  EXPECT_EQ(parse({"--zero", "3"}).max_gathered_units, 2);
  EXPECT_EQ(parse({"--zero", "3", "--max-gathered-units", "1"}).max_gathered_units, 1);
  EXPECT_NE(parse({"--zero", "1"}).fingerprint(2), parse({}).fingerprint(2));
  EXPECT_EQ(parse({}).fingerprint(2).find("zero"), std::string::npos);  // DDP checkpoints keep their fingerprint
  auto refused = [](std::vector<std::string> flags, const std::string& message) {
    std::string error = error_of(parse(std::move(flags)), 4);
    EXPECT_NE(error.find(message), std::string::npos) << error;
  };
  refused({"--zero", "3", "--max-gathered-units", "0"}, "--zero 3: --max-gathered-units 0: must be >= 1");
  // Stage 3 on the mesh (mesh_fully_sharded.h).
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "3", "--tp", "2", "--clip-grad", "1"}), 4), "");
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "3", "--pp", "2", "--schedule", "zb1"}), 4), "");
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "3", "--dropout", "0.1", "--precision", "bf16"}), 4), "");
  // Units inside the pipeline chunks (--zero-unit-layers): the mesh's stage 3 only; on the
  // data-parallel trainer 1 is what its units already are, more is refused rather than ignored.
  EXPECT_EQ(parse({"--model", "gpt", "--zero", "3", "--pp", "2", "--zero-unit-layers", "2"}).zero_unit_layers, 2);
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "3", "--tp", "2", "--zero-unit-layers", "1"}), 4), "");
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "3", "--zero-unit-layers", "1"}), 4), "");
  refused({"--model", "gpt", "--zero", "3", "--zero-unit-layers", "-1"}, "--zero 3: --zero-unit-layers -1: must be >= 0");
  refused({"--model", "gpt", "--zero", "1", "--pp", "2", "--zero-unit-layers", "1"},
          "--zero 1: --zero-unit-layers 1: units are stage 3's");
  refused({"--model", "gpt", "--zero", "3", "--zero-unit-layers", "2"},
          "--zero 3: --zero-unit-layers 2: the data-parallel trainer's units are one layer with parameters each");
  // ZeRO++ (qwz, qgz) on the mesh's stage 3 and, over pp and dropout meshes, stage 1; checkpoints
  // on stage 3; hpz refused on the mesh, and stage 1's ZeRO++ with --tp (the TP-replicated copies
  // would drift).
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "3", "--pp", "2", "--zero-pp", "qwz,qgz"}), 4), "");
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "1", "--pp", "2", "--zero-pp", "qgz-ef,qwz"}), 4), "");
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "1", "--dropout", "0.1", "--zero-pp", "qgz"}), 4), "");
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "3", "--pp", "2", "--checkpoint-dir", "ckpt", "--resume"}), 4), "");
  refused({"--model", "gpt", "--zero", "3", "--pp", "2", "--zero-pp", "qwz,hpz"},
          "--zero 3: with --tp, --pp or --dropout (the mesh trainer) and --zero-pp qwz,hpz: hpz is refused on the mesh");
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "3", "--tp", "2", "--zero-pp", "qwz,qgz"}), 4), "");
  refused({"--model", "gpt", "--zero", "1", "--tp", "2", "--pp", "2", "--zero-pp", "qgz"},
          "--zero 1: with --tp 2 and --zero-pp qgz: ZeRO++ on the mesh's stage 1 works over --pp and --dropout meshes");
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "3", "--zero-pp", "hpz"}), 4), "");  // data-parallel: fine
  refused({"--zero", "-1"}, "--zero -1: the stage must be 0, 1, 2 or 3");
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "1", "--tp", "2", "--pp", "2", "--clip-grad", "1"}), 8), "");
  refused({"--model", "gpt", "--zero", "2", "--pp", "2"}, "--zero 2: with --tp, --pp or --dropout (the mesh trainer)");
  refused({"--model", "gpt", "--zero", "2", "--dropout", "0.1"}, "so stage 2 would be stage 1; use --zero 1");
  EXPECT_EQ(error_of(parse({"--model", "gpt", "--zero", "1", "--tp", "2", "--checkpoint-dir", "ckpt"}), 4), "");
  refused({"--zero", "1", "--compress", "int8"}, "--zero 1: with --compress int8");
  // Sharded checkpoints (torch/zero_checkpoint.h) are accepted.
  EXPECT_EQ(error_of(parse({"--zero", "1", "--checkpoint-dir", "ckpt", "--checkpoint-every", "2"}), 4), "");
  EXPECT_EQ(error_of(parse({"--zero", "2", "--checkpoint-dir", "ckpt", "--resume-if-present"}), 4), "");
  EXPECT_EQ(error_of(parse({"--zero", "2", "--checkpoint-dir", "ckpt", "--resume"}), 2), "");
  EXPECT_EQ(error_of(parse({"--zero", "3", "--checkpoint-dir", "ckpt", "--resume"}), 4), "");
}

// A ZeRO checkpoint resumes at any world size: its fingerprint has no world size and no stage
// (stages 1, 2 and 3 compute the same numbers), but the epoch's length in steps, and everything
// else that changes the trajectory.
TEST(TrainConfig, ZeroFingerprintLeavesOutTheWorldSizeOnly) {
  TrainConfig a = parse({"--zero", "1"}), b = parse({"--zero", "2"});
  EXPECT_EQ(a.zero_fingerprint(10), b.zero_fingerprint(10));
  EXPECT_EQ(a.zero_fingerprint(10), parse({"--zero", "3", "--max-gathered-units", "1"}).zero_fingerprint(10));
  EXPECT_EQ(a.zero_fingerprint(10).find("world"), std::string::npos) << a.zero_fingerprint(10);
  EXPECT_NE(a.zero_fingerprint(10), a.zero_fingerprint(11));
  EXPECT_NE(a.zero_fingerprint(10), a.fingerprint(2));
  for (std::vector<std::string> other : std::vector<std::vector<std::string>>{
           {"--batch", "64"}, {"--optimizer", "adam"}, {"--lr", "0.5"}, {"--seed", "7"}, {"--bucket-mb", "1"},
           {"--accumulate", "2"}, {"--train-samples", "100"}, {"--model", "gpt"}}) {
    other.insert(other.end(), {"--zero", "1"});
    EXPECT_NE(parse(other).zero_fingerprint(10), a.zero_fingerprint(10)) << other.front() << " " << other[1];
  }
  EXPECT_NE(parse({"--model", "gpt", "--zero", "1", "--width", "64"}).zero_fingerprint(10),
            parse({"--model", "gpt", "--zero", "1"}).zero_fingerprint(10));
}

// The mesh's stage-3 checkpoints carry the ZeRO fingerprint (mesh_checkpoint.h): no world size,
// so the dp size may change, but the mesh's shape (tp, pp, micro-batches, schedule, dropout) and
// the model in it, so a checkpoint of another shape is refused.
TEST(TrainConfig, TheMeshsStageThreeFingerprintKeepsTheMeshShape) {
  auto fingerprint = [](std::vector<std::string> flags) {
    flags.insert(flags.end(), {"--model", "gpt", "--zero", "3"});
    return parse(flags).zero_fingerprint(8);
  };
  std::string pp = fingerprint({"--pp", "2", "--microbatches", "2"});
  EXPECT_EQ(pp.find("world"), std::string::npos) << pp;
  for (const std::vector<std::string>& other : std::vector<std::vector<std::string>>{
           {"--pp", "4", "--microbatches", "2"}, {"--tp", "2", "--microbatches", "2"}, {"--pp", "2", "--microbatches", "4"},
           {"--pp", "2", "--microbatches", "2", "--schedule", "gpipe"}, {"--pp", "2", "--microbatches", "2", "--dropout", "0.1"},
           {"--pp", "2", "--microbatches", "2", "--width", "64"}, {"--pp", "2", "--microbatches", "2", "--layers", "2"}}) {
    EXPECT_NE(fingerprint(other), pp) << fmt::format("{}", fmt::join(other, " "));
  }
}

// --zero-pp: qwz, qgz (qgz-ef with error feedback), alone or together, with --zero 1 or 2;
// hpz without stage 3, unknown parts and --zero 0 refused naming the flag.
TEST(TrainConfig, ZeroPlusPlusPartsAndWhatTheyRefuse) {
  EXPECT_EQ(error_of(parse({"--zero", "3", "--zero-pp", "qwz,qgz"}), 4), "");
  for (const char* stage : {"1", "2"}) {
    for (const char* parts : {"qwz", "qgz", "qwz,qgz", "qgz-ef", "qgz,qwz"}) {
      EXPECT_EQ(error_of(parse({"--zero", stage, "--zero-pp", parts}), 4), "") << parts;
    }
  }
  ZeroPlusPlus both = parse_zero_pp("qwz,qgz", 2);
  EXPECT_TRUE(both.qwz && both.qgz && !both.qgz_error_feedback);
  EXPECT_TRUE(parse_zero_pp("qgz-ef", 1).qgz_error_feedback);
  EXPECT_FALSE(parse_zero_pp("", 0).any());
  EXPECT_NE(parse({"--zero", "1", "--zero-pp", "qwz"}).fingerprint(2), parse({"--zero", "1"}).fingerprint(2));
  auto refused = [](std::vector<std::string> flags, const std::string& message) {
    std::string error = error_of(parse(std::move(flags)), 2);
    EXPECT_NE(error.find(message), std::string::npos) << error;
  };
  refused({"--zero-pp", "qwz"}, "--zero-pp qwz: needs --zero 1, 2 or 3");
  refused({"--zero", "3", "--zero-pp", "qgz-ef"}, "qgz-ef with --zero 3: stage 3 keeps no full-size residual");
  refused({"--zero", "1", "--zero-pp", "hpz"}, "hpz (a secondary partition of stage 3's parameters inside each host) needs --zero 3");
  EXPECT_EQ(error_of(parse({"--zero", "3", "--zero-pp", "qwz,qgz,hpz"}), 4), "");
  refused({"--zero", "1", "--zero-pp", "qwz,int4"}, "unknown part 'int4'");
  refused({"--zero", "1", "--zero-pp", "qwz,"}, "unknown part ''");
}

// --precision: fp32 keeps the fingerprints runs had before the flag; bf16 and fp16 are in them
// (fp16 with its loss scale); what would set the wire's dtype a second way is refused; the mesh
// trainer accepts it.
TEST(TrainConfig, PrecisionFingerprintsAndRefusals) {
  for (const char* zero : {"0", "1", "2", "3"}) {
    for (const char* precision : {"fp32", "bf16", "fp16"}) {
      EXPECT_EQ(error_of(parse({"--zero", zero, "--precision", precision}), 2), "") << precision;
    }
  }
  EXPECT_EQ(error_of(parse({"--precision", "fp16", "--loss-scale", "1024", "--inject-overflow", "3"}), 2), "");
  EXPECT_EQ(parse({"--precision", "fp32"}).fingerprint(2), parse({}).fingerprint(2));
  EXPECT_NE(parse({"--precision", "bf16"}).fingerprint(2), parse({}).fingerprint(2));
  EXPECT_NE(parse({"--precision", "fp16"}).fingerprint(2), parse({"--precision", "fp16", "--loss-scale", "8"}).fingerprint(2));
  EXPECT_NE(parse({"--zero", "1", "--precision", "bf16"}).zero_fingerprint(8), parse({"--zero", "1"}).zero_fingerprint(8));
  auto refused = [](std::vector<std::string> flags, const std::string& message) {
    std::string error = error_of(parse(std::move(flags)), 2);
    EXPECT_NE(error.find(message), std::string::npos) << error;
  };
  refused({"--precision", "bf16", "--zero", "2", "--zero-pp", "qgz"}, "--precision bf16: with --zero-pp qgz");
  refused({"--precision", "bf16", "--compress", "fp16"}, "--precision bf16: with --compress fp16");
  EXPECT_EQ(error_of(parse({"--precision", "bf16", "--zero", "3"}), 2), "");
  refused({"--precision", "fp16", "--loss-scale", "0.5"}, "--loss-scale '0.5': expected dynamic or a finite number >= 1");
  refused({"--precision", "fp16", "--loss-scale", "inf"}, "expected dynamic or a finite number >= 1");
  refused({"--loss-scale", "64"}, "--loss-scale applies to --precision fp16 only");
  refused({"--precision", "bf16", "--inject-overflow", "1"}, "--inject-overflow tests the loss scale of --precision fp16");
  refused({"--precision", "fp16", "--inject-overflow", "-1"}, "--inject-overflow -1: a step >= 1");
  // The mesh trainer takes --precision with its ZeRO stages (0 and 1); its --zero 2 stays refused.
  for (const char* precision : {"bf16", "fp16"}) {
    for (const char* zero : {"0", "1"}) {
      EXPECT_EQ(error_of(parse({"--model", "gpt", "--precision", precision, "--tp", "2", "--zero", zero}), 2), "");
      EXPECT_EQ(error_of(parse({"--model", "gpt", "--precision", precision, "--pp", "2", "--zero", zero}), 2), "");
    }
  }
  refused({"--model", "gpt", "--precision", "bf16", "--tp", "2", "--zero", "2"}, "so stage 2 would be stage 1");
  refused({"--model", "gpt", "--precision", "fp16", "--pp", "2", "--zero", "1", "--zero-pp", "qwz"},
          "--precision fp16: with --zero-pp qwz");
}

// moe-gpt on the mesh edp x ep x pp x tp: --ep divides world / (tp x pp), the batch splits over
// the replicas (and with --pp their micro-batches), zero-bubble schedules, --dropout and --sp are
// refused (docs/moe.md).
TEST(TrainConfig, MoeGptMeshShapesAndWhatTheyRefuse) {
  auto moe = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--model", "moe-gpt"};
    const std::vector<std::pair<std::string, std::string>> defaults = {{"--batch", "8"}, {"--experts", "4"}};
    for (const auto& [flag, value] : defaults) {  // unless the case gives its own
      if (std::find(extra.begin(), extra.end(), flag) == extra.end()) args.insert(args.end(), {flag, value});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return parse(args);
  };
  EXPECT_EQ(error_of(moe({"--ep", "2", "--tp", "2"}), 4), "");
  EXPECT_EQ(error_of(moe({"--ep", "4", "--tp", "2"}), 8), "");
  EXPECT_EQ(error_of(moe({"--ep", "2"}), 8), "");
  EXPECT_NE(error_of(moe({"--ep", "4", "--tp", "2"}), 4)
                .find("--ep 4: must be at least 1 and divide the data-parallel size world / (tp x pp) = 4 / (2 x 1)"),
            std::string::npos);
  EXPECT_NE(error_of(moe({"--tp", "3"}), 4).find("--tp 3 x --pp 1 with --model moe-gpt: their product must divide"),
            std::string::npos);
  EXPECT_NE(error_of(moe({"--tp", "2", "--batch", "3"}), 4).find("--batch 3 is not divisible by the 2 data-parallel"),
            std::string::npos);
  EXPECT_NE(error_of(moe({"--ep", "4", "--experts", "6", "--tp", "2"}), 8).find("--experts 6: must be at least 1 and "
                                                                                 "divisible by --ep 4"),
            std::string::npos);
  // --pp: the EP groups inside each stage's data-parallel ranks, the replica batch over --microbatches.
  EXPECT_EQ(error_of(moe({"--pp", "2", "--ep", "2", "--microbatches", "2"}), 4), "");
  EXPECT_EQ(error_of(moe({"--pp", "2", "--tp", "2", "--ep", "2", "--microbatches", "1"}), 8), "");
  EXPECT_NE(error_of(moe({"--pp", "2", "--ep", "4"}), 4)
                .find("--ep 4: must be at least 1 and divide the data-parallel size world / (tp x pp) = 4 / (1 x 2)"),
            std::string::npos);
  EXPECT_NE(error_of(moe({"--pp", "2", "--ep", "2", "--microbatches", "3"}), 4)
                .find("--batch 8 is not divisible by 2 data-parallel replicas x --microbatches 3"),
            std::string::npos);
  EXPECT_NE(error_of(moe({"--pp", "2", "--schedule", "zb1"}), 4).find("--schedule zb1 with --model moe-gpt"),
            std::string::npos);
  EXPECT_NE(error_of(moe({"--pp", "2", "--dropout", "0.1"}), 4).find("--dropout with --model moe-gpt"), std::string::npos);
  EXPECT_NE(error_of(moe({"--tp", "2", "--sp"}), 4).find("--sp with --model moe-gpt"), std::string::npos);
}

}  // namespace
}  // namespace braid::train
