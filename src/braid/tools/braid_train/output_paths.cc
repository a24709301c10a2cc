#include "braid/tools/braid_train/output_paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/unique_fd.h"
#include "braid/collectives/failure_agreement.h"

namespace braid::train {
namespace {

namespace fs = std::filesystem;

// Why a new file cannot be created in `dir` ("" when it can): the outputs are written to a
// temporary file there and renamed, so that is exactly what they need.
std::string why_no_new_file_in(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return fmt::format("{} does not exist", dir.string());
  if (!fs::is_directory(dir, ec)) return fmt::format("{} is not a directory", dir.string());
  fs::path probe = dir / fmt::format(".braid-train-probe.{}", ::getpid());
  UniqueFd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return fmt::format("cannot create a file in {}: {}", dir.string(), std::strerror(errno));
  ::unlink(probe.c_str());
  return "";
}

std::string why_unwritable_file(const std::string& path) {
  fs::path file(path);
  std::error_code ec;
  if (fs::is_directory(file, ec)) return fmt::format("{} is a directory", path);
  return why_no_new_file_in(file.has_parent_path() ? file.parent_path() : fs::path("."));
}

std::string why_unwritable_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fmt::format("cannot create {}: {}", dir, ec.message());
  return why_no_new_file_in(dir);
}

// The first problem of this rank's outputs, as "--flag PATH: reason" ("" when none).
std::string this_ranks_problem(const TrainConfig& c, int rank) {
  struct Output {
    const char* flag;
    const std::string& path;
    bool directory;
    bool every_rank;  // written by every rank, or by rank 0 only
  };
  for (const Output& out : {Output{"--json", c.json_path, false, false},
                            Output{"--export", c.export_path, false, false},
                            Output{"--checkpoint-dir", c.checkpoint_dir, true, false},
                            Output{"--trace", c.trace_dir, true, true}}) {
    if (out.path.empty() || (rank != 0 && !out.every_rank)) continue;
    std::string why = out.directory ? why_unwritable_dir(out.path) : why_unwritable_file(out.path);
    if (!why.empty()) return fmt::format("{} {}: {}", out.flag, out.path, why);
  }
  return "";
}

}  // namespace

void check_output_paths(Communicator& comm, const TrainConfig& config) {
  std::string problem = this_ranks_problem(config, comm.rank());
  std::exception_ptr failure;
  if (!problem.empty()) {
    failure = std::make_exception_ptr(InvalidArgument(
        {.rank = comm.rank(), .op = "braid-train"}, fmt::format("{} (checked before the first step)", problem)));
  }
  rethrow_first_failure(comm, failure, "braid-train");
}

}  // namespace braid::train
