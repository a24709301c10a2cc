// braid-serve's torch-free refusals, without a rank: the flags, the prompt and its characters
// (serve_test.cc shows the same errors reach the command line with exit code 2).
#include "braid/tools/braid_serve/serve_config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "braid/base/error.h"
#include "braid/tools/braid_serve/char_vocabulary.h"

namespace braid::serve {
namespace {

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(accepted)";
}

ServeConfig tiny() {
  ServeConfig c;
  c.width = 32;
  c.heads = 4;
  c.layers = 2;
  c.context = 48;
  c.max_new_tokens = 16;
  c.prompt = "a";
  return c;
}

#define EXPECT_REFUSED(call, text) \
  do { \
    std::string message = refusal([&] { call; }); \
    EXPECT_NE(message.find(text), std::string::npos) << message; \
  } while (0)

TEST(ServeConfigTest, ModelSizesFollowBraidTrainsAndTheOverrides) {
  ServeConfig c;
  c.model = "gpt-small";
  GptShape s = gpt_shape(c);
  EXPECT_EQ(s.width, 512);
  EXPECT_EQ(s.layers, 8);
  EXPECT_EQ(s.heads, 8);
  EXPECT_EQ(s.context, 128);
  EXPECT_EQ(gpt_shape(tiny()).width, 32);
  EXPECT_NO_THROW(validate(tiny(), 1));
}

TEST(ServeConfigTest, RefusesBadFlagsNamingThem) {
  ServeConfig c = tiny();
  c.tp = 3;
  EXPECT_REFUSED(validate(c, 3), "--tp 3 does not divide the model's 4 attention heads");
  EXPECT_REFUSED(validate(c, 1), "--tp 3 does not divide");  // the model's split before the job's size
  c.tp = 2;
  EXPECT_REFUSED(validate(c, 1), "--tp 2 with a job of 1 ranks: run braid-run -n 2");
  c.recompute = true;
  EXPECT_REFUSED(validate(c, 2), "--recompute runs the single-process reference");
  c = tiny();
  c.heads = 5;
  EXPECT_REFUSED(validate(c, 1), "--heads 5 does not divide --width 32");
  c = tiny();
  c.block_tokens = 0;
  EXPECT_REFUSED(validate(c, 1), "--block-tokens 0");
  c = tiny();
  c.max_new_tokens = 0;
  EXPECT_REFUSED(validate(c, 1), "--max-new-tokens 0");
}

TEST(ServeConfigTest, RefusesAPromptTooLongOrEmpty) {
  ServeConfig c = tiny();
  EXPECT_NO_THROW(check_fits_context(33, c));  // 33 + 16 - 1 = 48 positions: the whole context
  EXPECT_REFUSED(check_fits_context(34, c), "a prompt of 34 tokens and --max-new-tokens 16 need 49 positions");
  c.prompt = "";
  EXPECT_REFUSED(read_prompt(c), "empty prompt");
  std::string empty_file = ::testing::TempDir() + "/braid_serve_empty_prompt.txt";
  std::ofstream(empty_file).close();
  c.prompt_file = empty_file;
  EXPECT_REFUSED(read_prompt(c), "is empty");
  std::remove(empty_file.c_str());
}

TEST(ServeConfigTest, VocabularyRefusesUnknownCharactersByPosition) {
  CharVocabulary v({'\n', ' ', 'a', 'b'});
  EXPECT_EQ(v.encode("ab a"), (std::vector<std::int64_t>{2, 3, 1, 2}));
  EXPECT_EQ(v.decode({3, 0}), "b\n");
  EXPECT_REFUSED(v.encode("abc"), "'c' at position 2 is not in the model's vocabulary of 4 characters");
  EXPECT_REFUSED(v.encode("a\x01"), "byte 0x01 at position 1");
}

}  // namespace
}  // namespace braid::serve
