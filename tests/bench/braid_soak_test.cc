// braid-soak (bench/soak/) for a few seconds through braid-run: the long soak of
// docs/reliability.md is a benchmark, this keeps its program working. Every drawn call is
// checked against its exact value, so "0 wrong elements" and exit 0 mean every collective,
// dtype and algorithm it drew gave exact results; the CSV has one row per report with every
// rank's memory and descriptors. A bad flag is refused naming it. The durations are short and
// nothing here depends on speed: a slow machine only draws fewer calls.
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "launch.h"

namespace braid::testing {
namespace {

LaunchResult soak(int ranks, std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  LaunchOptions options;
  options.ranks = ranks;
  options.program = tool_path("braid-soak");
  options.args = std::move(args);
  options.env = std::move(env);
  options.env.emplace("BRAID_TIMEOUT", "60");
  options.timeout_seconds = 120;
  return launch(options);
}

int lines_of(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// BRAID_TLS=on (TCP inside TLS 1.3, docs/transports.md#tls) is the third run: every operation
// through records must give the same exact results.
TEST(BraidSoakTest, MixedCallsOverSharedMemoryTcpAndTlsAreAllExact) {
  for (auto [transport, tls] : {std::pair{"auto", "off"}, {"tcp", "off"}, {"tcp", "on"}}) {
    const std::string csv = ::testing::TempDir() + "/soak-" + transport + "-" + tls + ".csv";
    std::remove(csv.c_str());
    LaunchResult r = soak(3, {"--seconds", "3", "--report-every", "1", "--split-every", "20", "--csv", csv},
                          {{"BRAID_TRANSPORT", transport}, {"BRAID_TLS", tls}});
    ASSERT_EQ(r.exit_code, 0) << transport << " tls " << tls << "\n" << r.output;
    EXPECT_EQ(r.count(" 0 wrong elements"), 1) << r.output;
    EXPECT_EQ(r.count("rank 2: rss"), 1) << r.output;  // the growth line of every rank
    EXPECT_GE(lines_of(csv), 3) << "a header and a row per report";  // reports at 0 s and >= 3 s at least
    std::ifstream in(csv);
    std::string header;
    std::getline(in, header);
    EXPECT_EQ(header, "seconds,steps,calls_per_rank,wrong,rss_kib_0,rss_kib_1,rss_kib_2,fds_0,fds_1,fds_2");
  }
}

TEST(BraidSoakTest, ABadFlagIsRefusedNamingIt) {
  LaunchResult r = soak(2, {"--seconds", "1", "--max-bytes", "0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_GE(r.count("--max-bytes"), 1) << r.output;
}

}  // namespace
}  // namespace braid::testing
