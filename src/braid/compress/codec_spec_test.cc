#include "braid/compress/codec_spec.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::compress {
namespace {

TEST(CodecSpecTest, ParsesEveryCodecAndPrintsItBack) {
  for (const char* text : {"none", "fp16", "bf16", "int8", "int8:512", "sign", "sign:4096", "topk:0.01",
                           "randomk:0.5", "powersgd:4", "topk:1"}) {
    CodecSpec spec = parse_codec_spec(text);
    EXPECT_EQ(to_string(spec), text);
    EXPECT_EQ(parse_codec_spec(to_string(spec)), spec);
  }
  EXPECT_EQ(parse_codec_spec("int8").effective_block(), kDefaultBlock);
  EXPECT_EQ(parse_codec_spec("int8:64").effective_block(), 64u);
  EXPECT_EQ(parse_codec_spec("powersgd:2").rank, 2u);
  EXPECT_DOUBLE_EQ(parse_codec_spec("topk:0.25").ratio, 0.25);
}

TEST(CodecSpecTest, RefusesBadSpecsWithTheReason) {
  struct Case {
    const char* text;
    const char* why;
  };
  for (Case c : {Case{"zstd", "unknown codec"}, Case{"topk", "needs a ratio"}, Case{"topk:0", "outside (0, 1]"},
                 Case{"topk:-0.1", "outside (0, 1]"}, Case{"randomk:1.5", "outside (0, 1]"},
                 Case{"topk:abc", "not a number"}, Case{"powersgd", "needs a rank"}, Case{"powersgd:0", "rank"},
                 Case{"int8:0", "block size"}, Case{"fp16:3", "takes no parameter"}, Case{"", "unknown codec"}}) {
    try {
      parse_codec_spec(c.text);
      ADD_FAILURE() << c.text << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(c.why), std::string::npos) << c.text << ": " << e.what();
    }
  }
}

TEST(CodecSpecTest, BiasedCodecsAreTheOnesErrorFeedbackDefaultsOnFor) {
  EXPECT_TRUE(parse_codec_spec("int8").biased());
  EXPECT_TRUE(parse_codec_spec("sign").biased());
  EXPECT_TRUE(parse_codec_spec("topk:0.1").biased());
  EXPECT_TRUE(parse_codec_spec("powersgd:1").biased());
  EXPECT_FALSE(parse_codec_spec("randomk:0.1").biased());
  EXPECT_FALSE(parse_codec_spec("fp16").biased());
  EXPECT_FALSE(parse_codec_spec("none").biased());
}

TEST(CodecSpecTest, SelectedCountRoundsAndClamps) {
  EXPECT_EQ(selected_count(0.01, 0), 0);
  EXPECT_EQ(selected_count(0.01, 10), 1);      // at least one
  EXPECT_EQ(selected_count(0.01, 1000), 10);
  EXPECT_EQ(selected_count(1.0, 7), 7);
  EXPECT_EQ(selected_count(0.5, 3), 2);        // llround: 1.5 -> 2
}

}  // namespace
}  // namespace braid::compress
