// LinePrefixer is pure: every case feeds bytes and checks exactly what would be written.
// OutputForwarder is checked over real pipes for the EOF flush.
#include "braid/tools/braid_run/output_forwarder.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

namespace braid::launcher {
namespace {

TEST(LinePrefixer, PrefixesOneCompleteLine) {
  LinePrefixer lines("[2] ");
  EXPECT_EQ(lines.feed("hello\n"), "[2] hello\n");
  EXPECT_FALSE(lines.has_pending());
}

TEST(LinePrefixer, PrefixesEveryLineOfAChunk) {
  LinePrefixer lines("[0] ");
  EXPECT_EQ(lines.feed("a\nbb\n\nccc\n"), "[0] a\n[0] bb\n[0] \n[0] ccc\n");
}

TEST(LinePrefixer, HoldsAPartialLineUntilItsNewline) {
  LinePrefixer lines("[1] ");
  EXPECT_EQ(lines.feed("par"), "");
  EXPECT_TRUE(lines.has_pending());
  EXPECT_EQ(lines.feed("tial"), "");
  EXPECT_EQ(lines.feed(" line\nnext"), "[1] partial line\n");
  EXPECT_EQ(lines.feed("\n"), "[1] next\n");
  EXPECT_FALSE(lines.has_pending());
}

TEST(LinePrefixer, FlushEndsTheTrailingPartialLine) {
  LinePrefixer lines("[3] ");
  EXPECT_EQ(lines.feed("done\nno newline"), "[3] done\n");
  EXPECT_EQ(lines.flush(), "[3] no newline\n");
  EXPECT_EQ(lines.flush(), "");
}

TEST(LinePrefixer, FlushWithNothingPendingIsEmpty) {
  LinePrefixer lines("[0] ");
  EXPECT_EQ(lines.flush(), "");
  EXPECT_EQ(lines.feed("x\n"), "[0] x\n");
  EXPECT_EQ(lines.flush(), "");
}

TEST(LinePrefixer, ByteByByteEqualsWholeChunk) {
  const std::string text = "first\nsecond line\n\nthird";
  LinePrefixer whole("[7] ");
  LinePrefixer bytes("[7] ");
  std::string expected = whole.feed(text);
  expected += whole.flush();
  std::string got;
  for (char c : text) got += bytes.feed(std::string_view(&c, 1));
  got += bytes.flush();
  EXPECT_EQ(got, expected);
  EXPECT_EQ(got, "[7] first\n[7] second line\n[7] \n[7] third\n");
}

TEST(LinePrefixer, KeepsCarriageReturnsAndBinaryBytes) {
  LinePrefixer lines("[0] ");
  std::string chunk("a\rb\0c\r\n", 7);
  EXPECT_EQ(lines.feed(chunk), std::string("[0] a\rb\0c\r\n", 11));
}

TEST(LinePrefixer, CutsOverlongLines) {
  LinePrefixer lines("> ", 4);
  EXPECT_EQ(lines.feed("abcdefghij"), "> abcd\n> efgh\n");
  EXPECT_EQ(lines.feed("k\n"), "> ijk\n");
  EXPECT_EQ(lines.flush(), "");
  EXPECT_EQ(lines.feed("wxyz\n"), "> wxyz\n");  // exactly max_line: not cut
  EXPECT_EQ(lines.feed("1234"), "");
  EXPECT_EQ(lines.feed("5"), "> 1234\n");
  EXPECT_EQ(lines.flush(), "> 5\n");
}

TEST(OutputForwarder, ForwardsLinesAndFlushesAtEof) {
  int source[2], sink[2];
  ASSERT_EQ(::pipe2(source, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(sink, O_CLOEXEC | O_NONBLOCK), 0);
  UniqueFd sink_read(sink[0]), sink_write(sink[1]), source_write(source[1]);
  OutputForwarder forwarder{UniqueFd(source[0]), sink_write.get(), "[5] "};

  ASSERT_EQ(::write(source_write.get(), "one\ntw", 6), 6);
  forwarder.pump();
  source_write.reset();  // EOF
  forwarder.pump();
  EXPECT_FALSE(forwarder.open());

  char buffer[64];
  ssize_t n = ::read(sink_read.get(), buffer, sizeof buffer);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buffer, static_cast<std::size_t>(n)), "[5] one\n[5] tw\n");
}

TEST(OutputForwarder, SurvivesAReaderThatWentAway) {
  int source[2], sink[2];
  ASSERT_EQ(::pipe2(source, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(sink, O_CLOEXEC), 0);
  UniqueFd source_write(source[1]), sink_write(sink[1]);
  ::close(sink[0]);  // nobody reads braid-run's stdout any more
  sighandler_t previous = ::signal(SIGPIPE, SIG_IGN);  // braid-run blocks it; the test ignores it
  OutputForwarder forwarder{UniqueFd(source[0]), sink_write.get(), "[0] "};
  ASSERT_EQ(::write(source_write.get(), "lost\n", 5), 5);
  forwarder.pump();  // must neither throw nor block
  source_write.reset();
  forwarder.pump();
  EXPECT_FALSE(forwarder.open());
  ::signal(SIGPIPE, previous);
}

}  // namespace
}  // namespace braid::launcher
