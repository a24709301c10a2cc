#include "braid/tools/braid_serve/disaggregated.h"

#include <fmt/format.h>

#include <span>

#include "braid/base/clock.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/serving/kv_stream_receiver.h"
#include "braid/serving/kv_stream_sender.h"
#include "braid/tools/braid_serve/gpt_decoder.h"

namespace braid::serve {
namespace {

constexpr GptDecoder::SequenceId kSequence = 0;
constexpr std::int64_t kRequest = 0;

std::int64_t greedy(const ::torch::Tensor& logits) { return logits.argmax().item<std::int64_t>(); }

std::vector<std::span<std::byte>> sequence_spans(torch::PagedKvCache& cache) {
  std::vector<std::span<std::byte>> spans;
  for (int l = 0; l < cache.layout().layers; ++l) {
    for (std::int64_t block : cache.block_table(kSequence)) {
      const torch::KvBlockSpan s = cache.block_span(l, block);
      spans.emplace_back(s.data, static_cast<std::size_t>(s.bytes));
    }
  }
  return spans;
}

serving::KvStreamSpec stream_spec(GptDecoder& decoder, const ServeConfig& c, std::int64_t context) {
  return {.layout = decoder.cache().layout(), .prefill_ranks = c.prefill_ranks,
          .prefill_tp = c.prefill_ranks, .decode_tp = c.tp, .max_tokens = context, .max_in_flight = 1};
}

// Prefill side: returns the first generated token (the prefill's own greedy pick).
std::int64_t prefill(Communicator& world, GptDecoder& decoder, const ServeConfig& c, const std::vector<std::int64_t>& prompt,
                     DisaggregatedGeneration& out) {
  serving::KvStreamSender sender(world, stream_spec(decoder, c, decoder.spec().context));
  const std::int64_t start = now_ns();
  decoder.start(kSequence);
  const int layers = decoder.cache().layout().layers;
  const auto layer_done = [&](int layer) {
    if (layer == 0) {  // the cache has its blocks now (prefill extends it before the first layer)
      const auto spans = sequence_spans(decoder.cache());
      sender.submit(kRequest, static_cast<std::int64_t>(prompt.size()), 0, {spans.begin(), spans.end()});
    }
    if (!c.kv_after_prefill) sender.layer_ready(kRequest, layer);
  };
  const std::int64_t first = greedy(decoder.prefill(kSequence, prompt, layer_done));
  for (int l = 0; c.kv_after_prefill && l < layers; ++l) sender.layer_ready(kRequest, l);
  const serving::KvRequestOutcome done = sender.wait(kRequest);
  if (!done.ok) throw PeerLost({.rank = world.rank(), .op = "braid-serve prefill"}, done.error);
  out.ttft_ns = now_ns() - start;
  out.kv_bytes = done.bytes;
  sender.close();
  decoder.finish(kSequence);
  return first;
}

// Decode side, once every layer is in: greedy steps from the prefill's first token.
std::vector<std::int64_t> decode(GptDecoder& decoder, const ServeConfig& c, std::int64_t first) {
  std::vector<std::int64_t> tokens{first};
  while (static_cast<std::int64_t>(tokens.size()) < c.max_new_tokens) tokens.push_back(greedy(decoder.step(kSequence, tokens.back())));
  decoder.finish(kSequence);
  return tokens;
}

// Decode side: every layer into the decode rank's own paged cache, in place.
void receive(Communicator& world, GptDecoder& decoder, const ServeConfig& c, DisaggregatedGeneration& out) {
  serving::KvStreamReceiver receiver(world, stream_spec(decoder, c, decoder.spec().context),
                                     [&](std::int64_t, std::int64_t tokens, int) {
                                       decoder.start(kSequence);
                                       decoder.cache().extend(kSequence, tokens);
                                       return std::optional<std::vector<std::span<std::byte>>>(sequence_spans(decoder.cache()));
                                     });
  while (!receiver.closed()) {
    for (const serving::KvArrival& a : receiver.wait_any()) {
      if (!a.ok) throw InvalidArgument({.rank = world.rank(), .op = "braid-serve decode"}, a.error);
      out.kv_bytes += a.bytes;
    }
  }
}

}  // namespace

DisaggregatedGeneration generate_disaggregated(Communicator& world, train::TrainModel& full, const ServeConfig& c,
                                               const std::vector<std::int64_t>& prompt) {
  const bool prefill_side = world.rank() < c.prefill_ranks;
  std::optional<Communicator> role = world.split(prefill_side ? 0 : 1, world.rank());  // the TP group of each side
  GptDecoder decoder(full, *role, DecoderOptions{.block_tokens = c.block_tokens, .cache_blocks = c.cache_blocks});
  DisaggregatedGeneration out;
  std::int64_t first = -1;
  if (prefill_side) {
    first = prefill(world, decoder, c, prompt, out);
  } else {
    receive(world, decoder, c, out);
  }
  // The first token and the prefill's time to first token, from prefill rank 0 to everyone.
  std::int64_t head[2] = {first, out.ttft_ns};
  broadcast(world, head, 2, DType::kI64, 0);
  out.ttft_ns = head[1];
  if (!prefill_side) out.tokens = decode(decoder, c, head[0]);
  out.tokens.resize(static_cast<std::size_t>(c.max_new_tokens));
  broadcast(world, out.tokens.data(), c.max_new_tokens, DType::kI64, c.prefill_ranks);  // the decode side's tokens
  return out;
}

}  // namespace braid::serve
