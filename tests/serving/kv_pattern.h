// The synthetic KV cache of the stream tests: every byte of a request's cache is a function of
// where it is (request, layer, block, K or V, global head, byte in the head slice), so a decode
// rank checks each byte it received against what the prefill rank holding that head wrote,
// whatever the TP sizes on either side. Unused slots of the last block are filled too: a paged
// transfer moves whole blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "braid/base/kv_block_layout.h"

namespace braid::testing {

#define KV_SAY(...)           \
  do {                        \
    std::printf(__VA_ARGS__); \
    std::printf("\n");        \
    std::fflush(stdout);      \
  } while (0)

inline std::byte kv_pattern_byte(std::int64_t id, std::int64_t layer, std::int64_t block, int half, int head,
                                 std::int64_t offset) {
  std::uint64_t x = static_cast<std::uint64_t>(((((id * 131 + layer) * 257 + block) * 2 + half) * 1031 + head) * 65537 + offset);
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 32;
  return static_cast<std::byte>(x & 0xff);
}

// One rank's blocks of one request: layers x blocks, each holding `heads` heads from first_head.
struct KvRankBlocks {
  KvBlockLayout layout;
  std::int64_t blocks = 0;
  int first_head = 0;
  int heads = 0;
  bool adjacent = false;            // blocks in order in memory (else reversed: never adjacent)
  std::vector<std::byte> storage;  // one allocation, cut into blocks

  KvRankBlocks(const KvBlockLayout& kv, std::int64_t tokens, int first, int count, bool in_order = false)
      : layout(kv), blocks(kv.blocks_for(tokens)), first_head(first), heads(count), adjacent(in_order),
        storage(static_cast<std::size_t>(kv.layers * blocks * kv.block_bytes(count)), std::byte{0xee}) {}

  // Block (layer, b) lives at slot layer x blocks + b when adjacent, else in reversed order (the
  // spans need not be contiguous in order; the stream then packs them).
  std::span<std::byte> block(std::int64_t layer, std::int64_t b) {
    const std::int64_t index = layer * blocks + b;
    const std::int64_t slot = adjacent ? index : layout.layers * blocks - 1 - index;
    const std::int64_t bytes = layout.block_bytes(heads);
    return {storage.data() + slot * bytes, static_cast<std::size_t>(bytes)};
  }
  std::vector<std::span<std::byte>> spans() {
    std::vector<std::span<std::byte>> out;
    for (std::int64_t l = 0; l < layout.layers; ++l) {
      for (std::int64_t b = 0; b < blocks; ++b) out.push_back(block(l, b));
    }
    return out;
  }
  std::vector<std::span<const std::byte>> const_spans() {
    std::vector<std::span<const std::byte>> out;
    for (const auto& s : spans()) out.push_back(s);
    return out;
  }
  void fill_layer(std::int64_t id, std::int64_t layer) {
    const std::int64_t slice = layout.head_slice_bytes();
    for (std::int64_t b = 0; b < blocks; ++b) {
      std::span<std::byte> data = block(layer, b);
      for (int half = 0; half < 2; ++half) {
        for (int h = 0; h < heads; ++h) {
          for (std::int64_t o = 0; o < slice; ++o) {
            data[static_cast<std::size_t>((half * heads + h) * slice + o)] = kv_pattern_byte(id, layer, b, half, first_head + h, o);
          }
        }
      }
    }
  }
  // The first wrong byte, described; empty when every byte is what the prefill side wrote.
  std::string first_wrong(std::int64_t id) {
    const std::int64_t slice = layout.head_slice_bytes();
    for (std::int64_t l = 0; l < layout.layers; ++l) {
      for (std::int64_t b = 0; b < blocks; ++b) {
        std::span<std::byte> data = block(l, b);
        for (int half = 0; half < 2; ++half) {
          for (int h = 0; h < heads; ++h) {
            for (std::int64_t o = 0; o < slice; ++o) {
              const std::byte want = kv_pattern_byte(id, l, b, half, first_head + h, o);
              if (data[static_cast<std::size_t>((half * heads + h) * slice + o)] != want) {
                return "request " + std::to_string(id) + " layer " + std::to_string(l) + " block " + std::to_string(b) +
                       (half ? " V" : " K") + " head " + std::to_string(first_head + h) + " byte " + std::to_string(o);
              }
            }
          }
        }
      }
    }
    return "";
  }
};

}  // namespace braid::testing
