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

TEST(EnvTest, EmptyCountsAsUnset) {
  ::setenv("BRAID_HOST_ID", "", 1);
  EXPECT_FALSE(get(kHostId).has_value());
  ::unsetenv("BRAID_HOST_ID");
}

// docs/environment.md must list every BRAID_* variable with its default.
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
  }
}

}  // namespace
}  // namespace braid::env
