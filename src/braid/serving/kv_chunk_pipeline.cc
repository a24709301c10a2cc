#include "braid/serving/kv_chunk_pipeline.h"

#include <utility>

namespace braid::serving {

int KvStagingRing::acquire() {
  if (!free_.empty()) {
    const int slot = free_.back();
    free_.pop_back();
    return slot;
  }
  if (static_cast<int>(slots_.size()) == kKvStagingSlots) return -1;
  slots_.emplace_back(static_cast<std::size_t>(slot_bytes_));
  return static_cast<int>(slots_.size()) - 1;
}

KvChunkOutbox::KvChunkOutbox(std::vector<KvChunk> layer_chunks, std::int64_t blocks_per_layer, int peer, int tag,
                             bool packed)
    : chunks_(std::move(layer_chunks)), blocks_per_layer_(blocks_per_layer), peer_(peer), tag_(tag), packed_(packed),
      staging_(kv_largest_chunk(chunks_)) {}

std::int64_t KvChunkOutbox::post(Communicator& comm, std::span<const std::span<const std::byte>> blocks, int ready_layers) {
  std::int64_t bytes = 0;
  for (; next_ < total(ready_layers); ++next_) {
    if (packed_ && in_flight_.size() >= static_cast<std::size_t>(kKvStagingSlots)) break;
    const KvChunk& chunk = chunks_[next_ % chunks_.size()];
    const auto layer = static_cast<std::size_t>(next_ / chunks_.size());
    const auto layer_blocks = blocks.subspan(layer * static_cast<std::size_t>(blocks_per_layer_),
                                             static_cast<std::size_t>(blocks_per_layer_));
    const std::byte* data = kv_chunk_contiguous(chunk, layer_blocks, KvSide::kSource);
    int slot = -1;
    if (data == nullptr) {
      slot = staging_.acquire();
      if (slot < 0) break;  // every staging buffer is on the wire
      kv_pack(chunk, layer_blocks, staging_.data(slot));
      data = staging_.data(slot);
    }
    in_flight_.push_back({comm.isend(data, chunk.bytes, DType::kU8, peer_, tag_), slot});
    // Hands the bytes to the transport now, so they travel while the next chunk is packed.
    in_flight_.back().work.test();
    bytes += chunk.bytes;
  }
  return bytes;
}

bool KvChunkOutbox::drain() {
  bool moved = false;
  while (!in_flight_.empty() && in_flight_.front().work.test()) {
    if (in_flight_.front().slot >= 0) staging_.release(in_flight_.front().slot);
    in_flight_.pop_front();
    moved = true;
  }
  return moved;
}

KvChunkInbox::KvChunkInbox(std::vector<KvChunk> layer_chunks, std::int64_t blocks_per_layer, int layers, int peer, int tag)
    : chunks_(std::move(layer_chunks)), blocks_per_layer_(blocks_per_layer),
      total_(chunks_.size() * static_cast<std::size_t>(layers)), peer_(peer), tag_(tag),
      staging_(kv_largest_chunk(chunks_)) {}

std::span<const std::span<std::byte>> KvChunkInbox::layer_of(std::span<const std::span<std::byte>> blocks,
                                                             std::size_t chunk) const {
  const auto layer = static_cast<std::size_t>(chunk / chunks_.size());
  return blocks.subspan(layer * static_cast<std::size_t>(blocks_per_layer_), static_cast<std::size_t>(blocks_per_layer_));
}

bool KvChunkInbox::post(Communicator& comm, std::span<const std::span<std::byte>> blocks) {
  bool moved = false;
  for (; posted_ < total_; ++posted_, moved = true) {
    const KvChunk& chunk = chunks_[posted_ % chunks_.size()];
    std::byte* data = kv_chunk_contiguous(chunk, layer_of(blocks, posted_), KvSide::kTarget);
    int slot = -1;
    if (data == nullptr) {
      slot = staging_.acquire();
      if (slot < 0) break;  // posted again as a staged chunk is unpacked
      data = staging_.data(slot);
    }
    in_flight_.push_back({comm.irecv(data, chunk.bytes, DType::kU8, peer_, tag_), slot});
  }
  return moved;
}

bool KvChunkInbox::advance(Communicator& comm, std::span<const std::span<std::byte>> blocks) {
  bool moved = post(comm, blocks);
  while (!in_flight_.empty() && in_flight_.front().work.test()) {
    const int slot = in_flight_.front().slot;
    in_flight_.pop_front();
    if (slot >= 0) {
      kv_unpack(chunks_[done_ % chunks_.size()], staging_.data(slot), layer_of(blocks, done_));
      staging_.release(slot);
      post(comm, blocks);  // the freed buffer takes the next chunk while this one's neighbours arrive
    }
    ++done_;
    moved = true;
  }
  return moved;
}

}  // namespace braid::serving
