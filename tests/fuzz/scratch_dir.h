// A private directory for the fuzz targets whose readers take paths (IDX files, the text
// corpus): created once per process under $TMPDIR, emptied between inputs, removed at exit
// (left behind only by a crash, for the reproducer's sake).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz_support.h"

namespace braid::fuzz {

class ScratchDir {
 public:
  explicit ScratchDir(const char* name)
      : path_(std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  void clear() {
    for (const auto& entry : std::filesystem::directory_iterator(path_)) std::filesystem::remove_all(entry.path());
  }
  std::string write(const std::string& name, std::string_view bytes) const {
    std::string file = (path_ / name).string();
    std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return file;
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// The process's scratch directory, made on first use and removed when the process exits.
inline ScratchDir& scratch_dir() {
  static ScratchDir dir(target_name);
  return dir;
}

}  // namespace braid::fuzz
