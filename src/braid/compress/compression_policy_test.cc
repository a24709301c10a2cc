#include "braid/compress/compression_policy.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::compress {
namespace {

constexpr Shape kMatrix{.rows = 512, .cols = 512};

TEST(CompressionPolicyTest, RulesApplyInTheirDocumentedOrder) {
  CompressionPolicy policy({.codec = parse_codec_spec("topk:0.01"),
                            .min_elements = 1000,
                            .warmup_steps = 10,
                            .overrides = {{"embed.*", parse_codec_spec("fp16")}, {"head.bias", parse_codec_spec("int8")}},
                            .schedule = parse_compression_schedule("int8@100,none@200")});
  EXPECT_EQ(policy.choose("fc.weight", 5000, {}, 3).id, CodecId::kNone);         // warm-up
  EXPECT_EQ(policy.choose("embed.weight", 5000, {}, 3).id, CodecId::kNone);      // warm-up beats overrides
  EXPECT_EQ(policy.choose("embed.weight", 10, {}, 50).id, CodecId::kFp16);       // override beats the threshold
  EXPECT_EQ(policy.choose("head.bias", 10, {}, 50).id, CodecId::kInt8);
  EXPECT_EQ(policy.choose("fc.bias", 999, {}, 50).id, CodecId::kNone);           // under the threshold
  EXPECT_EQ(policy.choose("fc.weight", 1000, {}, 50), parse_codec_spec("topk:0.01"));  // default
  EXPECT_EQ(policy.choose("fc.weight", 1000, {}, 100).id, CodecId::kInt8);       // schedule relaxes
  EXPECT_EQ(policy.choose("fc.weight", 1000, {}, 199).id, CodecId::kInt8);
  EXPECT_EQ(policy.choose("fc.weight", 1000, {}, 200).id, CodecId::kNone);
}

TEST(CompressionPolicyTest, PowerSgdOnlyFactorsMatrices) {
  CompressionPolicy policy({.codec = parse_codec_spec("powersgd:4"), .min_elements = 0});
  EXPECT_EQ(policy.choose("w", 512 * 512, kMatrix, 0).id, CodecId::kPowerSgd);
  EXPECT_EQ(policy.choose("b", 512, {}, 0).id, CodecId::kNone);
}

TEST(CompressionPolicyTest, ErrorFeedbackFollowsTheCodecUnlessSet) {
  CompressionPolicy automatic{CompressionPolicyOptions{}};
  EXPECT_TRUE(automatic.error_feedback(parse_codec_spec("sign")));
  EXPECT_TRUE(automatic.error_feedback(parse_codec_spec("topk:0.1")));
  EXPECT_FALSE(automatic.error_feedback(parse_codec_spec("randomk:0.1")));
  EXPECT_FALSE(automatic.error_feedback(parse_codec_spec("bf16")));
  EXPECT_FALSE(automatic.error_feedback(parse_codec_spec("none")));
  CompressionPolicy forced({.error_feedback = true});
  EXPECT_TRUE(forced.error_feedback(parse_codec_spec("randomk:0.1")));
  EXPECT_FALSE(forced.error_feedback(parse_codec_spec("none")));
}

TEST(CompressionPolicyTest, BadOptionsAreRefused) {
  EXPECT_THROW(CompressionPolicy({.min_elements = -1}), InvalidArgument);
  EXPECT_THROW(CompressionPolicy({.warmup_steps = -5}), InvalidArgument);
  EXPECT_THROW(CompressionPolicy({.momentum = 1.0f}), InvalidArgument);
  EXPECT_THROW(parse_compression_schedule("int8@100,none@50"), InvalidArgument);
  EXPECT_THROW(parse_compression_schedule("int8@x"), InvalidArgument);
  EXPECT_THROW(parse_compression_schedule("lz4@10"), InvalidArgument);
  auto phases = parse_compression_schedule("topk:0.01,int8@20000");
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].from_step, 0);
  EXPECT_EQ(phases[1].codec.id, CodecId::kInt8);
}

TEST(CompressionPolicyTest, GlobMatching) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("layer*.weight", "layer12.weight"));
  EXPECT_FALSE(glob_match("layer*.weight", "layer12.bias"));
  EXPECT_TRUE(glob_match("l?yer", "layer"));
  EXPECT_TRUE(glob_match("*a*b*c", "xxaybzzc"));
  EXPECT_FALSE(glob_match("*a*b*c", "xxaybzz"));
  EXPECT_TRUE(glob_match("exact", "exact"));
  EXPECT_FALSE(glob_match("exact", "exactly"));
}

}  // namespace
}  // namespace braid::compress
