// write_file_atomically leaves either the old file or the complete new one, and no temporary.
#include "braid/base/atomic_file.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "braid/base/error.h"
#include "temp_dir.h"

namespace braid {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(scratch_.path().empty()); }

  std::size_t entries() const { return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), {})); }

  testing::TempDir scratch_{"braid-atomic-file"};
  fs::path dir_{scratch_.path()};
};

TEST_F(AtomicFileTest, ReplacesTheWholeFileAndLeavesNoTemporary) {
  const std::string path = (dir_ / "out.json").string();
  write_file_atomically(path, "a long first version");
  write_file_atomically(path, "short");
  EXPECT_EQ(read_whole_file(path), "short");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFileTest, AFailedWriteKeepsTheOldFileAndNamesThePath) {
  const std::string path = (dir_ / "out.json").string();
  write_file_atomically(path, "old");
  fs::create_directory(dir_ / "blocker");
  // rename() of a file over a directory fails (EISDIR) after the temporary was written.
  try {
    write_file_atomically((dir_ / "blocker").string(), "new");
    ADD_FAILURE() << "renaming over a directory succeeded";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("blocker"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_whole_file(path), "old");
  EXPECT_EQ(entries(), 2u);  // out.json and blocker/, no temporary
}

TEST_F(AtomicFileTest, ReadingAMissingFileIsAnInvalidArgumentNamingIt) {
  const std::string path = (dir_ / "missing.json").string();
  try {
    read_whole_file(path);
    ADD_FAILURE() << "read a missing file";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace braid
