#include "braid/base/check.h"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

namespace braid {
namespace {

enum class Colour { kRed = 1, kBlue = 2 };

// The message of the Error `run` throws, which must be of class Kind.
template <class Kind, class Run>
std::string message_of(Run run) {
  try {
    run();
  } catch (const Kind& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception: ") + e.what();
  }
  return "nothing thrown";
}

TEST(CheckTest, PassingChecksThrowNothing) {
  EXPECT_NO_THROW(BRAID_CHECK_EQ(2, 2, InvalidArgument, {}));
  EXPECT_NO_THROW(BRAID_CHECK_NE(1, 2, InvalidArgument, {}));
  EXPECT_NO_THROW(BRAID_CHECK_LT(1, 2, InvalidArgument, {}));
  EXPECT_NO_THROW(BRAID_CHECK_LE(2, 2, InvalidArgument, {}));
  EXPECT_NO_THROW(BRAID_CHECK_GT(3, 2, InvalidArgument, {}));
  EXPECT_NO_THROW(BRAID_CHECK_GE(2, 2, InvalidArgument, {}));
  EXPECT_NO_THROW(BRAID_CHECK(1 + 1 == 2, InvalidArgument, {}));
}

TEST(CheckTest, MessageNamesBothExpressionsBothValuesAndTheContext) {
  std::size_t got = 12;
  const std::size_t kWant = 40;
  std::string message = message_of<Corrupt>([&] {
    BRAID_CHECK_EQ(got, kWant, Corrupt, {.rank = 1, .peer = 0, .op = "hello"}, "hello frame from {}", "10.0.0.2");
  });
  EXPECT_EQ(message, "braid::Corrupt [rank 1, peer 0, op hello]: hello frame from 10.0.0.2: expected got == kWant (12 vs 40)");
}

TEST(CheckTest, WithoutADescriptionTheExpectationStandsAlone) {
  int count = -1;
  EXPECT_EQ(message_of<InvalidArgument>([&] { BRAID_CHECK_GE(count, 0, InvalidArgument, {.op = "send"}); }),
            "braid::InvalidArgument [op send]: expected count >= 0 (-1 vs 0)");
  EXPECT_EQ(message_of<Mismatch>([&] { BRAID_CHECK(count > 0, Mismatch, {.rank = 2}, "count on rank {}", 2); }),
            "braid::Mismatch [rank 2]: count on rank 2: expected count > 0");
}

TEST(CheckTest, EveryComparisonFailsWithItsOperator) {
  EXPECT_EQ(message_of<InvalidArgument>([] { BRAID_CHECK_NE(1, 1, InvalidArgument, {}); }),
            "braid::InvalidArgument: expected 1 != 1 (1 vs 1)");
  EXPECT_EQ(message_of<InvalidArgument>([] { BRAID_CHECK_LT(2, 2, InvalidArgument, {}); }),
            "braid::InvalidArgument: expected 2 < 2 (2 vs 2)");
  EXPECT_EQ(message_of<InvalidArgument>([] { BRAID_CHECK_LE(3, 2, InvalidArgument, {}); }),
            "braid::InvalidArgument: expected 3 <= 2 (3 vs 2)");
  EXPECT_EQ(message_of<InvalidArgument>([] { BRAID_CHECK_GT(2, 2, InvalidArgument, {}); }),
            "braid::InvalidArgument: expected 2 > 2 (2 vs 2)");
  EXPECT_EQ(message_of<InvalidArgument>([] { BRAID_CHECK_GE(1, 2, InvalidArgument, {}); }),
            "braid::InvalidArgument: expected 1 >= 2 (1 vs 2)");
}

TEST(CheckTest, IntegersCompareByValueAcrossSignedness) {
  // With the built-in operators -1 converts to 2^64 - 1 and these would go the other way.
  EXPECT_NO_THROW(BRAID_CHECK_LT(-1, std::uint64_t{0}, InvalidArgument, {}));
  EXPECT_NO_THROW(BRAID_CHECK_NE(-1, ~std::uint64_t{0}, InvalidArgument, {}));
  EXPECT_THROW(BRAID_CHECK_GE(std::int64_t{-1}, 0u, InvalidArgument, {}), InvalidArgument);
  EXPECT_NO_THROW(BRAID_CHECK_EQ(std::uint8_t{200}, 200, InvalidArgument, {}));
}

TEST(CheckTest, OperandsAreEvaluatedOnceAndTheMessageOnlyOnFailure) {
  int evaluated = 0;
  int described = 0;
  auto value = [&] { return ++evaluated; };
  auto context = [&] {
    ++described;
    return ErrorContext{.op = "x"};
  };
  BRAID_CHECK_EQ(value(), 1, InvalidArgument, context(), "{}", ++described);
  EXPECT_EQ(evaluated, 1);
  EXPECT_EQ(described, 0);
  EXPECT_THROW(BRAID_CHECK_EQ(value(), 1, InvalidArgument, context(), "{}", ++described), InvalidArgument);
  EXPECT_EQ(evaluated, 2);
  EXPECT_EQ(described, 2);
}

TEST(CheckTest, PrintsStringsAndEnumsWithoutAFormatter) {
  std::string name = "ring";
  EXPECT_EQ(message_of<InvalidArgument>([&] { BRAID_CHECK_EQ(name, std::string("tree"), InvalidArgument, {}); }),
            "braid::InvalidArgument: expected name == std::string(\"tree\") (ring vs tree)");
  EXPECT_EQ(message_of<Mismatch>([] { BRAID_CHECK_EQ(Colour::kRed, Colour::kBlue, Mismatch, {}); }),
            "braid::Mismatch: expected Colour::kRed == Colour::kBlue (1 vs 2)");
}

TEST(CheckTest, IsOneStatement) {
  // Usable as the body of an unbraced if / else, like any statement.
  bool checked = false;
  if (!checked)
    BRAID_CHECK_EQ(1, 1, InvalidArgument, {});
  else
    BRAID_CHECK(false, InvalidArgument, {});
}

}  // namespace
}  // namespace braid
