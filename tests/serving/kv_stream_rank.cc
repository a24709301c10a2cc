// braid-kv-stream-rank SCENARIO ARGS...: the rank program of kv_stream_test.cc.
//   roundtrip P p d [CHUNK BLOCKS]
//                     P prefill ranks with TP p, the rest decode with TP d: several requests in
//                     flight from every prefill instance, layers interleaved; every decode rank
//                     checks every byte it received and prints BYTES per request. CHUNK: the
//                     spec's chunk bytes, on shm too (default: the spec's, shm unpacked); BLOCKS: "scattered"
//                     (default: reversed in memory), "adjacent" (in order) on both sides or
//                     "prefill-adjacent" (in order on the prefill side only)
//   backpressure      1 prefill + 1 decode rank, 2 requests in flight, room for 1 at the decode rank
// The failure scenarios are in kv_stream_fault_scenarios.cc.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "braid/base/error.h"
#include "braid/serving/idle_backoff.h"
#include "braid/serving/kv_stream_sender.h"
#include "braid/serving/kv_transfer_plan.h"
#include "kv_stream_scenarios.h"

namespace braid::testing {
namespace {

constexpr std::int64_t kRoundtripTokens[] = {1, 4, 5, 13, 16, 37};
constexpr int kBatch = 3;  // requests whose layers interleave

int prefill_roundtrip(Communicator& comm, const serving::KvStreamSpec& spec, bool adjacent) {
  serving::KvStreamSender sender(comm, spec);
  const int instance = comm.rank() / spec.prefill_tp;
  const int heads = spec.layout.kv_heads / spec.prefill_tp;
  const int decode_instances = spec.decode_instances(comm.size());
  std::vector<std::unique_ptr<KvRankBlocks>> caches;
  std::int64_t expected_bytes = 0;
  const auto count = static_cast<std::int64_t>(std::size(kRoundtripTokens));
  for (std::int64_t first = 0; first < count; first += kBatch) {
    const std::int64_t last = std::min(count, first + kBatch);
    for (std::int64_t id = first; id < last; ++id) {
      const std::int64_t tokens = kRoundtripTokens[id];
      caches.push_back(
          std::make_unique<KvRankBlocks>(spec.layout, tokens, (comm.rank() % spec.prefill_tp) * heads, heads, adjacent));
      sender.submit(id, tokens, static_cast<int>((id + instance) % decode_instances), caches.back()->const_spans());
      const auto plan = serving::make_kv_transfer_plan(spec.layout, tokens, spec.prefill_tp, spec.decode_tp);
      for (const auto& pair : plan.pairs_from(comm.rank() % spec.prefill_tp)) expected_bytes += plan.pair_bytes(pair);
    }
    for (int l = 0; l < spec.layout.layers; ++l) {  // layer l of every request, then layer l + 1
      for (std::int64_t id = first; id < last; ++id) {
        caches[static_cast<std::size_t>(id)]->fill_layer(id, l);
        sender.layer_ready(id, l);
      }
    }
  }
  std::int64_t sent = 0;
  int ok = 0;
  for (const auto& o : sender.close()) {
    if (!o.ok) KV_SAY("FAIL rank %d request %lld: %s", comm.rank(), static_cast<long long>(o.id), o.error.c_str());
    ok += o.ok;
    sent += o.bytes;
  }
  if (ok != count || sent != expected_bytes) {
    KV_SAY("FAIL rank %d: %d of %lld requests ok, %lld bytes sent, the plan says %lld", comm.rank(), ok,
           static_cast<long long>(count), static_cast<long long>(sent), static_cast<long long>(expected_bytes));
    return 1;
  }
  return 0;
}

int expected_arrivals(const Communicator& comm, const serving::KvStreamSpec& spec) {
  const int mine = (comm.rank() - spec.prefill_ranks) / spec.decode_tp;
  int n = 0;
  for (int k = 0; k < spec.prefill_instances(); ++k) {
    for (std::int64_t id = 0; id < static_cast<std::int64_t>(std::size(kRoundtripTokens)); ++id) {
      n += (id + k) % spec.decode_instances(comm.size()) == mine;
    }
  }
  return n;
}

int decode_roundtrip(Communicator& comm, const serving::KvStreamSpec& spec, bool adjacent) {
  const int tp_rank = (comm.rank() - spec.prefill_ranks) % spec.decode_tp;
  TestDecodeCache cache(spec, tp_rank, /*capacity=*/100, adjacent);
  serving::KvStreamReceiver receiver(comm, spec, cache.allocator());
  int arrived = 0;
  while (!receiver.closed()) {
    for (const auto& a : receiver.wait_any()) {
      if (!a.ok) {
        KV_SAY("FAIL rank %d: %s", comm.rank(), a.error.c_str());
        return 1;
      }
      const std::string wrong = cache.at(a.prefill_instance, a.id).first_wrong(a.id);
      if (!wrong.empty()) {
        KV_SAY("FAIL rank %d: wrong byte at %s from prefill instance %d", comm.rank(), wrong.c_str(), a.prefill_instance);
        return 1;
      }
      KV_SAY("BYTES rank %d prefill %d request %lld tokens %lld bytes %lld", comm.rank(), a.prefill_instance,
             static_cast<long long>(a.id), static_cast<long long>(a.tokens), static_cast<long long>(a.bytes));
      cache.free(a.prefill_instance, a.id);
      ++arrived;
    }
  }
  if (arrived != expected_arrivals(comm, spec)) {
    KV_SAY("FAIL rank %d: %d requests arrived, expected %d", comm.rank(), arrived, expected_arrivals(comm, spec));
    return 1;
  }
  return 0;
}

}  // namespace

int scenario_roundtrip(Communicator& comm, const Args& args) {
  serving::KvStreamSpec spec = test_spec(std::stoi(args.at(0)), std::stoi(args.at(1)), std::stoi(args.at(2)));
  if (args.size() > 3) {  // the packed path on every transport, shm included
    spec.chunk_bytes = std::stoll(args.at(3));
    spec.pack_shm = true;
  }
  const std::string blocks = args.size() > 4 ? args.at(4) : "scattered";
  const bool prefill_adjacent = blocks == "adjacent" || blocks == "prefill-adjacent";
  const int rc = comm.rank() < spec.prefill_ranks ? prefill_roundtrip(comm, spec, prefill_adjacent)
                                                  : decode_roundtrip(comm, spec, blocks == "adjacent");
  if (rc == 0) KV_SAY("PASS roundtrip rank %d", comm.rank());
  return rc;
}

namespace {

constexpr int kPressureRequests = 8;
constexpr std::int64_t kPressureTokens = 9;

int prefill_pressure(Communicator& comm, const serving::KvStreamSpec& spec) {
  serving::KvStreamSender sender(comm, spec);
  std::vector<std::unique_ptr<KvRankBlocks>> caches;
  int most_in_flight = 0, ok = 0;
  for (std::int64_t id = 0; id < kPressureRequests; ++id) {
    caches.push_back(std::make_unique<KvRankBlocks>(spec.layout, kPressureTokens, 0, spec.layout.kv_heads));
    sender.submit(id, kPressureTokens, 0, caches.back()->const_spans());
    most_in_flight = std::max(most_in_flight, sender.in_flight());
    for (int l = 0; l < spec.layout.layers; ++l) {
      caches.back()->fill_layer(id, l);
      sender.layer_ready(id, l);
    }
    for (const auto& o : sender.poll()) ok += o.ok;
  }
  for (const auto& o : sender.close()) ok += o.ok;
  KV_SAY("PREFILL most in flight %d, %d ok", most_in_flight, ok);
  return most_in_flight <= spec.max_in_flight && ok == kPressureRequests ? 0 : 1;
}

int decode_pressure(Communicator& comm, const serving::KvStreamSpec& spec) {
  TestDecodeCache cache(spec, 0, /*capacity=*/1);
  serving::KvStreamReceiver receiver(comm, spec, cache.allocator());
  int arrived = 0, most_queued = 0, most_held = 0;
  serving::IdleBackoff idle;
  while (!receiver.closed()) {
    for (const auto& a : receiver.wait_any()) {
      if (!a.ok || !cache.at(a.prefill_instance, a.id).first_wrong(a.id).empty()) {
        KV_SAY("FAIL request %lld: %s", static_cast<long long>(a.id), a.error.c_str());
        return 1;
      }
      ++arrived;
      // Hold the blocks (decoding) until the next request is queued for want of room, so the
      // queue is exercised whatever the timing; the last one has nothing behind it.
      while (arrived < kPressureRequests && receiver.queued() == 0) idle.after_pass(!receiver.poll().empty());
      most_queued = std::max(most_queued, receiver.queued());
      most_held = std::max(most_held, cache.held());
      cache.free(a.prefill_instance, a.id);
    }
  }
  KV_SAY("DECODE arrived %d, most queued %d, most held %d, allocations refused %d", arrived, most_queued, most_held,
         cache.refused());
  const bool bounded = most_queued <= spec.prefill_ranks * spec.max_in_flight && most_held <= 1;
  return arrived == kPressureRequests && bounded && most_queued >= 1 && cache.refused() >= 1 ? 0 : 1;
}

}  // namespace

int scenario_backpressure(Communicator& comm, const Args&) {
  serving::KvStreamSpec spec = test_spec(1, 1, 1);
  spec.max_in_flight = 2;
  const int rc = comm.rank() == 0 ? prefill_pressure(comm, spec) : decode_pressure(comm, spec);
  if (rc == 0) KV_SAY("PASS backpressure rank %d", comm.rank());
  return rc;
}

}  // namespace braid::testing

int main(int argc, char** argv) {
  using namespace braid::testing;
  const std::string scenario = argc > 1 ? argv[1] : "";
  const Args args(argv + std::min(argc, 2), argv + argc);
  try {
    if (scenario == "decode-killed") return scenario_decode_killed(args);
    braid::Communicator comm = braid::Communicator::init();
    if (scenario == "roundtrip") return scenario_roundtrip(comm, args);
    if (scenario == "backpressure") return scenario_backpressure(comm, args);
    if (scenario == "malformed") return scenario_malformed(comm, args);
    if (scenario == "layout-mismatch") return scenario_layout_mismatch(comm, args);
    KV_SAY("FAIL unknown scenario '%s'", scenario.c_str());
    return 2;
  } catch (const braid::Error& e) {
    KV_SAY("ERROR %s", e.what());
    return 3;
  }
}
