// Rank program for the tensor-parallel tests (tests/torch/tensor_parallel_test.cc): every rank of
// the job is one TP rank (tp = world). Each scenario builds the single-process GPT (make_gpt) from
// one seed on every rank — the reference, computed locally — and its TP twin
// (make_tensor_parallel_gpt) from it, and compares them.
//   braid-tp-rank gpt-gradients [--sp]  loss, gathered logits and gathered gradients equal the
//                                       reference; the vocabulary padding rows get zero gradient
//   braid-tp-rank sp-equals-tp          sequence parallelism changes nothing (loss, gradients)
//   braid-tp-rank rng                   TensorParallelRng's streams and state()/set_state()
//   braid-tp-rank clip [--sp]           global_gradient_norm = the reference norm; clipping
//   braid-tp-rank bad-heads             4 heads on tp 3: InvalidArgument naming the layer
// Prints "PASS <check> ..." / "FAIL <check> ..." lines and "PASS <scenario>" at the end; exits 1
// after any FAIL. A braid::Error is printed as "ERROR <kind>: <message>" and exits 1, after a
// barrier so that every rank prints its own before braid-run stops the job.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "braid/tools/braid_train/models.h"
#include "braid/torch/gradient_clipping.h"
#include "braid/torch/tensor_parallel_mappings.h"
#include "braid/torch/tensor_parallel_rng.h"
#include "braid/torch/vocab_parallel.h"

#include "tensor_checks.h"

namespace {

namespace bt = braid::torch;
using braid::Communicator;
using braid::train::TrainModel;

constexpr std::int64_t kVocab = 37;  // not divisible by 2 or 4: the TP vocabulary is padded
constexpr std::int64_t kContext = 8;
constexpr std::int64_t kBatch = 3;
constexpr std::uint64_t kSeed = 1234;

using braid::testing::check;
using braid::testing::close;

braid::train::ModelSpec small_gpt() {
  return {.name = "gpt", .vocab = kVocab, .context = kContext, .width = 32, .layers = 2, .heads = 4, .dropout = 0};
}

// Tolerance of every TP-vs-single-process comparison: float32, and the TP model sums the same
// products in another order (partial matmuls allreduced over tp pieces, the softmax's sum of
// exponentials in tp pieces), so results differ by a few ulps of the tensor's largest values:
// relative ~1e-6..1e-5 of max|ref|. rtol 1e-4 with atol 1e-5 * max|ref| leaves a margin of ~10x
// over that, while a wrong shard, a missing allreduce or a gradient counted twice is off by
// O(max|ref|).
// (braid::testing::close, tensor_checks.h, applies it.)

struct Batch {
  torch::Tensor tokens, target;  // [kBatch, kContext] int64
};

Batch fixed_batch() {
  torch::manual_seed(kSeed + 1);
  return {torch::randint(0, kVocab, {kBatch, kContext}, torch::kLong),
          torch::randint(0, kVocab, {kBatch, kContext}, torch::kLong)};
}

struct Result {
  double loss = 0;
  torch::Tensor logits;                               // [b, t, V]
  std::vector<std::pair<std::string, torch::Tensor>> grads;  // the full model's names and shapes
};

// The reference: the single-process GPT, forward, mean cross-entropy, backward.
std::shared_ptr<TrainModel> reference_model(Result& r, const Batch& batch) {
  torch::manual_seed(kSeed);
  std::shared_ptr<TrainModel> full = braid::train::make_gpt(small_gpt());
  torch::Tensor logits = full->forward(batch.tokens);
  torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, kVocab}), batch.target.reshape(-1));
  loss.backward();
  r.loss = loss.item<double>();
  r.logits = logits.detach();
  for (const auto& p : full->named_parameters()) r.grads.emplace_back(p.key(), p.value().grad().detach().clone());
  return full;
}

// The TP model's gradients, gathered to the full model's shapes: each TP parameter's value is
// swapped with its gradient, the model unsharded into a scratch single-process GPT (whose
// parameters are then the gathered gradients), and the values restored.
std::vector<std::pair<std::string, torch::Tensor>> gathered_gradients(TrainModel& tp_model) {
  std::vector<torch::Tensor> params = tp_model.parameters(), saved;
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : params) {
    saved.push_back(p.detach().clone());
    p.copy_(p.grad());
  }
  torch::manual_seed(kSeed + 99);
  std::shared_ptr<TrainModel> scratch = braid::train::make_gpt(small_gpt());
  braid::train::unshard_tensor_parallel_gpt(tp_model, *scratch);
  for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(saved[i]);
  std::vector<std::pair<std::string, torch::Tensor>> grads;
  for (const auto& p : scratch->named_parameters()) grads.emplace_back(p.key(), p.value().detach().clone());
  return grads;
}

torch::Tensor tp_parameter(TrainModel& tp_model, const std::string& name) {
  for (const auto& p : tp_model.named_parameters())
    if (p.key() == name) return p.value();
  throw braid::InvalidArgument({.op = "braid-tp-rank"}, "the TP model has no parameter " + name);
}

