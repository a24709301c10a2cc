#include "braid/transport/shm/segment_names.h"

#include "braid/transport/shm/shm_segment.h"

namespace braid::shm {

void SegmentNames::unlink_all() noexcept {
  for (const std::string& name : names_) Segment::unlink(name);
}

}  // namespace braid::shm
