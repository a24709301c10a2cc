#include "braid/tools/braid_run/shm_cleanup.h"

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/base/log.h"

namespace braid::launcher {

namespace fs = std::filesystem;

namespace {

void check_job_id(const std::string& job_id) {
  if (job_id.empty() || job_id.find_first_of("/-") != std::string::npos) {
    throw InvalidArgument({.op = "shm cleanup"}, fmt::format("bad job id '{}'", job_id));
  }
}

}  // namespace

std::size_t remove_job_segments(const std::string& job_id, const fs::path& directory) {
  check_job_id(job_id);
  const std::string prefix = fmt::format("braid-{}-", job_id);
  std::error_code ec;
  std::size_t removed = 0;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->path().filename().string().starts_with(prefix)) continue;
    std::error_code remove_ec;
    if (fs::remove(it->path(), remove_ec)) {
      ++removed;
      log::debug("braid-run: removed leftover shared-memory segment {}", it->path().string());
    }
  }
  return removed;
}

ShmJanitor::ShmJanitor(std::string job_id, fs::path directory)
    : job_id_(std::move(job_id)), directory_(std::move(directory)) {
  check_job_id(job_id_);  // now, while throwing is still fine
}

ShmJanitor::~ShmJanitor() {
  try {
    remove_job_segments(job_id_, directory_);
  } catch (...) {  // a destructor must not throw; the id was validated in the constructor
  }
}

}  // namespace braid::launcher
