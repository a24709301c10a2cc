// The one size parser every tool uses: units, the exact limits of 64 bits at every unit, and
// the errors for what cannot be a size.
#include "braid/base/byte_size.h"

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::uint64_t parse(const std::string& text, ByteSizeRules rules = {}) { return parse_byte_size(text, "-b", rules); }

// The error's detail for `text`, which must be refused.
std::string refusal(const std::string& text, ByteSizeRules rules = {}) {
  try {
    parse(text, rules);
  } catch (const InvalidArgument& e) {
    return e.detail();
  }
  ADD_FAILURE() << "'" << text << "' was accepted";
  return "";
}

TEST(ByteSizeTest, UnitsBinaryAndDecimal) {
  EXPECT_EQ(parse("8"), 8u);
  EXPECT_EQ(parse("0"), 0u);
  EXPECT_EQ(parse("8B"), 8u);
  EXPECT_EQ(parse("64K"), 64u << 10);
  EXPECT_EQ(parse("256M"), 256u << 20);
  EXPECT_EQ(parse("1G"), 1u << 30);
  EXPECT_EQ(parse("2T"), 2ull << 40);
  EXPECT_EQ(parse("4KiB"), 4096u);
  EXPECT_EQ(parse("80GiB"), 80ull << 30);
  EXPECT_EQ(parse("3TiB"), 3ull << 40);
  EXPECT_EQ(parse("64KB"), 64000u);
  EXPECT_EQ(parse("80GB"), 80000000000ull);
  EXPECT_EQ(parse("2TB"), 2000000000000ull);
  EXPECT_EQ(parse("16m"), 16u << 20);      // case-insensitive
  EXPECT_EQ(parse("16mib"), 16u << 20);
  EXPECT_EQ(parse(" 16 M "), 16u << 20);  // spaces around and between
}

TEST(ByteSizeTest, LargestValueAtEveryUnitIsExact) {
  EXPECT_EQ(parse("18446744073709551615"), kMax);
  EXPECT_EQ(parse("18014398509481983K"), 18014398509481983ull << 10);
  EXPECT_EQ(parse("17592186044415M"), 17592186044415ull << 20);
  EXPECT_EQ(parse("17179869183G"), 17179869183ull << 30);
  EXPECT_EQ(parse("16777215T"), 16777215ull << 40);
  EXPECT_EQ(parse("18446744073709551KB"), 18446744073709551000ull);
}

TEST(ByteSizeTest, OverflowIsRefusedAtEveryUnit) {
  for (const char* text : {"18446744073709551616", "99999999999999999999", "18014398509481984K", "17592186044416M",
                           "17592186044417M", "17179869184G", "16777216T", "18446744073709552KB",
                           "18446744073709552MB", "99999999999999999999999999G"}) {
    EXPECT_NE(refusal(text).find("too large"), std::string::npos) << text << ": " << refusal(text);
  }
}

TEST(ByteSizeTest, MessagesNameTheFlagAndTheText) {
  const std::string detail = refusal("17179869184G");
  EXPECT_EQ(detail.rfind("-b: '17179869184G' is too large", 0), 0u) << detail;
  EXPECT_NE(detail.find("18446744073709551615 bytes"), std::string::npos) << detail;
}

TEST(ByteSizeTest, JunkEmptyNegativeAndUnknownUnitsAreRefused) {
  for (const char* text : {"", "   ", "abc", "M", "12X", "12 gigs", "1..5", "0x10", "1e", "--5", "5-", "+"}) {
    EXPECT_NE(refusal(text).find("cannot read"), std::string::npos) << text << ": " << refusal(text);
  }
  EXPECT_NE(refusal("80 gigs").find("80GiB"), std::string::npos);  // shows the accepted forms
  EXPECT_NE(refusal("-5").find("is negative"), std::string::npos);
  EXPECT_NE(refusal("-5G").find("is negative"), std::string::npos);
}

TEST(ByteSizeTest, FractionsOnlyWhereAllowed) {
  EXPECT_NE(refusal("1.5G").find("not a whole number"), std::string::npos);
  EXPECT_NE(refusal("1e9").find("not a whole number"), std::string::npos);
  const ByteSizeRules fractions{.fractions = true};
  EXPECT_EQ(parse("1.5G", fractions), 3ull << 29);
  EXPECT_EQ(parse("1.5e9", fractions), 1500000000u);
  EXPECT_EQ(parse("0.5K", fractions), 512u);
  EXPECT_EQ(parse("1.3K", fractions), 1331u);  // rounded to the nearest byte
  EXPECT_NE(refusal("1e300", fractions).find("too large"), std::string::npos);
  EXPECT_NE(refusal("1e999", fractions).find("too large"), std::string::npos);
  EXPECT_NE(refusal("16777216.5T", fractions).find("too large"), std::string::npos);
  EXPECT_NE(refusal("18446744073709551616.0", fractions).find("too large"), std::string::npos);
  EXPECT_NE(refusal("1.5.5G", fractions).find("cannot read"), std::string::npos);
}

TEST(ByteSizeTest, ZeroOnlyWhereAllowed) {
  const ByteSizeRules positive{.fractions = true, .zero = false};
  EXPECT_NE(refusal("0", positive).find("must be greater than zero"), std::string::npos);
  EXPECT_NE(refusal("0.1", positive).find("must be greater than zero"), std::string::npos);  // rounds to 0
  EXPECT_NE(refusal("-5GB", positive).find("must be greater than zero"), std::string::npos);
  EXPECT_EQ(parse("1", positive), 1u);
}

}  // namespace
}  // namespace braid
