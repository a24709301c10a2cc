#include "braid/collectives/call_signature.h"

#include <vector>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/collectives/exchange.h"
#include "braid/transport/fabric.h"

namespace braid::algorithms {

namespace {

struct Signature {
  std::int64_t count;
  std::int32_t reduce_op;
  std::int32_t root;
  friend bool operator==(const Signature&, const Signature&) = default;
};

}  // namespace

void agree_on_call(const CollectiveArgs& a) {
  const int n = a.comm.size(), r = a.comm.rank();
  const Signature mine{a.count, static_cast<std::int32_t>(a.reduce_op), a.root};
  std::vector<Signature> theirs(static_cast<std::size_t>(n));
  Envelope envelope = a.envelope(0);
  envelope.bytes = sizeof(Signature);
  std::vector<Work> works;
  works.reserve(2 * static_cast<std::size_t>(n));
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    works.push_back(a.comm.post_collective_recv(&theirs[static_cast<std::size_t>(peer)], envelope, peer));
    works.push_back(a.comm.post_collective_send(&mine, envelope, peer));
  }
  wait_all(works);
  for (int peer = 0; peer < n; ++peer) {
    const Signature& s = theirs[static_cast<std::size_t>(peer)];
    if (peer == r || s == mine) continue;
    a.comm.fabric().fail(std::make_exception_ptr(Mismatch(
        {.rank = r, .peer = peer, .op = std::string(op_kind_name(a.op)), .seq = a.seq},
        fmt::format("rank {} called {} with count {}, reduction op {} and root {}; this rank with count {}, op {}, "
                    "root {}", peer, op_kind_name(a.op), s.count, s.reduce_op, s.root, mine.count, mine.reduce_op,
                    mine.root))));
  }
}

}  // namespace braid::algorithms
