// The names of the shared-memory segments one collective set-up creates (one per rank taking
// part), unlinked by every participant when it leaves the set-up, whether the set-up
// succeeded or failed (RAII: also while an exception unwinds).
//
// Why every participant unlinks every name, not only its own: a name serves only to let the
// peers map the segment during set-up; afterwards it can only leak. On success the set-up's
// last barrier proves that every participant has mapped every segment, so any of them may
// remove any name. On failure the job cannot go on (set-up is collective), and the creator of
// a name may never get to remove it: killed by a signal, or stopped by its launcher (torchrun,
// mpirun and srun SIGTERM the other ranks when one fails) while it waited. Whoever still runs
// removes it. Removing a missing name is harmless; a peer that had not opened a name yet then
// fails to open it, and it was about to fail anyway.
//
// What stays impossible: if every participant is killed between the first creation and the
// end of set-up, nobody is left to unlink; braid-run removes /dev/shm/braid-<job id>-* at the
// end of the job for that case, other launchers do not.
//
// Thread-safety: owned by the one thread running the set-up.
#pragma once

#include <string>
#include <vector>

namespace braid::shm {

class SegmentNames {
 public:
  explicit SegmentNames(std::vector<std::string> names) : names_(std::move(names)) {}
  ~SegmentNames() { unlink_all(); }
  SegmentNames(const SegmentNames&) = delete;
  SegmentNames& operator=(const SegmentNames&) = delete;

  const std::string& operator[](std::size_t i) const { return names_[i]; }
  // Unlinks every name now (again at destruction: idempotent, missing names are ignored).
  void unlink_all() noexcept;

 private:
  std::vector<std::string> names_;
};

}  // namespace braid::shm