// Rows of the local vocabulary shard that are padding (global row >= kVocab): exactly zero
// gradient, bit for bit (+0.0f).
void check_padding_rows(TrainModel& tp_model, Communicator& comm, const std::string& when) {
  bt::VocabRange range = bt::vocab_range(kVocab, comm.rank(), comm.size());
  std::int64_t first_pad = std::clamp<std::int64_t>(kVocab - range.begin, 0, range.size());
  std::int64_t pads = range.size() - first_pad;
  if (comm.rank() == comm.size() - 1) {
    check(pads == bt::padded_vocabulary(kVocab, comm.size()) - kVocab, "padding-rows-on-last-rank " + when,
          std::to_string(pads) + " rows");
  }
  for (const std::string name : {"layers.embeddings.tokens.weight", "layers.head.weight", "layers.head.bias"}) {
    torch::Tensor g = tp_parameter(tp_model, name).grad();
    if (!g.defined()) {
      check(false, "padding-grad " + name + " " + when, "no gradient");
      continue;
    }
    torch::Tensor rows = g.narrow(0, first_pad, pads).contiguous();
    std::int64_t nonzero = (rows.view(torch::kInt32) != 0).sum().item<std::int64_t>();
    check(nonzero == 0, "padding-grad-bitwise-zero " + name + " " + when,
          std::to_string(pads) + " rows, " + std::to_string(nonzero) + " non-zero words");
  }
}

struct TpRun {
  std::shared_ptr<TrainModel> model;
  Result result;
};

// The TP twin of `full` (unmodified: its parameters are the reference's initial ones), forward
// on `batch`, vocab-parallel cross-entropy, backward; with SP the replicated parameters'
// partial gradients are summed over TP before anything looks at them.
TpRun tensor_parallel_run(TrainModel& full, Communicator& comm, bool sp, const Batch& batch, bool check_padding) {
  TpRun run;
  run.model = braid::train::make_tensor_parallel_gpt(full, comm, {.sequence_parallel = sp});
  torch::Tensor logits = run.model->forward(batch.tokens);
  torch::Tensor loss = bt::vocab_parallel_cross_entropy(logits, batch.target, comm, kVocab).mean();
  loss.backward();
  std::string tag = sp ? "sp" : "tp";
  if (check_padding) check_padding_rows(*run.model, comm, tag + " after-backward");
  if (sp) bt::sync_sequence_parallel_gradients(bt::split_by_tensor_parallelism(*run.model).replicated, comm);
  if (check_padding) check_padding_rows(*run.model, comm, tag + " after-sp-gradient-sum");
  run.result.loss = loss.item<double>();
  run.result.logits = bt::tp_gather_tensor(logits.detach(), comm, -1).narrow(-1, 0, kVocab);
  run.result.grads = gathered_gradients(*run.model);
  return run;
}

void compare(const Result& got, const Result& ref, const std::string& tag) {
  close(torch::tensor(got.loss, torch::kDouble), torch::tensor(ref.loss, torch::kDouble), tag + " loss");
  close(got.logits, ref.logits, tag + " logits");
  if (got.grads.size() != ref.grads.size()) {
    check(false, tag + " gradient-count", std::to_string(got.grads.size()) + " vs " + std::to_string(ref.grads.size()));
    return;
  }
  for (std::size_t i = 0; i < got.grads.size(); ++i) {
    check(got.grads[i].first == ref.grads[i].first, tag + " grad-name " + got.grads[i].first);
    close(got.grads[i].second, ref.grads[i].second, tag + " grad " + ref.grads[i].first);
  }
}

void gpt_gradients(Communicator& comm, bool sp) {
  Batch batch = fixed_batch();
  Result ref;
  std::shared_ptr<TrainModel> full = reference_model(ref, batch);
  TpRun run = tensor_parallel_run(*full, comm, sp, batch, /*check_padding=*/true);
  compare(run.result, ref, sp ? "sp-vs-reference" : "tp-vs-reference");
  // A second micro-batch accumulated into the same gradients (a gradient sum): the padding rows
  // still receive nothing.
  Batch second = fixed_batch();
  torch::manual_seed(kSeed + 7);
  second.tokens = torch::randint(0, kVocab, {kBatch, kContext}, torch::kLong);
  torch::Tensor logits = run.model->forward(second.tokens);
  bt::vocab_parallel_cross_entropy(logits, second.target, comm, kVocab).mean().backward();
  if (sp) bt::sync_sequence_parallel_gradients(bt::split_by_tensor_parallelism(*run.model).replicated, comm);
  check_padding_rows(*run.model, comm, std::string(sp ? "sp" : "tp") + " after-accumulated-gradient-sum");
}

void sp_equals_tp(Communicator& comm) {
  Batch batch = fixed_batch();
  Result ref;
  std::shared_ptr<TrainModel> full = reference_model(ref, batch);
  TpRun tp = tensor_parallel_run(*full, comm, false, batch, false);
  TpRun sp = tensor_parallel_run(*full, comm, true, batch, false);
  compare(sp.result, tp.result, "sp-vs-tp");
}

double norm_of(const std::vector<std::pair<std::string, torch::Tensor>>& grads) {
  double sum = 0;
  for (const auto& g : grads) sum += g.second.to(torch::kDouble).pow(2).sum().item<double>();
  return std::sqrt(sum);
}

