// Removing a job's shared-memory segments. Ranks name theirs /dev/shm/braid-<BRAID_JOB_ID>-*
// (transport/shm); a rank that crashes or is killed cannot unlink its own, and segments live
// until reboot, so braid-run removes them on every way a job ends.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace braid::launcher {

inline constexpr const char* kShmDirectory = "/dev/shm";

// Removes every file in `directory` whose name starts with "braid-<job_id>-"; returns how
// many. The '-' after the id keeps one job from matching another whose id starts the same.
// Errors (a file already gone, no such directory) are ignored: cleanup is best effort.
// Throws InvalidArgument when `job_id` is empty or not a plain name.
std::size_t remove_job_segments(const std::string& job_id, const std::filesystem::path& directory = kShmDirectory);

// Calls remove_job_segments when destroyed. Declare it before the ranks, so that it runs
// after they are dead and can no longer create segments.
class ShmJanitor {
 public:
  explicit ShmJanitor(std::string job_id, std::filesystem::path directory = kShmDirectory);
  ~ShmJanitor();
  ShmJanitor(const ShmJanitor&) = delete;
  ShmJanitor& operator=(const ShmJanitor&) = delete;

 private:
  std::string job_id_;
  std::filesystem::path directory_;
};

}  // namespace braid::launcher
