// braid-serve: greedy generation with braid-train's GPT, tensor-parallel over the job's ranks,
// from a paged KV cache (docs/serving.md).
//
//   braid-run -n 2 braid-serve --model gpt-small --tp 2 --prompt "Hello" --max-new-tokens 32 --json out.json
#include <fmt/format.h>

#include <cstdio>

#include "braid/base/atomic_file.h"
#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/comm/communicator.h"
#include "braid/tools/braid_serve/char_vocabulary.h"
#include "braid/tools/braid_serve/collective_meter.h"
#include "braid/tools/braid_serve/disaggregated.h"
#include "braid/tools/braid_serve/generation.h"
#include "braid/tools/braid_serve/gpt_decoder.h"
#include "braid/tools/braid_serve/serve_config.h"
#include "braid/tools/braid_serve/serve_report.h"
#include "braid/tools/braid_train/blas_runtime.h"
#include "braid/tools/common/tool_main.h"

namespace braid::serve {
namespace {

void check_fits_context(const std::vector<std::int64_t>& prompt, const ServeConfig& c) {
  std::int64_t context = gpt_shape(c).context, positions = static_cast<std::int64_t>(prompt.size()) + c.max_new_tokens - 1;
  if (positions <= context) return;
  throw InvalidArgument({.op = "braid-serve"},
                        fmt::format("a prompt of {} tokens and --max-new-tokens {} need {} positions; the model's "
                                    "context is {} (--context)",
                                    prompt.size(), c.max_new_tokens, positions, context));
}

std::shared_ptr<train::TrainModel> seeded_gpt(const ServeConfig& c, std::int64_t vocab) {
  GptShape s = gpt_shape(c);
  ::torch::manual_seed(c.seed);  // as braid-train does before make_model: the same initial parameters
  return train::make_gpt(train::ModelSpec{.name = c.model, .vocab = vocab, .context = s.context, .width = s.width,
                                          .layers = s.layers, .heads = s.heads});
}

// Every rank must have generated the same tokens (the decoder's replicated tail guarantees it;
// this makes a violation an error instead of a silently different answer per rank).
void check_ranks_agree(Communicator& comm, const std::vector<std::int64_t>& tokens) {
  if (comm.size() == 1) return;
  std::vector<std::int64_t> all(tokens.size() * static_cast<std::size_t>(comm.size()));
  allgather(comm, tokens.data(), all.data(), static_cast<std::int64_t>(tokens.size()), DType::kI64);
  for (int r = 0; r < comm.size(); ++r) {
    if (!std::equal(tokens.begin(), tokens.end(), all.begin() + static_cast<std::ptrdiff_t>(r * tokens.size()))) {
      throw Mismatch({.rank = comm.rank(), .peer = r, .op = "braid-serve generation"},
                     "this rank and the peer generated different tokens");
    }
  }
}

ServeRun serve(Communicator& comm, const ServeConfig& config) {
  CharVocabulary vocabulary = CharVocabulary::of_corpus(config.data_dir(), gpt_shape(config).context);
  std::vector<std::int64_t> prompt = vocabulary.encode(read_prompt(config));
  check_fits_context(prompt, config);
  std::shared_ptr<train::TrainModel> full = seeded_gpt(config, vocabulary.size());
  ServeRun run{.config = &config, .vocab = vocabulary.size(), .prompt_tokens = static_cast<std::int64_t>(prompt.size())};
  if (config.recompute) {
    run.generation.tokens = generate_by_recompute(*full, prompt, config.max_new_tokens);
  } else if (config.prefill_ranks > 0) {
    const DisaggregatedGeneration d = generate_disaggregated(comm, *full, config, prompt);
    run.generation.tokens = d.tokens;
    run.disaggregated_ttft_ns = d.ttft_ns;
    run.kv_bytes_sent = d.kv_bytes;  // rank 0's: a prefill rank's share
  } else {
    CollectiveMeter meter(comm);
    GptDecoder decoder(*full, comm, DecoderOptions{.block_tokens = config.block_tokens, .cache_blocks = config.cache_blocks});
    run.generation = generate_with_cache(decoder, meter, prompt, config.max_new_tokens);
    run.collectives = meter.calls();
  }
  check_ranks_agree(comm, run.generation.tokens);
  run.text = vocabulary.decode(run.generation.tokens);
  return run;
}

}  // namespace
}  // namespace braid::serve

int main(int argc, char** argv) {
  CLI::App app{"braid-serve: greedy generation with braid-train's GPT, tensor-parallel over the job's ranks, from a "
               "paged KV cache.\nRun under a launcher: braid-run -n 2 braid-serve --model gpt-small --tp 2 --prompt "
               "\"Hello\" --max-new-tokens 32"};
  braid::serve::ServeConfig config;
  braid::serve::add_serve_flags(app, config);
  return braid::tools::run_tool("braid-serve", app, argc, argv, [&] {
    braid::Communicator comm = braid::Communicator::init();
    braid::serve::validate(config, comm.size());  // InvalidArgument: the command line's fault, exit 2
    ::torch::set_num_threads(config.threads);
    braid::train::set_blas_threads(config.threads);
    braid::serve::ServeRun run = braid::serve::serve(comm, config);
    if (comm.rank() == 0) {
      braid::serve::print_report(run);
      if (!config.json_path.empty()) braid::write_file_atomically(config.json_path, braid::serve::to_json(run).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    }
    return 0;
  });
}
