// What braid's DDP comm hooks (python/braid/hooks.py) hand the backend for one gradient bucket:
// the bucket's flat fp32 buffer cut into pieces (one per parameter, named by the parameter's
// name so that error-feedback residuals follow a parameter across DDP's bucket rebuild and
// across a resumed run), the codec and the policy's options, and the step. The pieces are
// compressed and averaged by compress::compressed_allreduce, each with the codec the policy
// chooses for it (warm-up and small tensors uncompressed), on the group's queue like every
// other collective, so the hook's future completes from braid's worker as DDP expects.
//
// CompressionHookResiduals is the error-feedback state (compress::CompressionState) the hook
// keeps between steps; its image (serialize) is what the hook state's state_dict() saves.
//
// Thread-safety: CompressionHookResiduals locks itself: the worker updates it, the Python
// thread may save or load it at the same time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "braid/base/mutex.h"
#include "braid/compress/compression_policy.h"
#include "braid/compress/compression_state.h"

namespace braid::python {

struct HookPiece {
  std::string name;          // the parameter's name: keys its residual
  std::int64_t offset = 0;   // in elements, into the bucket buffer
  std::int64_t count = 0;
  compress::Shape shape;     // its 2-D view (PowerSGD); rows 0 for vectors
};

class CompressionHookResiduals {
 public:
  std::vector<std::byte> serialize() const;
  void deserialize(const std::vector<std::byte>& image);
  std::size_t bytes() const;

  // Runs `fn(state)` under the lock (the worker's compressed allreduces).
  template <typename Fn>
  void with_state(Fn&& fn) {
    MutexLock lock(mu_);
    fn(state_);
  }

 private:
  mutable Mutex mu_;
  compress::CompressionState state_ BRAID_GUARDED_BY(mu_);
};

}  // namespace braid::python