void clip(Communicator& comm, bool sp) {
  Batch batch = fixed_batch();
  Result ref;
  std::shared_ptr<TrainModel> full = reference_model(ref, batch);
  double ref_norm = norm_of(ref.grads);
  TpRun run = tensor_parallel_run(*full, comm, sp, batch, false);
  bt::ParameterSplit split = bt::split_by_tensor_parallelism(*run.model);
  std::string tag = sp ? "sp" : "tp";
  double norm = bt::global_gradient_norm(split, comm.rank(), comm);
  std::printf("NORM reference=%.9g tp=%.9g\n", ref_norm, norm);
  close(torch::tensor(norm, torch::kDouble), torch::tensor(ref_norm, torch::kDouble), tag + " global-gradient-norm");
  double before = bt::clip_gradients_by_global_norm(split, ref_norm / 2, comm.rank(), comm);
  close(torch::tensor(before, torch::kDouble), torch::tensor(ref_norm, torch::kDouble), tag + " clip-returns-norm");
  std::vector<std::pair<std::string, torch::Tensor>> clipped = gathered_gradients(*run.model);
  close(torch::tensor(norm_of(clipped), torch::kDouble), torch::tensor(ref_norm / 2, torch::kDouble),
        tag + " clipped-norm-is-half");
  double scale = (ref_norm / 2) / (before + 1e-6);
  for (std::size_t i = 0; i < clipped.size(); ++i)
    close(clipped[i].second, ref.grads[i].second * scale, tag + " clipped-grad " + ref.grads[i].first);
}

void rng(Communicator& comm) {
  bt::TensorParallelRng rng(kSeed, comm.rank());
  torch::Tensor ones = torch::ones({4096});
  auto mask = [&](at::Generator& g) { return bt::TensorParallelRng::dropout(ones, 0.5, true, g); };
  // Every rank gets every rank's mask (gathered along dim 0) and checks them all.
  auto all = [&](const torch::Tensor& m) { return bt::tp_gather_tensor(m.unsqueeze(0), comm, 0); };
  torch::Tensor rep = all(mask(rng.replicated()));
  torch::Tensor par = all(mask(rng.tensor_parallel()));
  bool same = true, differ = true;
  for (int r = 1; r < comm.size(); ++r) same = same && torch::equal(rep[r], rep[0]);
  for (int a = 0; a < comm.size(); ++a)
    for (int b = a + 1; b < comm.size(); ++b) differ = differ && !torch::equal(par[a], par[b]);
  double kept = (rep[0] != 0).to(torch::kDouble).mean().item<double>();
  check(same, "replicated-mask-identical-across-tp", "kept fraction " + std::to_string(kept));
  check(differ, "tensor-parallel-mask-differs-between-tp-ranks");
  torch::Tensor state = rng.state();
  torch::Tensor a1 = mask(rng.replicated()), b1 = mask(rng.tensor_parallel()), a2 = mask(rng.replicated());
  rng.set_state(state);
  torch::Tensor a1r = mask(rng.replicated()), b1r = mask(rng.tensor_parallel()), a2r = mask(rng.replicated());
  check(torch::equal(a1, a1r) && torch::equal(b1, b1r) && torch::equal(a2, a2r), "set-state-restores-both-streams");
  check(!torch::equal(a1, a2), "successive-masks-differ");
}

void bad_heads(Communicator& comm) {
  torch::manual_seed(kSeed);
  std::shared_ptr<TrainModel> full = braid::train::make_gpt(small_gpt());
  braid::train::make_tensor_parallel_gpt(*full, comm, {});
  check(false, "bad-heads-throws", "make_tensor_parallel_gpt accepted 4 heads on tp " + std::to_string(comm.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::strcmp(argv[2], "--sp") != 0)) {
    std::fprintf(stderr, "usage: braid-tp-rank SCENARIO [--sp]\n");
    return 2;
  }
  std::string scenario = argv[1];
  bool sp = argc == 3;
  braid::Communicator comm = braid::Communicator::init();
  try {
    torch::set_num_threads(1);  // ranks share the machine's cores
    if (scenario == "gpt-gradients") gpt_gradients(comm, sp);
    else if (scenario == "sp-equals-tp") sp_equals_tp(comm);
    else if (scenario == "rng") rng(comm);
    else if (scenario == "clip") clip(comm, sp);
    else if (scenario == "bad-heads") bad_heads(comm);
    else throw braid::InvalidArgument({.op = "braid-tp-rank"}, "unknown scenario " + scenario);
  } catch (const braid::Error& e) {
    std::printf("ERROR %s: %s\n", braid::error_kind_name(e.kind()), e.what());
    std::fflush(stdout);
    comm.barrier();  // every rank prints its error before any exits non-zero
    return 1;
  }
  std::printf("%s %s%s (rank %d)\n", braid::testing::failed_checks() == 0 ? "PASS" : "FAIL", scenario.c_str(), sp ? " --sp" : "", comm.rank());
  std::fflush(stdout);
  return braid::testing::failed_checks() == 0 ? 0 : 1;
}
