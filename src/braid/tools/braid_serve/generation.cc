#include "braid/tools/braid_serve/generation.h"

#include "braid/base/clock.h"

namespace braid::serve {
namespace {

std::int64_t greedy(const ::torch::Tensor& logits) { return logits.argmax().item<std::int64_t>(); }

// Runs `work`, returning its logits' greedy token and how long it took, and how much of it was
// inside the meter's collectives.
template <class Work>
std::int64_t timed(const CollectiveMeter& meter, TokenTiming& timing, Work&& work) {
  std::int64_t comm_before = meter.total_ns(), start = now_ns();
  std::int64_t token = greedy(work());
  timing.total_ns = now_ns() - start;
  timing.comm_ns = meter.total_ns() - comm_before;
  return token;
}

}  // namespace

CachedGeneration generate_with_cache(GptDecoder& decoder, const CollectiveMeter& meter,
                                     const std::vector<std::int64_t>& prompt, std::int64_t max_new_tokens) {
  constexpr GptDecoder::SequenceId kSequence = 0;
  CachedGeneration out;
  decoder.start(kSequence);
  out.tokens.push_back(timed(meter, out.prefill, [&] { return decoder.prefill(kSequence, prompt); }));
  while (static_cast<std::int64_t>(out.tokens.size()) < max_new_tokens) {
    TokenTiming timing;
    out.tokens.push_back(timed(meter, timing, [&] { return decoder.step(kSequence, out.tokens.back()); }));
    out.steps.push_back(timing);
  }
  out.cached_tokens = decoder.cache().length(kSequence);
  out.blocks_used = decoder.cache().used_blocks();
  decoder.finish(kSequence);
  return out;
}

std::vector<std::int64_t> generate_by_recompute(train::TrainModel& full, const std::vector<std::int64_t>& prompt,
                                                std::int64_t max_new_tokens) {
  ::torch::NoGradGuard no_grad;
  full.eval();
  std::vector<std::int64_t> sequence = prompt, generated;
  while (static_cast<std::int64_t>(generated.size()) < max_new_tokens) {
    ::torch::Tensor logits = full.forward(::torch::tensor(sequence, ::torch::kInt64).unsqueeze(0));  // [1, t, vocab]
    generated.push_back(greedy(logits[0][-1]));
    sequence.push_back(generated.back());
  }
  return generated;
}

}  // namespace braid::serve
