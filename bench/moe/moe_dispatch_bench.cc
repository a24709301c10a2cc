// braid-moe-bench: one MoE layer's dispatch -> experts -> combine (MoeDispatcher::run) per
// iteration, for each chunk count, against its two parts measured alone: the exchange (run
// with experts that do nothing) and the experts' compute (the same expert function on the
// same rows, no exchange). The share of the all-to-all hidden by pipelining is
//   hidden = (exchange + compute - pipelined) / exchange, clamped to [0, 1],
// medians of --iters iterations, each iteration's time the slowest rank's (a max allreduce),
// the variants interleaved within each iteration. speedup: chunks = the first's pipelined time
// over this one's.
// Each expert is a two-layer MLP, hidden -> ffn -> hidden with ReLU (a small GEMM loop), so
// the compute is real; #wrong counts the output elements that differ from chunks = 1's (0: the
// pipelined result is the unpipelined one, bit for bit).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "braid/base/splitmix64.h"
#include "braid/collectives/collectives.h"
#include "braid/comm/communicator.h"
#include "braid/parallel/moe_dispatcher.h"

namespace {

using braid::parallel::MoeExpertChunk;

struct Flags {
  std::int64_t tokens = 2048, hidden = 256, ffn = 256;
  int experts_per_rank = 2, top_k = 2, iters = 10, warmup = 2;
  double capacity_factor = 1.25;
  std::vector<int> chunks{1, 2, 4, 8};
  // > 0: the experts are "offloaded": each chunk sleeps rows x this many ns and copies its
  // input to its output, as a rank whose experts run on an accelerator leaves its cores free.
  std::int64_t offload_ns_per_row = 0;
};

// Per expert: W1 (ffn x hidden), W2 (hidden x ffn), from a seed every rank shares.
class Experts {
 public:
  Experts(int experts, std::int64_t hidden, std::int64_t ffn) : hidden_(hidden), ffn_(ffn) {
    braid::SplitMix64 rng(42);
    weights_.resize(static_cast<std::size_t>(experts * 2 * hidden * ffn));
    for (float& w : weights_) w = static_cast<float>(rng.next_unit() - 0.5) / static_cast<float>(hidden);
  }
  void operator()(const MoeExpertChunk& c) const {
    std::vector<float> mid(static_cast<std::size_t>(ffn_));
    const auto* in = static_cast<const float*>(c.input);
    auto* out = static_cast<float*>(c.output);
    for (std::size_t le = 0; le + 1 < c.expert_offsets.size(); ++le) {
      const float* w1 = weights_.data() + static_cast<std::size_t>((c.first_expert + static_cast<int>(le)) * 2 * hidden_ * ffn_);
      const float* w2 = w1 + hidden_ * ffn_;
      for (std::int64_t r = c.expert_offsets[le]; r < c.expert_offsets[le + 1]; ++r) {
        const float* x = in + r * hidden_;
        for (std::int64_t f = 0; f < ffn_; ++f) {
          float acc = 0;
          for (std::int64_t h = 0; h < hidden_; ++h) acc += w1[f * hidden_ + h] * x[h];
          mid[static_cast<std::size_t>(f)] = std::max(acc, 0.0f);
        }
        float* y = out + r * hidden_;
        for (std::int64_t h = 0; h < hidden_; ++h) {
          float acc = 0;
          for (std::int64_t f = 0; f < ffn_; ++f) acc += w2[h * ffn_ + f] * mid[static_cast<std::size_t>(f)];
          y[h] = acc;
        }
      }
    }
  }

