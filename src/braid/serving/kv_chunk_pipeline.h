// The messages of one (request, prefill rank, decode rank) transfer on each side, in plan order
// (kv_transfer_chunks.h cuts them): the prefill side's outbox sends a chunk straight from its
// blocks when they hold it contiguously and otherwise packs it into a free staging buffer; the
// decode side's inbox receives straight into its blocks when it can and otherwise into a staging
// buffer it unpacks when the chunk has arrived. Packing chunk i + 1 overlaps chunk i on the wire
// (each send is pushed to the transport as soon as it is posted), unpacking chunk i overlaps the
// chunks behind it (their receives are posted already).
//
// Staging is bounded: at most kKvStagingSlots buffers of the largest chunk per transfer and side,
// allocated on first need (a transfer whose chunks are contiguous on a side allocates nothing
// there). Messages of one peer and tag complete in the order they were posted, so only the
// oldest in flight is ever tested.
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

inline constexpr int kKvStagingSlots = 4;

// Staging buffers of one transfer and side, handed out and back by index.
class KvStagingRing {
 public:
  explicit KvStagingRing(std::int64_t slot_bytes) : slot_bytes_(slot_bytes) {}
  int acquire();  // a free slot's index, or -1 when all kKvStagingSlots are in use
  void release(int slot) { free_.push_back(slot); }
  std::byte* data(int slot) { return slots_[static_cast<std::size_t>(slot)].data(); }

 private:
  std::int64_t slot_bytes_;
  std::vector<std::vector<std::byte>> slots_;
  std::vector<int> free_;
};

class KvChunkOutbox {
 public:
  // packed: the chunks were cut by a chunk size (not one per segment): then at most
  // kKvStagingSlots sends are in flight, staged or not, so a sender whose blocks are adjacent
  // cannot run ahead of a receiver that stages by more than that (and the socket's buffer):
  // what the receiver has not posted a receive for, the transport buffers.
  KvChunkOutbox(std::vector<KvChunk> layer_chunks, std::int64_t blocks_per_layer, int peer, int tag, bool packed);
  // Posts the chunks of layers [0, ready_layers) not posted yet, in order, while staging allows;
  // blocks: the request's layer-major blocks. Returns the bytes posted.
  std::int64_t post(Communicator& comm, std::span<const std::span<const std::byte>> blocks, int ready_layers);
  // Completes the sends that have completed at the front; true if any. Rethrows a failed one's error.
  bool drain();
  bool done(int layers) const { return next_ == total(layers) && in_flight_.empty(); }

 private:
  std::size_t total(int layers) const { return chunks_.size() * static_cast<std::size_t>(layers); }
  struct InFlight {
    Work work;
    int slot = -1;  // -1: sent from the blocks
  };
  std::vector<KvChunk> chunks_;
  std::int64_t blocks_per_layer_;
  int peer_;
  int tag_;
  bool packed_;
  std::size_t next_ = 0;  // over every layer: layer next_ / chunks_.size()
  std::deque<InFlight> in_flight_;
  KvStagingRing staging_;
};

class KvChunkInbox {
 public:
  KvChunkInbox(std::vector<KvChunk> layer_chunks, std::int64_t blocks_per_layer, int layers, int peer, int tag);
  // Completes (unpacks) the chunks that have arrived, in order, and posts the receives staging
  // allows; blocks: the request's layer-major blocks. True if anything moved.
  bool advance(Communicator& comm, std::span<const std::span<std::byte>> blocks);
  int layers_done() const { return static_cast<int>(done_ / chunks_.size()); }
  bool complete() const { return done_ == total_; }

 private:
  std::span<const std::span<std::byte>> layer_of(std::span<const std::span<std::byte>> blocks, std::size_t chunk) const;
  bool post(Communicator& comm, std::span<const std::span<std::byte>> blocks);
  struct InFlight {
    Work work;
    int slot = -1;  // -1: received into the blocks
  };
  std::vector<KvChunk> chunks_;
  std::int64_t blocks_per_layer_;
  std::size_t total_;
  int peer_;
  int tag_;
  std::size_t posted_ = 0;
  std::size_t done_ = 0;
  std::deque<InFlight> in_flight_;
  KvStagingRing staging_;
};

}  // namespace braid::serving
