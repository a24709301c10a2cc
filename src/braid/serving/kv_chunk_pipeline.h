// The messages of one (request, prefill rank, decode rank) transfer on each side, in plan order
// (kv_transfer_chunks.h cuts them): the prefill side's outbox sends each chunk straight from its
// blocks as a gather send of the chunk's runs, the decode side's inbox receives each straight
// into its blocks as a scatter receive (Communicator::isendv / irecvv: sendmsg / recvmsg on TCP,
// one ring copy per run on shm). Nothing is staged on either side, whatever the two caches'
// block layouts.
//
// A packed outbox (chunks cut by a chunk size) keeps at most kKvSendsInFlight sends out, so a
// sender cannot run far ahead of a receiver that has not posted its receives yet: what it has
// not posted, the transport buffers. Messages of one peer and tag complete in the order they
// were posted, so only the oldest in flight is ever tested.
//
// Thread-safety: one thread at a time, as the Communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/serving/kv_transfer_chunks.h"

namespace braid::serving {

inline constexpr int kKvSendsInFlight = 4;

class KvChunkOutbox {
 public:
  // packed: the chunks were cut by a chunk size (not one per segment): then at most
  // kKvSendsInFlight sends are in flight.
  KvChunkOutbox(std::vector<KvChunk> layer_chunks, std::int64_t blocks_per_layer, int peer, int tag, bool packed);
  // Posts the chunks of layers [0, ready_layers) not posted yet, in order, while the bound
  // allows; blocks: the request's layer-major blocks. Returns the bytes posted.
  std::int64_t post(Communicator& comm, std::span<const std::span<const std::byte>> blocks, int ready_layers);
  // Completes the sends that have completed at the front; true if any. Rethrows a failed one's error.
  bool drain();
  bool done(int layers) const { return next_ == total(layers) && in_flight_.empty(); }

 private:
  std::size_t total(int layers) const { return chunks_.size() * static_cast<std::size_t>(layers); }
  std::vector<KvChunk> chunks_;
  std::int64_t blocks_per_layer_;
  int peer_;
  int tag_;
  bool packed_;
  std::size_t next_ = 0;  // over every layer: layer next_ / chunks_.size()
  std::deque<Work> in_flight_;
};

class KvChunkInbox {
 public:
  KvChunkInbox(std::vector<KvChunk> layer_chunks, std::int64_t blocks_per_layer, int layers, int peer, int tag);
  // Posts every chunk's receive (first call), then completes the chunks that have arrived, in
  // order; blocks: the request's layer-major blocks. True if anything moved.
  bool advance(Communicator& comm, std::span<const std::span<std::byte>> blocks);
  int layers_done() const { return static_cast<int>(done_ / chunks_.size()); }
  bool complete() const { return done_ == total_; }

 private:
  std::vector<KvChunk> chunks_;
  std::int64_t blocks_per_layer_;
  std::size_t total_;
  int peer_;
  int tag_;
  bool posted_ = false;
  std::size_t done_ = 0;
  std::deque<Work> in_flight_;
};

}  // namespace braid::serving
