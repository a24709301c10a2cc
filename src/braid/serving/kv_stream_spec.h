// The job a KV stream runs in: one Communicator whose first `prefill_ranks` ranks prefill and
// whose other ranks decode, both sides cut into TP instances of consecutive ranks (prefill
// instance k: ranks [k p, (k + 1) p); decode instance m: ranks [P + m d, P + (m + 1) d)). And the
// small wire protocol the sender (kv_stream_sender.h) and receiver (kv_stream_receiver.h) share.
//
// Protocol, per request and (prefill rank, decode rank) pair of the transfer plan:
//   1. prefill -> decode, header tag: {kRequest, id, tokens, decode instance}
//   2. decode -> prefill, grant tag of id: {kGranted | kRefused, id, reason}; a decode rank grants
//      only once its caller has given it blocks for the request (its credit), so a prefill rank
//      never sends bytes nobody has room for; until then the request waits in the decode rank's
//      queue (bounded: at most max_in_flight headers per prefill rank).
//   3. prefill -> decode, data tag of id: the plan's segments, layer by layer, block by block, in
//      messages of at most chunk_bytes (kv_transfer_chunks.h): each side moves a message straight
//      from (into) its blocks as a gather send (scatter receive) of its runs there
//      (kv_chunk_pipeline.h). chunk_bytes 0: one per segment.
//   4. decode -> prefill, grant tag of id: {kArrived, id}: every layer is in the decode rank's
//      blocks. Only then is the request finished on the prefill side (a completed send only means
//      the bytes left), and the pending receive is what notices a decode rank that dies.
// A prefill rank ends with {kClose} to every decode rank, so no receive is left posted.
//
// Thread-safety: values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "braid/base/error.h"
#include "braid/base/kv_block_layout.h"
#include "braid/comm/communicator.h"

namespace braid::serving {

inline constexpr std::int64_t kDefaultKvChunkBytes = std::int64_t{2} << 20;

struct KvStreamSpec {
  KvBlockLayout layout;
  int prefill_ranks = 1;          // comm ranks [0, prefill_ranks) prefill, the rest decode
  int prefill_tp = 1;             // divides prefill_ranks and the layout's KV heads
  int decode_tp = 1;              // divides the decode ranks and the layout's KV heads
  std::int64_t max_tokens = 4096; // the context: a request's tokens in [1, max_tokens]
  int max_in_flight = 4;          // requests one prefill rank has submitted and not finished
  // The most bytes of one layer of one (prefill, decode) pair per message on a TCP link; 0: one
  // message per block segment. Over shared memory a message costs little and large ones stream
  // slower (the poll loop sleeps while one is half-way through the ring), so shm links keep one
  // message per segment unless pack_shm. Both defaults were measured (docs/performance.md, "KV
  // transfer packed" and "KV transfer gathered").
  std::int64_t chunk_bytes = kDefaultKvChunkBytes;
  bool pack_shm = false;

  int prefill_instances() const { return prefill_ranks / prefill_tp; }
  int decode_instances(int world) const { return (world - prefill_ranks) / decode_tp; }
  int prefill_comm_rank(int instance, int tp_rank) const { return instance * prefill_tp + tp_rank; }
  int decode_comm_rank(int instance, int tp_rank) const { return prefill_ranks + instance * decode_tp + tp_rank; }
};

// The chunk size of the link to `peer` (both ends see the same transport, so they agree): 0
// (one message per segment) on shm unless spec.pack_shm, spec.chunk_bytes otherwise.
std::int64_t chunk_bytes_to(const Communicator& comm, const KvStreamSpec& spec, int peer);

// Request ids travel in tags (data: id, grant: kGrantTagBase + id), so they are limited.
inline constexpr std::int64_t kMaxKvRequestId = (std::int64_t{1} << 28) - 1;
inline constexpr int kGrantTagBase = 1 << 28;
inline constexpr int kHeaderTag = 1 << 29;

enum class KvMessageKind : std::int64_t { kRequest = 0x4b56'0001, kGranted, kRefused, kClose, kArrived };
// Why a decode rank refused a request (the prefill side names it in its error).
enum class KvRefusal : std::int64_t { kBadId = 1, kBadTokens, kWrongInstance, kDuplicate, kBadKind };

inline constexpr std::int64_t kKvMessageWords = 4;
using KvMessage = std::array<std::int64_t, kKvMessageWords>;  // {kind, id, tokens | reason, instance}

std::string refusal_text(KvRefusal reason, const KvMessage& header, const KvStreamSpec& spec);

// Checks the spec against comm (InvalidArgument, naming the field), then agrees on it over every
// rank of comm (Mismatch on every rank naming each field that differs, e.g. "layers: rank 0 has
// 6, rank 1 has 4"): the two sides never disagree on the layout silently. Collective.
void agree_on_kv_stream(Communicator& comm, const KvStreamSpec& spec, const char* op);

// Expects spans.size() == layers x blocks, each of `block_bytes` bytes (InvalidArgument naming
// the request, the layer and the block otherwise). `ctx` names the rank.
template <typename Byte>
void check_block_spans(std::span<const std::span<Byte>> spans, const KvBlockLayout& layout, std::int64_t blocks,
                       std::int64_t block_bytes, std::int64_t id, const ErrorContext& ctx);

}  // namespace braid::serving
