// Scenarios of braid-kv-stream-rank, the rank program of kv_stream_test.cc: each is run by every
// rank of a braid-run job, prints what the test checks ("PASS <scenario>", "BYTES ...", error
// lines) and returns the exit code.
#pragma once

#include <memory>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/serving/kv_stream_receiver.h"
#include "braid/serving/kv_stream_spec.h"
#include "kv_pattern.h"

namespace braid::testing {

using Args = std::vector<std::string>;

// The stream tests' model: 3 layers x 4 KV heads x 8 dims, 4-token blocks, f32 (1 KiB blocks).
inline serving::KvStreamSpec test_spec(int prefill_ranks, int prefill_tp, int decode_tp) {
  return {.layout = {.layers = 3, .kv_heads = 4, .head_dim = 8, .block_tokens = 4, .element_bytes = 4},
          .prefill_ranks = prefill_ranks, .prefill_tp = prefill_tp, .decode_tp = decode_tp, .max_tokens = 64,
          .max_in_flight = 4};
}

// A decode rank's cache for the tests: blocks per (prefill instance, request), up to `capacity`
// requests at once (the credit the receiver grants from).
class TestDecodeCache {
 public:
  TestDecodeCache(const serving::KvStreamSpec& spec, int tp_rank, int capacity, bool adjacent = false)
      : spec_(spec), tp_rank_(tp_rank), capacity_(capacity), adjacent_(adjacent) {}

  serving::KvBlockAllocator allocator() {
    return [this](std::int64_t id, std::int64_t tokens, int prefill) -> std::optional<std::vector<std::span<std::byte>>> {
      if (static_cast<int>(held_.size()) >= capacity_) {
        ++refused_;
        return std::nullopt;
      }
      const int heads = spec_.layout.kv_heads / spec_.decode_tp;
      auto blocks = std::make_unique<KvRankBlocks>(spec_.layout, tokens, tp_rank_ * heads, heads, adjacent_);
      auto spans = blocks->spans();
      held_[{prefill, id}] = std::move(blocks);
      return spans;
    };
  }
  KvRankBlocks& at(int prefill, std::int64_t id) { return *held_.at({prefill, id}); }
  void free(int prefill, std::int64_t id) { held_.erase({prefill, id}); }
  int held() const { return static_cast<int>(held_.size()); }
  int refused() const { return refused_; }

 private:
  serving::KvStreamSpec spec_;
  int tp_rank_;
  int capacity_;
  bool adjacent_;
  int refused_ = 0;
  std::map<std::pair<int, std::int64_t>, std::unique_ptr<KvRankBlocks>> held_;
};

int scenario_roundtrip(Communicator& comm, const Args& args);
int scenario_backpressure(Communicator& comm, const Args& args);
int scenario_malformed(Communicator& comm, const Args& args);
int scenario_layout_mismatch(Communicator& comm, const Args& args);
int scenario_decode_killed(const Args& args);  // under braid-run --elastic

}  // namespace braid::testing
