#include "braid/tools/braid_run/exit_status.h"

#include <csignal>

#include <gtest/gtest.h>

namespace braid::launcher {
namespace {

TEST(ExitStatus, ExitedRank) {
  ExitStatus status = ExitStatus::exited(3);
  EXPECT_FALSE(status.success());
  EXPECT_EQ(status.shell_code(), 3);
  EXPECT_EQ(status.describe(), "exited with code 3");
  EXPECT_TRUE(ExitStatus::exited(0).success());
}

TEST(ExitStatus, SignaledRank) {
  ExitStatus status = ExitStatus::signaled(SIGKILL);
  EXPECT_FALSE(status.success());
  EXPECT_EQ(status.shell_code(), 137);
  EXPECT_EQ(status.describe(), "was killed by signal 9 (SIGKILL)");
  EXPECT_EQ(ExitStatus::signaled(SIGSEGV).describe(), "was killed by signal 11 (SIGSEGV)");
}

TEST(ExitStatus, SignalNames) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(signal_name(SIGRTMIN + 2), "SIGRTMIN+2");
  EXPECT_EQ(signal_name(1000), "unknown signal");
}

TEST(ExitStatus, FromChildInfo) {
  EXPECT_EQ(exit_status_from_child_info(CLD_EXITED, 4).shell_code(), 4);
  EXPECT_EQ(exit_status_from_child_info(CLD_KILLED, SIGTERM).shell_code(), 128 + SIGTERM);
  EXPECT_EQ(exit_status_from_child_info(CLD_DUMPED, SIGABRT).describe(), "was killed by signal 6 (SIGABRT)");
}

}  // namespace
}  // namespace braid::launcher
