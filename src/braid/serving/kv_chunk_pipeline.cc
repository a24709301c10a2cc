#include "braid/serving/kv_chunk_pipeline.h"

#include <utility>

namespace braid::serving {
namespace {

// The blocks of layer `layer` among a request's layer-major blocks.
template <typename Byte>
std::span<const std::span<Byte>> layer_blocks(std::span<const std::span<Byte>> blocks, std::size_t layer,
                                              std::int64_t blocks_per_layer) {
  const auto per_layer = static_cast<std::size_t>(blocks_per_layer);
  return blocks.subspan(layer * per_layer, per_layer);
}

}  // namespace

KvChunkOutbox::KvChunkOutbox(std::vector<KvChunk> layer_chunks, std::int64_t blocks_per_layer, int peer, int tag,
                             bool packed)
    : chunks_(std::move(layer_chunks)), blocks_per_layer_(blocks_per_layer), peer_(peer), tag_(tag), packed_(packed) {}

std::int64_t KvChunkOutbox::post(Communicator& comm, std::span<const std::span<const std::byte>> blocks, int ready_layers) {
  std::int64_t bytes = 0;
  for (; next_ < total(ready_layers); ++next_) {
    if (packed_ && in_flight_.size() >= static_cast<std::size_t>(kKvSendsInFlight)) break;
    const KvChunk& chunk = chunks_[next_ % chunks_.size()];
    const auto layer = layer_blocks(blocks, next_ / chunks_.size(), blocks_per_layer_);
    in_flight_.push_back(comm.isendv(kv_chunk_runs(chunk, layer, KvSide::kSource), peer_, tag_));
    // Hands the bytes to the transport now, so they travel while the next chunk is posted.
    in_flight_.back().test();
    bytes += chunk.bytes;
  }
  return bytes;
}

bool KvChunkOutbox::drain() {
  bool moved = false;
  while (!in_flight_.empty() && in_flight_.front().test()) {
    in_flight_.pop_front();
    moved = true;
  }
  return moved;
}

KvChunkInbox::KvChunkInbox(std::vector<KvChunk> layer_chunks, std::int64_t blocks_per_layer, int layers, int peer, int tag)
    : chunks_(std::move(layer_chunks)), blocks_per_layer_(blocks_per_layer),
      total_(chunks_.size() * static_cast<std::size_t>(layers)), peer_(peer), tag_(tag) {}

bool KvChunkInbox::advance(Communicator& comm, std::span<const std::span<std::byte>> blocks) {
  bool moved = false;
  if (!posted_) {
    for (std::size_t i = 0; i < total_; ++i) {
      const auto layer = layer_blocks(blocks, i / chunks_.size(), blocks_per_layer_);
      in_flight_.push_back(comm.irecvv(kv_chunk_runs(chunks_[i % chunks_.size()], layer, KvSide::kTarget), peer_, tag_));
    }
    posted_ = moved = true;
  }
  while (!in_flight_.empty() && in_flight_.front().test()) {
    in_flight_.pop_front();
    ++done_;
    moved = true;
  }
  return moved;
}

}  // namespace braid::serving
