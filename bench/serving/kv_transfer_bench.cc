// braid-kv-bench: the prefill-to-decode KV stream (serving/kv_stream_*.h) against braid's own
// point-to-point at the same bytes, between rank 0 (prefill) and rank 1 (decode), in one run.
//
//   braid-run -n 2 braid-kv-bench [--layers 32 --kv-heads 8 --head-dim 128 --block 16 --bytes 2
//                                  --tokens 1024 --reps 10 --compute-ms 0 --chunk-bytes 2097152
//                                  --blocks scattered --pack-shm]
//
// Per repetition (medians printed):
//   sendrecv  rank 0 sends each layer's bytes as one message from a contiguous buffer, rank 1
//             receives them into one and answers with a 32-byte ack (the stream's protocol shape
//             minus the header and grant)
//   kv-stream one request through KvStreamSender / KvStreamReceiver: paged blocks on both sides
//             (--blocks scattered: in reverse order in memory, so each side gathers / scatters
//             a run per segment; adjacent: in order, one run per chunk), messages of
//             --chunk-bytes on TCP (the spec's chunk_bytes; over shm only with --pack-shm),
//             header, grant, ack
//   kv-unpacked the same with chunk_bytes 0 (one message per block segment), alternating with
//             kv-stream in the same run
// With --compute-ms C > 0 it also prints time to first token's transfer part: prefill "computes"
// each layer for C ms (a sleep: an accelerator's compute leaves the cores free) and either
// streams layer by layer (overlap) or readies every layer after the last one is computed
// (transfer after prefill); the time is from the start of prefill to the decode rank holding
// every layer.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "braid/comm/communicator.h"
#include "braid/serving/kv_stream_receiver.h"
#include "braid/serving/kv_stream_sender.h"

