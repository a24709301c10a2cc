// The prefill side of a KV-cache stream (kv_stream_spec.h has the roles and the protocol): a
// prefill rank submits a request, says when each layer's K/V are written (layer_ready), and each
// layer's segments go out at once (if its decode rank has granted the request), so layer i is on
// the wire while layer i + 1 computes. A layer goes in messages of at most spec.chunk_bytes, each
// sent straight from the caller's blocks, adjacent or not, as a gather send (kv_chunk_pipeline.h).
//
//   KvStreamSender sender(comm, spec);                  // collective over comm (the layout agreed)
//   sender.submit(id, tokens, /*decode_instance=*/0, blocks);   // blocks: layers x blocks spans
//   for (int l = 0; l < layers; ++l) { compute_layer(l); sender.layer_ready(id, l); }
//   KvRequestOutcome done = sender.wait(id);            // its blocks may be freed now
//   sender.close();                                     // every prefill rank, at the end
//
// Back-pressure: at most spec.max_in_flight requests per prefill rank; submit() beyond that
// first waits for the oldest whose layers are all ready. A request's bytes go out only after
// its decode rank granted it (that is, had blocks for it): never into a buffer nobody bounds.
//
// Errors. The caller's mistakes (a bad id, tokens beyond the context, a wrong span count or
// size, a layer out of order) throw InvalidArgument at once, naming the rank and the request.
// A request its decode rank refuses, or whose decode rank is lost, finishes with ok = false and
// an error naming this rank, the peer and the request; the caller frees its blocks either way.
// A lost peer poisons the communicator (docs/errors.md), so the later requests fail too; under
// braid-run --elastic the caller shrinks and resubmits what unfinished() lists.
//
// Thread-safety: one thread at a time, as the Communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/serving/kv_chunk_pipeline.h"
#include "braid/serving/kv_stream_spec.h"
#include "braid/serving/kv_transfer_plan.h"
#include "braid/serving/peer_watch.h"

namespace braid::serving {

struct KvRequestOutcome {
  std::int64_t id = -1;
  int decode_instance = -1;
  bool ok = false;
  std::string error;       // the braid::Error's message when !ok
  std::int64_t bytes = 0;  // the bytes this rank sent for it
};

class KvStreamSender {
 public:
  // Collective over comm (agree_on_kv_stream). REQUIRES: comm.rank() < spec.prefill_ranks.
  KvStreamSender(Communicator& comm, const KvStreamSpec& spec);

  // blocks: layer-major, layers x layout.blocks_for(tokens) spans of block_bytes(prefill heads)
  // each; they must stay alive and unchanged from layer_ready until the request finishes.
  void submit(std::int64_t id, std::int64_t tokens, int decode_instance, std::vector<std::span<const std::byte>> blocks);
  // Layer `layer` (the next one of the request, in order) is written.
  void layer_ready(std::int64_t id, int layer);
  // One progress pass; the requests that finished since the last call.
  std::vector<KvRequestOutcome> poll();
  // Blocks until request `id` has finished (REQUIRES: all its layers ready) and returns it.
  KvRequestOutcome wait(std::int64_t id);
  // Waits for every request (REQUIRES: all layers ready), then tells every decode rank that this
  // rank is done. Returns the outcomes not returned before.
  std::vector<KvRequestOutcome> close();

  int in_flight() const { return static_cast<int>(requests_.size()); }
  // The ids submitted and not finished, oldest first.
  std::vector<std::int64_t> unfinished() const;
  const KvStreamSpec& spec() const { return spec_; }

 private:
  // One submitted request: its share of the plan, the grants it waits for, the sends in flight.
  struct Request {
    std::int64_t id = -1;
    int decode_instance = -1;
    KvTransferPlan plan;
    std::vector<KvTransferPair> pairs;             // this rank's: plan.pairs_from(tp rank)
    std::vector<std::span<const std::byte>> blocks;
    std::vector<KvMessage> headers;                // one per pair, alive until sent
    std::vector<KvMessage> grants;                 // one per pair
    std::vector<Work> grant_receives;
    std::vector<KvMessage> arrivals;               // one per pair: the decode rank's kArrived
    std::vector<Work> arrival_receives;
    std::vector<Work> header_sends;
    int granted = 0;                               // grants received (all kGranted so far)
    int ready_layers = 0;
    std::vector<KvChunkOutbox> outboxes;           // one per pair, made at the last grant
    std::int64_t bytes = 0;
  };
  Request& find(std::int64_t id, const char* op);
  bool progress(Request& r);        // true if anything moved
  void make_outboxes(Request& r);
  bool send_ready_layers(Request& r);  // true if anything moved
  void post_arrival_receives(Request& r);
  void check_arrivals(Request& r);  // -> finish, or Corrupt
  void finish(Request& r, bool ok, std::string error);
  void check_submit(std::int64_t id, std::int64_t tokens, int decode_instance) const;
  void wait_for_room();
  void check_waitable(std::int64_t id);  // in flight with every layer ready, or InvalidArgument
  void sweep();  // drops finished requests (id < 0)
  // Every 20 ms of polling: the decode ranks awaited still alive? A loss poisons the
  // communicator, so each request still in flight then fails with it.
  void watch_peers();
  bool progress_all();  // watch_peers, then progress on every request
  ErrorContext context(const char* op, int peer = -1) const { return {.rank = comm_.rank(), .peer = peer, .op = op}; }

  Communicator& comm_;
  KvStreamSpec spec_;
  int tp_rank_ = 0;
  std::deque<Request> requests_;            // submitted, unfinished, oldest first
  std::vector<KvRequestOutcome> finished_;  // not yet returned by poll
  bool closed_ = false;
  PeerWatch watch_;
};

}  // namespace braid::serving
