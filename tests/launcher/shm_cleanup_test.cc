#include "braid/tools/braid_run/shm_cleanup.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "process_runner.h"

namespace braid::launcher {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path& path) { std::ofstream(path) << "x"; }

TEST(ShmCleanup, RemovesExactlyThisJobsSegments) {
  braid::launcher_testing::TempDir dir;
  fs::path d = dir.path();
  for (const char* name : {"braid-abc-0", "braid-abc-ring-1-2", "braid-abcd-0", "braid-ab-0", "braid-abc", "other"}) {
    touch(d / name);
  }
  EXPECT_EQ(remove_job_segments("abc", d), 2u);
  EXPECT_FALSE(fs::exists(d / "braid-abc-0"));
  EXPECT_FALSE(fs::exists(d / "braid-abc-ring-1-2"));
  for (const char* kept : {"braid-abcd-0", "braid-ab-0", "braid-abc", "other"}) EXPECT_TRUE(fs::exists(d / kept)) << kept;
}

TEST(ShmCleanup, MissingDirectoryIsNotAnError) {
  EXPECT_EQ(remove_job_segments("abc", "/nonexistent/braid/dir"), 0u);
}

TEST(ShmCleanup, RejectsIdsThatCouldMatchOtherJobs) {
  EXPECT_THROW(remove_job_segments("", "/tmp"), InvalidArgument);
  EXPECT_THROW(remove_job_segments("a-b", "/tmp"), InvalidArgument);
  EXPECT_THROW(remove_job_segments("../x", "/tmp"), InvalidArgument);
  EXPECT_THROW(ShmJanitor("", "/tmp"), InvalidArgument);
}

TEST(ShmCleanup, JanitorRemovesAtDestruction) {
  braid::launcher_testing::TempDir dir;
  fs::path d = dir.path();
  {
    ShmJanitor janitor("f00d", d);
    touch(d / "braid-f00d-seg");
  }
  EXPECT_FALSE(fs::exists(d / "braid-f00d-seg"));
}

}  // namespace
}  // namespace braid::launcher