namespace {

using Clock = std::chrono::steady_clock;
using braid::serving::KvStreamSpec;

struct Options {
  int layers = 32, kv_heads = 8, head_dim = 128, block = 16, bytes = 2, reps = 10;
  std::int64_t tokens = 1024;
  double compute_ms = 0;
  std::int64_t chunk_bytes = braid::serving::kDefaultKvChunkBytes;
  std::string blocks = "scattered";
  bool pack_shm = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A pool of blocks handed out in reverse order (scattered: no two of a request adjacent in
// order) or in order (adjacent).
std::vector<std::span<std::byte>> pool_blocks(std::vector<std::byte>& pool, std::int64_t count, std::int64_t bytes,
                                              bool adjacent) {
  std::vector<std::span<std::byte>> out;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t slot = adjacent ? i : count - 1 - i;
    out.push_back({pool.data() + slot * bytes, static_cast<std::size_t>(bytes)});
  }
  return out;
}

double sendrecv_once(braid::Communicator& comm, std::vector<std::byte>& buffer, std::int64_t layer_bytes, int layers) {
  std::int64_t ack[4] = {0, 0, 0, 0};
  comm.barrier();
  const auto start = Clock::now();
  std::vector<braid::Work> works;
  for (int l = 0; l < layers; ++l) {
    std::byte* data = buffer.data() + l * layer_bytes;
    works.push_back(comm.rank() == 0 ? comm.isend(data, layer_bytes, braid::DType::kU8, 1, 1)
                                     : comm.irecv(data, layer_bytes, braid::DType::kU8, 0, 1));
  }
  for (auto& w : works) w.wait();
  if (comm.rank() == 0) {
    comm.recv(ack, 4, braid::DType::kI64, 1, 2);
  } else {
    comm.send(ack, 4, braid::DType::kI64, 0, 2);
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One request: prefill "computes" each layer for compute_ms, readying it at once (overlap) or
// all after the last (after_prefill). Returns the seconds from start to the decode rank's
// arrival (measured on rank 0: the arrival ack's receipt).
double stream_once(braid::Communicator& comm, const KvStreamSpec& spec, std::vector<std::byte>& pool, std::int64_t id,
                   std::int64_t tokens, double compute_ms, bool overlap, bool adjacent) {
  const std::int64_t blocks = spec.layout.blocks_for(tokens);
  const std::int64_t block_bytes = spec.layout.block_bytes(spec.layout.kv_heads);
  auto spans = pool_blocks(pool, spec.layout.layers * blocks, block_bytes, adjacent);
  if (comm.rank() == 0) {
    braid::serving::KvStreamSender sender(comm, spec);  // collective (the layout agreed): not timed
    comm.barrier();
    const auto start = Clock::now();
    std::vector<std::span<const std::byte>> blocks_in(spans.begin(), spans.end());
    sender.submit(id, tokens, 0, blocks_in);
    for (int l = 0; l < spec.layout.layers; ++l) {
      if (compute_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(compute_ms));
      if (overlap) sender.layer_ready(id, l);
    }
    for (int l = 0; !overlap && l < spec.layout.layers; ++l) sender.layer_ready(id, l);
    sender.wait(id);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    sender.close();
    return seconds;
  }
  braid::serving::KvStreamReceiver receiver(comm, spec, [&](std::int64_t, std::int64_t, int) {
    return std::optional<std::vector<std::span<std::byte>>>(spans);
  });
  comm.barrier();
  while (!receiver.closed()) receiver.wait_any();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"braid-kv-bench: the KV stream against braid's point-to-point at the same bytes (2 ranks)"};
  app.add_option("--layers", o.layers)->capture_default_str();
  app.add_option("--kv-heads", o.kv_heads)->capture_default_str();
  app.add_option("--head-dim", o.head_dim)->capture_default_str();
  app.add_option("--block", o.block, "tokens per block")->capture_default_str();
  app.add_option("--bytes", o.bytes, "bytes per element")->capture_default_str();
  app.add_option("--tokens", o.tokens, "prompt tokens of the request")->capture_default_str();
  app.add_option("--reps", o.reps, "repetitions (medians printed)")->capture_default_str();
  app.add_option("--chunk-bytes", o.chunk_bytes, "the most bytes of a layer per message; 0: one per block segment")
      ->capture_default_str();
  app.add_flag("--pack-shm", o.pack_shm, "pack over shared memory too (the spec's pack_shm)");
  app.add_option("--blocks", o.blocks, "the paged blocks in memory: scattered (reverse order) or adjacent")
      ->check(CLI::IsMember({"scattered", "adjacent"}))
      ->capture_default_str();
  app.add_option("--compute-ms", o.compute_ms, "per-layer prefill compute (sleep) for the TTFT rows; 0: none")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    braid::Communicator comm = braid::Communicator::init();
    const KvStreamSpec spec{.layout = {.layers = o.layers, .kv_heads = o.kv_heads, .head_dim = o.head_dim,
                                       .block_tokens = o.block, .element_bytes = o.bytes},
                            .prefill_ranks = 1, .prefill_tp = 1, .decode_tp = 1, .max_tokens = o.tokens, .max_in_flight = 1,
                            .chunk_bytes = o.chunk_bytes, .pack_shm = o.pack_shm};
    KvStreamSpec unpacked = spec;
    unpacked.chunk_bytes = 0;
    const bool adjacent = o.blocks == "adjacent";
    const std::int64_t total = spec.layout.sequence_bytes(o.tokens, o.kv_heads);
    const std::int64_t layer_bytes = total / o.layers;
    std::vector<std::byte> buffer(static_cast<std::size_t>(total), std::byte{1});  // touched once: pre-faulted
    std::vector<double> p2p, stream, per_segment;
    for (int r = 0; r < o.reps + 1; ++r) {  // the first of each is a warm-up
      const double a = sendrecv_once(comm, buffer, layer_bytes, o.layers);
      const double b = stream_once(comm, spec, buffer, r, o.tokens, 0, true, adjacent);
      const double c = stream_once(comm, unpacked, buffer, 500 + r, o.tokens, 0, true, adjacent);
      if (r > 0) {
        p2p.push_back(a);
        stream.push_back(b);
        per_segment.push_back(c);
      }
    }
    if (comm.rank() == 0) {
      fmt::print("# {}, {} tokens: {} B per request, {} B per layer, {} B per block, {} blocks, chunk {} B; {} over "
                 "{}; medians of {}\n", spec.layout.describe(), o.tokens, total, layer_bytes,
                 spec.layout.block_bytes(o.kv_heads), o.blocks, o.chunk_bytes, comm.transport_to(1), "2 ranks", o.reps);
      const double sr = static_cast<double>(total) / median(p2p) / 1e9;
      const double kv = static_cast<double>(total) / median(stream) / 1e9;
      fmt::print("sendrecv   {:10.3f} ms  {:7.2f} GB/s\n", median(p2p) * 1e3, sr);
      fmt::print("kv-stream  {:10.3f} ms  {:7.2f} GB/s  {:.3f} of sendrecv\n", median(stream) * 1e3, kv, kv / sr);
      const double un = static_cast<double>(total) / median(per_segment) / 1e9;
      fmt::print("kv-unpacked {:9.3f} ms  {:7.2f} GB/s  {:.3f} of sendrecv\n", median(per_segment) * 1e3, un, un / sr);
    }
    if (o.compute_ms > 0) {
      std::vector<double> overlap, after;
      for (int r = 0; r < o.reps; ++r) {
        overlap.push_back(stream_once(comm, spec, buffer, 1000 + r, o.tokens, o.compute_ms, true, adjacent));
        after.push_back(stream_once(comm, spec, buffer, 2000 + r, o.tokens, o.compute_ms, false, adjacent));
      }
      if (comm.rank() == 0) {
        fmt::print("ttft-transfer compute {} ms x {} layers: overlap {:.3f} ms, after prefill {:.3f} ms, saved {:.3f} ms\n",
                   o.compute_ms, o.layers, median(overlap) * 1e3, median(after) * 1e3,
                   (median(after) - median(overlap)) * 1e3);
      }
    }
    return 0;
  } catch (const braid::Error& e) {
    fmt::print(stderr, "braid-kv-bench: {}\n", e.what());
    return 1;
  }
}
