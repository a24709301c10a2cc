// Reading the units a user types, and the errors for what cannot be read.
#include "braid/plan/units.h"

#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "braid/plan/precision.h"

namespace braid::plan {
namespace {

TEST(UnitsTest, CountsInTheFormsPeopleWrite) {
  EXPECT_DOUBLE_EQ(parse_count("7B", "--params"), 7e9);
  EXPECT_DOUBLE_EQ(parse_count("70e9", "--params"), 70e9);
  EXPECT_DOUBLE_EQ(parse_count("1.3T", "--params"), 1.3e12);
  EXPECT_DOUBLE_EQ(parse_count("4096", "--params"), 4096);
  EXPECT_DOUBLE_EQ(parse_count("32K", "--params"), 32e3);
  EXPECT_DOUBLE_EQ(parse_count("175 B", "--params"), 175e9);
}

TEST(UnitsTest, BytesDecimalAndBinary) {
  EXPECT_DOUBLE_EQ(parse_bytes("80GiB", "--memory"), 80.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(parse_bytes("80GB", "--memory"), 80e9);
  EXPECT_DOUBLE_EQ(parse_bytes("64K", "--bytes"), 65536);  // as braid-bench's -b 64K
  EXPECT_DOUBLE_EQ(parse_bytes("256M", "--bytes"), 256.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(parse_bytes("1.5e9", "--bytes"), 1.5e9);
  EXPECT_DOUBLE_EQ(parse_bytes("512", "--bytes"), 512);
}

TEST(UnitsTest, BandwidthBitsAndBytes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps", "--bandwidth"), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gb/s", "--bandwidth"), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25GB/s", "--bandwidth"), 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25GBps", "--bandwidth"), 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Mbps", "--bandwidth"), 12.5e6);
}

TEST(UnitsTest, TimesAndFlopRates) {
  EXPECT_DOUBLE_EQ(parse_time("5us", "--alpha"), 5e-6);
  EXPECT_DOUBLE_EQ(parse_time("1.5ms", "--alpha"), 1.5e-3);
  EXPECT_DOUBLE_EQ(parse_time("800ns", "--alpha"), 800e-9);
  EXPECT_DOUBLE_EQ(parse_time("2", "--alpha"), 2);
  EXPECT_DOUBLE_EQ(parse_flop_rate("989T", "--device-flops"), 989e12);
  EXPECT_DOUBLE_EQ(parse_flop_rate("312TFLOPS", "--device-flops"), 312e12);
  EXPECT_DOUBLE_EQ(parse_flop_rate("1.98e15", "--device-flops"), 1.98e15);
}

// The message names the field, repeats the bad text and shows accepted forms.
void expect_error(const std::string& what, const std::string& field, const std::string& needle) {
  try {
    parse_bytes(what, field);
    FAIL() << "no error for '" << what << "'";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(e.detail().find(field), std::string::npos) << e.detail();
    EXPECT_NE(e.detail().find(needle), std::string::npos) << e.detail();
  }
}

TEST(UnitsTest, BadValuesNameTheFieldAndTheForms) {
  expect_error("80 gigs", "--memory", "80GiB");
  expect_error("abc", "--memory", "'abc'");
  expect_error("", "--memory", "80GiB");
  expect_error("0", "--memory", "greater than zero");
  expect_error("-5GB", "--memory", "greater than zero");
  EXPECT_THROW(parse_count("7X", "--params"), InvalidArgument);
  EXPECT_THROW(parse_bandwidth("25GB", "--bandwidth"), InvalidArgument);  // a size, not a rate
  EXPECT_THROW(parse_time("5 parsecs", "--alpha"), InvalidArgument);
  EXPECT_THROW(parse_count("1e999", "--params"), InvalidArgument);  // not finite
}

TEST(UnitsTest, RangeChecksSayTheRange) {
  try {
    require_range("tp", 0, 1, 64, "tp splits the heads");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(e.detail().find("tp = 0 is out of range [1, 64]: tp splits the heads"), std::string::npos) << e.detail();
  }
  EXPECT_NO_THROW(require_range("tp", 64, 1, 64));
}

TEST(UnitsTest, PrecisionsAndUnknownNames) {
  EXPECT_EQ(precision_bytes("fp32"), 4);
  EXPECT_EQ(precision_bytes("bf16"), 2);
  EXPECT_EQ(precision_bytes("fp8"), 1);
  EXPECT_EQ(precision_bytes("int4"), 0.5);
  try {
    precision_bytes("fp12", "--dtype");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(e.detail().find("--dtype: unknown precision 'fp12'"), std::string::npos) << e.detail();
  }
}

TEST(UnitsTest, FormattingForTables) {
  EXPECT_EQ(format_bytes(14e9), "14.00 GB (13.04 GiB)");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_seconds(0.0817), "81.70 ms");
  EXPECT_EQ(format_seconds(2.5e-6), "2.50 us");
  EXPECT_EQ(format_rate(25e9), "25.00 GB/s");
}

}  // namespace
}  // namespace braid::plan
