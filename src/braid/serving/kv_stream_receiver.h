// The decode side of a KV-cache stream (kv_stream_spec.h has the roles and the protocol): a
// decode rank takes request headers from every prefill rank, asks its caller for blocks (the
// caller's cache decides: that is the credit), grants the request, and receives each layer's
// segments straight into those blocks. A request is handed back once every layer has arrived
// from every prefill rank of the plan; layers_arrived() says how far one is before that.
//
//   KvStreamReceiver receiver(comm, spec, [&](std::int64_t id, std::int64_t tokens, int prefill) {
//     return cache.allocate(tokens);   // std::nullopt when full: the request waits, in order
//   });
//   while (!receiver.closed()) for (const KvArrival& a : receiver.wait_any()) decode(a);
//
// A request the caller has no blocks for yet stays in this rank's queue (FIFO, bounded: each
// prefill rank has at most max_in_flight requests out); its prefill rank sends nothing until the
// grant. The allocator is asked again on every pass, so freeing blocks lets the queue move.
//
// Each layer comes in messages of at most spec.chunk_bytes, each received straight into the
// blocks it belongs in, adjacent or not, as a scatter receive (kv_chunk_pipeline.h).
//
// Malformed headers (an id outside [0, 2^28), tokens outside [1, max_tokens], another decode
// instance, an id already in flight from that rank, an unknown kind) are refused: the prefill
// rank's request fails with the reason, and this rank reports a KvArrival with ok = false and an
// InvalidArgument message naming this rank, the peer and the request; nothing is written.
//
// A prefill rank lost while it owes this rank bytes of a granted request raises PeerLost from
// poll() within 20 ms of polling (peer_watch.h); one lost with nothing in flight to this rank is
// not watched (its exit cannot be told from a close in flight): braid-run ends the job, or under
// --elastic the survivors' shrink does.
//
// Thread-safety: one thread at a time, as the Communicator; the allocator runs on that thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/serving/kv_chunk_pipeline.h"
#include "braid/serving/kv_stream_spec.h"
#include "braid/serving/kv_transfer_plan.h"
#include "braid/serving/peer_watch.h"

namespace braid::serving {

// Layer-major layers x blocks spans of block_bytes(decode heads) each, or nothing (no room yet).
using KvBlockAllocator =
    std::function<std::optional<std::vector<std::span<std::byte>>>(std::int64_t id, std::int64_t tokens, int prefill_instance)>;

struct KvArrival {
  std::int64_t id = -1;
  int prefill_instance = -1;
  std::int64_t tokens = 0;
  bool ok = false;
  std::string error;       // a refused header: what was wrong, naming rank, peer and request
  std::int64_t bytes = 0;  // received into this rank's blocks
};

class KvStreamReceiver {
 public:
  // Collective over comm (agree_on_kv_stream). REQUIRES: comm.rank() >= spec.prefill_ranks.
  KvStreamReceiver(Communicator& comm, const KvStreamSpec& spec, KvBlockAllocator allocate);

  // One progress pass; the requests complete (or refused) since the last call.
  std::vector<KvArrival> poll();
  // Passes (sleeping when idle) until something completes or closed(); what poll returned.
  std::vector<KvArrival> wait_any();
  // Every prefill rank has closed and every request has arrived.
  bool closed() const { return closes_ == spec_.prefill_ranks && requests_.empty() && control_sends_.empty(); }
  // Layers complete from every prefill rank of request (prefill instance, id); -1 if unknown.
  int layers_arrived(int prefill_instance, std::int64_t id) const;
  // Requests with a header and no blocks yet (the queue that back-pressure holds).
  int queued() const;
  const KvStreamSpec& spec() const { return spec_; }

 private:
  struct Incoming {               // one (request, prefill rank) transfer
    int peer = -1;
    KvTransferPair pair;
    bool header_seen = false;
    bool granted = false;
    KvMessage grant{};
    Work grant_send;
    // Every layer's chunks in order, made at the grant; they complete in that order (one peer,
    // one tag), so a pass tests only the oldest in flight: O(1) per transfer, not O(blocks).
    std::optional<KvChunkInbox> inbox;
  };
  struct Request {
    std::int64_t tokens = 0;
    KvTransferPlan plan;
    std::optional<std::vector<std::span<std::byte>>> blocks;
    std::vector<Incoming> incoming;  // one per pair of plan.pairs_to(tp rank): sized once (grant buffers)
    std::int64_t order = 0;       // arrival of its first header: the queue's order
  };
  using Key = std::pair<int, std::int64_t>;  // (prefill instance, id)

  bool pass();  // one pass over everything; true if anything moved
  bool take_headers();
  void watch_prefill_ranks();  // every 20 ms: PeerLost for a lost one that owes us bytes
  void on_header(int peer, const KvMessage& header);
  void refuse(int peer, const KvMessage& header, KvRefusal reason);
  void send_control(int peer, const KvMessage& message);
  bool allocate_queued();
  void grant(Request& r, Incoming& in, std::int64_t id);
  bool progress(const Key& key, Request& r, bool& moved);  // true: complete
  int complete_layers(const Request& r) const;

  Communicator& comm_;
  KvStreamSpec spec_;
  KvBlockAllocator allocate_;
  int tp_rank_ = 0;
  int instance_ = 0;
  std::vector<KvMessage> header_buffers_;  // one per prefill rank
  std::vector<Work> header_receives_;      // posted until that rank closes
  std::vector<bool> peer_closed_;
  int closes_ = 0;
  std::int64_t next_order_ = 0;
  std::map<Key, Request> requests_;
  std::vector<KvArrival> done_;
  // Refusals and arrivals on their way to prefill ranks (a deque: the messages do not move).
  std::deque<std::pair<KvMessage, Work>> control_sends_;
  PeerWatch watch_;
  std::vector<int> awaited_;  // prefill ranks owing this rank bytes (for watch_)
};

}  // namespace braid::serving
