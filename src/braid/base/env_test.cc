#include "braid/base/env.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "braid/base/error.h"

namespace braid::env {
namespace {

TEST(EnvTest, DefaultsApplyWhenUnset) {
  ::unsetenv("BRAID_TIMEOUT");
  EXPECT_EQ(get_double(kTimeout), 300.0);
  ::setenv("BRAID_TIMEOUT", "2.5", 1);
  EXPECT_EQ(get_double(kTimeout), 2.5);
  ::unsetenv("BRAID_TIMEOUT");
}

TEST(EnvTest, MalformedValuesNameTheVariable) {
  ::setenv("BRAID_SPIN_US", "fast", 1);
  try {
    get_int(kSpinUs);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("BRAID_SPIN_US='fast'"), std::string::npos) << e.what();
  }
  ::unsetenv("BRAID_SPIN_US");
}

// The values issue 16 found accepted silently, each refused naming the variable, the value
// and what is allowed.
TEST(EnvTest, OutOfSetValuesAreRefused) {
  struct Case {
    const Variable& var;
    const char* value;
    const char* allowed;
  };
  const Case cases[] = {
      {kTimeout, "nan", "a number in [0.001, 1000000000], or -1"},
      {kTimeout, "inf", "a number in [0.001, 1000000000], or -1"},
      {kTimeout, "0", "a number in [0.001, 1000000000], or -1"},
      {kTimeout, "-2", "a number in [0.001, 1000000000], or -1"},
      {kLogLevel, "bogus", "one of error, warn, info or debug"},
      {kChecksum, "2", "one of 0 or 1"},
      {kShmChunkBytes, "0", "an integer in [4096, 1073741824]"},
      {kSpinUs, "-1", "an integer in [0, 1000000]"},
      {kShmRingBytes, "1099511627776", "a power of two in [4096, 1073741824]"},
      {kShmRingBytes, "3000", "a power of two in [4096, 1073741824]"},
      {kShmSliceBytes, "100", "a multiple of 64 in [64, 1073741824]"},
      {kMasterPort, "70000", "an integer in [1, 65535]"},
      {kJobId, "a-b", "1 to 64 letters, digits or _"},
      {kTransport, "udp", "one of auto, shm or tcp"},
      {kCompressHostStriped, "yes", "one of auto, 0 or 1"},
  };
  for (const Case& c : cases) {
    ::setenv(std::string(c.var.name).c_str(), c.value, 1);
    try {
      check_all();
      ADD_FAILURE() << c.var.name << "=" << c.value << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("{}='{}' is not {}", c.var.name, c.value, c.allowed)),
                std::string::npos) << e.what();
    }
    ::unsetenv(std::string(c.var.name).c_str());
  }
}

TEST(EnvTest, MinusOneTimeoutMeansNever) {
  ::setenv("BRAID_TIMEOUT", "-1", 1);
  EXPECT_EQ(get_double(kTimeout), -1.0);
  ::unsetenv("BRAID_TIMEOUT");
}

TEST(EnvTest, TypedAccessorsRefuseWhatCheckRefuses) {
  ::setenv("BRAID_CHECKSUM", "2", 1);
  EXPECT_THROW(get_choice(kChecksum), InvalidArgument);
  ::unsetenv("BRAID_CHECKSUM");
  ::setenv("BRAID_SHM_CHUNK_BYTES", "0", 1);
  EXPECT_THROW(get_int(kShmChunkBytes), InvalidArgument);
  ::unsetenv("BRAID_SHM_CHUNK_BYTES");
  EXPECT_EQ(get_int(kShmChunkBytes), 32768);
}

// A declaration whose own default it would refuse is a bug in env.h.
TEST(EnvTest, EveryDefaultIsAllowed) {
  for (const Variable& var : braid_variables()) {
    if (!var.default_value.empty()) {
      EXPECT_EQ(problem(var, var.default_value), "") << var.name;
    }
  }
}

TEST(EnvTest, EmptyCountsAsUnset) {
  ::setenv("BRAID_HOST_ID", "", 1);
  EXPECT_FALSE(get(kHostId).has_value());
  ::unsetenv("BRAID_HOST_ID");
}

// docs/environment.md must list every BRAID_* variable with its default and, for those with a
// declared set, what it allows (in env::describe's words).
TEST(EnvDocsTest, EveryVariableIsDocumented) {
  std::ifstream file(std::string(BRAID_SOURCE_DIR) + "/docs/environment.md");
  ASSERT_TRUE(file) << "docs/environment.md not found";
  std::stringstream text;
  text << file.rdbuf();
  for (const Variable& var : braid_variables()) {
    std::string row = fmt::format("| `{}` |", var.name);
    auto at = text.str().find(row);
    ASSERT_NE(at, std::string::npos) << var.name << " is missing from docs/environment.md";
    if (!var.default_value.empty()) {
      std::string line = text.str().substr(at, text.str().find('\n', at) - at);
      EXPECT_NE(line.find(fmt::format("`{}`", var.default_value)), std::string::npos)
          << var.name << ": the documented default differs from " << var.default_value;
    }
    if (var.allowed.kind != ValueKind::kText) {
      std::string line = text.str().substr(at, text.str().find('\n', at) - at);
      EXPECT_NE(line.find(describe(var.allowed)), std::string::npos)
          << var.name << ": docs/environment.md should say it allows " << describe(var.allowed);
    }
  }
}

}  // namespace
}  // namespace braid::env
