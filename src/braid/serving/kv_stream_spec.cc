#include "braid/serving/kv_stream_spec.h"

#include <fmt/format.h>

#include <cstddef>

#include "braid/base/error.h"
#include "braid/parallel/moe_agreement.h"

namespace braid::serving {
namespace {

void check_spec(const Communicator& comm, const KvStreamSpec& s, const ErrorContext& ctx) {
  s.layout.validate(ctx.op.c_str());
  const int decode_ranks = comm.size() - s.prefill_ranks;
  const auto refuse = [&](const std::string& what) { throw InvalidArgument(ctx, what); };
  if (s.prefill_ranks < 1 || decode_ranks < 1) {
    refuse(fmt::format("prefill ranks {} must leave at least one of the {} ranks to decode", s.prefill_ranks, comm.size()));
  }
  if (s.prefill_tp < 1 || s.prefill_ranks % s.prefill_tp != 0 || s.layout.kv_heads % s.prefill_tp != 0) {
    refuse(fmt::format("prefill TP {} must divide the {} prefill ranks and the {} KV heads", s.prefill_tp,
                       s.prefill_ranks, s.layout.kv_heads));
  }
  if (s.decode_tp < 1 || decode_ranks % s.decode_tp != 0 || s.layout.kv_heads % s.decode_tp != 0) {
    refuse(fmt::format("decode TP {} must divide the {} decode ranks and the {} KV heads", s.decode_tp, decode_ranks,
                       s.layout.kv_heads));
  }
  if (s.max_tokens < 1) refuse(fmt::format("max tokens must be at least 1, got {}", s.max_tokens));
  if (s.max_in_flight < 1) refuse(fmt::format("max in flight must be at least 1, got {}", s.max_in_flight));
  if (s.chunk_bytes < 0) refuse(fmt::format("chunk bytes must be at least 0, got {}", s.chunk_bytes));
}

}  // namespace

std::string refusal_text(KvRefusal reason, const KvMessage& header, const KvStreamSpec& spec) {
  switch (reason) {
    case KvRefusal::kBadId: return fmt::format("request id {} is outside [0, {}]", header[1], kMaxKvRequestId);
    case KvRefusal::kBadTokens:
      return fmt::format("request {} has {} tokens, outside the context [1, {}]", header[1], header[2], spec.max_tokens);
    case KvRefusal::kWrongInstance:
      return fmt::format("request {} names decode instance {}, not this rank's", header[1], header[3]);
    case KvRefusal::kDuplicate: return fmt::format("request id {} is already in flight from this prefill rank", header[1]);
    case KvRefusal::kBadKind: return fmt::format("message kind {:#x} is not a request header", header[0]);
  }
  return "unknown refusal";
}

void agree_on_kv_stream(Communicator& comm, const KvStreamSpec& s, const char* op) {
  check_spec(comm, s, {.rank = comm.rank(), .op = op});
  const parallel::AgreedField fields[] = {
      {"layers", s.layout.layers},           {"kv heads", s.layout.kv_heads},
      {"head dim", s.layout.head_dim},       {"block tokens", s.layout.block_tokens},
      {"element bytes", s.layout.element_bytes}, {"prefill ranks", s.prefill_ranks},
      {"prefill tp", s.prefill_tp},          {"decode tp", s.decode_tp},
      {"max tokens", s.max_tokens},          {"max in flight", s.max_in_flight},
      {"chunk bytes", s.chunk_bytes},           {"pack shm", s.pack_shm ? 1 : 0}};
  parallel::agree_on_fields(comm, fields, op);
}

std::int64_t chunk_bytes_to(const Communicator& comm, const KvStreamSpec& spec, int peer) {
  return comm.transport_to(peer) == "shm" && !spec.pack_shm ? 0 : spec.chunk_bytes;
}

template <typename Byte>
void check_block_spans(std::span<const std::span<Byte>> spans, const KvBlockLayout& layout, std::int64_t blocks,
                       std::int64_t block_bytes, std::int64_t id, const ErrorContext& ctx) {
  const std::int64_t expected = layout.layers * blocks;
  if (static_cast<std::int64_t>(spans.size()) != expected) {
    throw InvalidArgument(ctx, fmt::format("request {}: {} block spans given, the layout needs {} layers x {} blocks = {}",
                                           id, spans.size(), layout.layers, blocks, expected));
  }
  for (std::int64_t i = 0; i < expected; ++i) {
    const auto& span = spans[static_cast<std::size_t>(i)];
    if (static_cast<std::int64_t>(span.size()) != block_bytes) {
      throw InvalidArgument(ctx, fmt::format("request {}: layer {} block {} has {} bytes, a block of this rank's heads "
                                             "has {}", id, i / blocks, i % blocks, span.size(), block_bytes));
    }
  }
}

template void check_block_spans<std::byte>(std::span<const std::span<std::byte>>, const KvBlockLayout&, std::int64_t,
                                           std::int64_t, std::int64_t, const ErrorContext&);
template void check_block_spans<const std::byte>(std::span<const std::span<const std::byte>>, const KvBlockLayout&,
                                                 std::int64_t, std::int64_t, std::int64_t, const ErrorContext&);

}  // namespace braid::serving
