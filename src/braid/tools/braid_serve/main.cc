// braid-serve: greedy generation with braid-train's GPT, tensor-parallel over the job's ranks,
// from a paged KV cache (docs/serving.md).
//
//   braid-run -n 2 braid-serve --model gpt-small --tp 2 --prompt "Hello" --max-new-tokens 32 --json out.json
#include <fmt/format.h>
#include <fmt/ranges.h>

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

// braid-train --export wrote the whole model with torch::save (training_common.cc; a TP or mesh
// run exports its gathered full model), so it loads into make_gpt's model of the same shape.
// LibTorch's reader replaces a parameter with the file's tensor whatever its shape, so the
// shapes are compared after the load: a file of another model is refused, never half-used.
void load_export(train::TrainModel& gpt, const ServeConfig& c, std::int64_t vocab) {
  GptShape s = gpt_shape(c);
  auto refuse = [&](const std::string& why) {
    throw InvalidArgument({.op = "braid-serve --checkpoint"},
                          fmt::format("{} is not a braid-train --export of a GPT of width {}, {} layers, {} heads, "
                                      "context {} and {} characters: {}",
                                      c.checkpoint, s.width, s.layers, s.heads, s.context, vocab, why));
  };
  std::vector<std::vector<std::int64_t>> shapes;
  for (const ::torch::Tensor& p : gpt.parameters()) shapes.push_back(p.sizes().vec());
  try {
    std::shared_ptr<::torch::nn::Module> module = gpt.shared_from_this();
    ::torch::load(module, c.checkpoint);
  } catch (const c10::Error& e) {
    refuse(e.what_without_backtrace());
  }
  auto named = gpt.named_parameters();
  for (std::size_t i = 0; i < named.size(); ++i) {
    if (named[i].value().sizes().vec() != shapes[i]) {
      refuse(fmt::format("{} is {} in the file, {} in this model", named[i].key(), fmt::join(named[i].value().sizes(), "x"),
                         fmt::join(shapes[i], "x")));
    }
  }
}

std::shared_ptr<train::TrainModel> seeded_gpt(const ServeConfig& c, std::int64_t vocab) {
  GptShape s = gpt_shape(c);
  ::torch::manual_seed(c.seed);  // as braid-train does before make_model: the same initial parameters
  std::shared_ptr<train::TrainModel> gpt = train::make_gpt(
      train::ModelSpec{.name = c.model, .vocab = vocab, .context = s.context, .width = s.width, .layers = s.layers,
                       .heads = s.heads});
  if (!c.checkpoint.empty()) load_export(*gpt, c, vocab);
  return gpt;
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
  check_fits_context(static_cast<std::int64_t>(prompt.size()), config);
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
    braid::train::restart_with_better_blas_core(argv);  // as braid-train: OpenBLAS's best kernels for this CPU
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