 private:
  std::int64_t hidden_, ffn_;
  std::vector<float> weights_;
};

double slowest(braid::Communicator& comm, double seconds) {
  braid::allreduce(comm, &seconds, &seconds, 1, braid::DType::kF64, braid::ReduceOp::kMax);
  return seconds;
}

// The slowest rank's time of one call of `body`, all ranks starting together.
template <class F>
double timed(braid::Communicator& comm, F&& body) {
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  body();
  return slowest(comm, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int run(const Flags& f) {
  braid::Communicator comm = braid::Communicator::init();
  const int experts = f.experts_per_rank * comm.size();
  braid::SplitMix64 rng(1000 + static_cast<std::uint64_t>(comm.rank()));
  std::vector<std::int32_t> ids;
  std::vector<float> gates, x(static_cast<std::size_t>(f.tokens * f.hidden));
  for (std::int64_t t = 0; t < f.tokens; ++t) {
    const auto first = static_cast<std::int32_t>(braid::uniform_below(rng, static_cast<std::uint64_t>(experts)));
    for (int j = 0; j < f.top_k; ++j) {
      ids.push_back((first + j) % experts);
      gates.push_back(static_cast<float>(rng.next_unit()));
    }
  }
  for (float& v : x) v = static_cast<float>(rng.next_unit() - 0.5);
  braid::parallel::MoeDispatcher moe(comm, {.experts = experts, .top_k = f.top_k, .hidden = f.hidden,
                                            .capacity_factor = f.capacity_factor});
  const Experts gemm(experts, f.hidden, f.ffn);
  const braid::parallel::MoeExpertFunction mlp = [&](const MoeExpertChunk& c) {
    if (f.offload_ns_per_row <= 0) return gemm(c);
    std::this_thread::sleep_for(std::chrono::nanoseconds(f.offload_ns_per_row * c.rows));
    std::memcpy(c.output, c.input, static_cast<std::size_t>(c.rows * c.hidden) * sizeof(float));
  };
  std::vector<float> out(x.size()), reference(x.size());
  const double row_bytes = static_cast<double>(f.hidden) * 4;
  if (comm.rank() == 0) {
    fmt::print("# braid-moe-bench: {} ranks, {} tokens/rank, hidden {}, {}, {} experts, top-{}, cf {}\n", comm.size(),
               f.tokens, f.hidden,
               f.offload_ns_per_row > 0 ? fmt::format("experts offloaded ({} ns/row)", f.offload_ns_per_row)
                                        : fmt::format("MLP experts (ffn {})", f.ffn),
               experts, f.top_k, f.capacity_factor);
    fmt::print("{:>6} {:>10} {:>12} {:>12} {:>12} {:>8} {:>10} {:>7}\n", "chunks", "MiB/rank", "exchange_ms",
               "compute_ms", "pipelined_ms", "hidden", "speedup", "#wrong");
  }
  // Every iteration measures every variant of every chunk count in turn, so a change in the
  // machine's load (it is shared) falls on all of them alike.
  struct Series {
    braid::parallel::MoeDispatchPlan plan;
    std::vector<double> exchange, compute, pipelined;
    std::int64_t wrong = 0;
  };
  std::vector<Series> series;
  for (int chunks : f.chunks) series.push_back({.plan = moe.plan(ids, f.tokens, chunks)});
  std::vector<float> in, res;
  for (int i = 0; i < f.warmup + f.iters; ++i) {
    for (std::size_t s = 0; s < series.size(); ++s) {
      Series& m = series[s];
      in.resize(static_cast<std::size_t>(m.plan.expert_rows() * f.hidden));
      res.resize(in.size());
      const double exchange = timed(comm, [&] {
        moe.run(m.plan, x.data(), gates.data(), [](const MoeExpertChunk&) {}, out.data());
      });
      const double compute = timed(comm, [&] {
        for (int c = 0; c < m.plan.chunks(); ++c) {
          const auto& chunk = m.plan.layout.chunk(c);
          mlp({.first_expert = moe.first_local_expert(), .expert_offsets = chunk.expert_offsets, .input = in.data(),
               .output = res.data(), .rows = chunk.recv_rows, .hidden = f.hidden});
        }
      });
      const double pipelined = timed(comm, [&] { moe.run(m.plan, x.data(), gates.data(), mlp, out.data()); });
      if (s == 0) reference = out;
      for (std::size_t e = 0; e < out.size(); ++e) m.wrong += std::memcmp(&out[e], &reference[e], sizeof(float)) != 0;
      if (i < f.warmup) continue;
      m.exchange.push_back(exchange);
      m.compute.push_back(compute);
      m.pipelined.push_back(pipelined);
    }
  }
  const double unpipelined = median(series.front().pipelined);
  for (Series& m : series) {
    braid::allreduce(comm, &m.wrong, &m.wrong, 1, braid::DType::kI64, braid::ReduceOp::kSum);
    const double exchange = median(m.exchange), compute = median(m.compute), pipelined = median(m.pipelined);
    const double hidden = std::clamp((exchange + compute - pipelined) / exchange, 0.0, 1.0);
    const double mib = 2.0 * static_cast<double>(m.plan.layout.send_rows()) * row_bytes / (1 << 20);
    if (comm.rank() == 0) {
      fmt::print("{:>6} {:>10.2f} {:>12.2f} {:>12.2f} {:>12.2f} {:>7.0f}% {:>9.2f}x {:>7}\n", m.plan.chunks(), mib,
                 exchange * 1e3, compute * 1e3, pipelined * 1e3, hidden * 100, unpipelined / pipelined, m.wrong);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"braid-moe-bench: pipelined vs unpipelined MoE dispatch (run under braid-run)"};
  app.add_option("--tokens", f.tokens, "tokens per rank (T)")->capture_default_str();
  app.add_option("--hidden", f.hidden, "hidden size (H)")->capture_default_str();
  app.add_option("--ffn", f.ffn, "each expert's inner width (its MLP costs 4 H ffn flops per row)")->capture_default_str();
  app.add_option("--experts-per-rank", f.experts_per_rank, "local experts per rank")->capture_default_str();
  app.add_option("--top-k", f.top_k, "experts per token")->capture_default_str();
  app.add_option("--capacity-factor", f.capacity_factor, "capacity factor")->capture_default_str();
  app.add_option("--chunks", f.chunks, "chunk counts to measure; the first is the baseline")->delimiter(',')->capture_default_str();
  app.add_option("--offload-ns-per-row", f.offload_ns_per_row,
                 "experts sleep this long per row instead of computing (an accelerator's compute: the cores stay free)")
      ->capture_default_str();
  app.add_option("--iters", f.iters, "timed iterations per measurement (median)")->capture_default_str();
  app.add_option("--warmup", f.warmup, "untimed iterations first")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return run(f);
  } catch (const std::exception& e) {
    fmt::print(stderr, "braid-moe-bench: {}\n", e.what());
    return 1;
  }
}
