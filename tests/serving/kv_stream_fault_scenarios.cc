// The failure scenarios of braid-kv-stream-rank (kv_stream_test.cc):
//   malformed        1 prefill + 1 decode: the sender's own checks (bad id, tokens beyond the
//                    context, a decode instance that does not exist, a wrong block count), then
//                    headers written on the wire by hand (tokens beyond the context, a bad id,
//                    another decode instance) that the decode rank refuses; then a good request
//   layout-mismatch  rank 1 has another head dim: both raise Mismatch naming it
//   decode-killed    under braid-run --elastic, 1 prefill + 2 decode ranks: decode rank 2 dies
//                    after layer 0 of its request; the prefill side reports that request failed
//                    and frees its blocks; the survivors shrink and a request to decode rank 1
//                    goes through
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "braid/base/error.h"
#include "braid/comm/elastic_group.h"
#include "braid/serving/idle_backoff.h"
#include "braid/serving/kv_stream_sender.h"
#include "kv_stream_scenarios.h"

namespace braid::testing {
namespace {

using serving::KvMessage;
using serving::KvMessageKind;

template <typename Submit>
void expect_local_error(Submit submit) {
  try {
    submit();
    KV_SAY("NO-ERROR");
  } catch (const InvalidArgument& e) {
    KV_SAY("LOCAL-ERROR %s", e.what());
  }
}

// Sends a hand-made header; if `answered`, receives and prints the decode rank's answer.
void raw_header(Communicator& comm, std::int64_t id, std::int64_t tokens, std::int64_t instance, bool answered) {
  const KvMessage header{static_cast<std::int64_t>(KvMessageKind::kRequest), id, tokens, instance};
  comm.send(header.data(), serving::kKvMessageWords, DType::kI64, 1, serving::kHeaderTag);
  if (!answered) return;
  KvMessage answer{};
  comm.recv(answer.data(), serving::kKvMessageWords, DType::kI64, 1, serving::kGrantTagBase + static_cast<int>(id));
  const bool refused = answer[0] == static_cast<std::int64_t>(KvMessageKind::kRefused) && answer[1] == id;
  KV_SAY("ANSWER request %lld %s reason %lld", static_cast<long long>(id), refused ? "refused" : "NOT-REFUSED",
         static_cast<long long>(answer[2]));
}

int prefill_malformed(Communicator& comm, const serving::KvStreamSpec& spec) {
  serving::KvStreamSender sender(comm, spec);
  KvRankBlocks good(spec.layout, 5, 0, spec.layout.kv_heads);
  expect_local_error([&] { sender.submit(-1, 5, 0, good.const_spans()); });
  expect_local_error([&] { sender.submit(1, 65, 0, good.const_spans()); });
  expect_local_error([&] { sender.submit(2, 5, 3, good.const_spans()); });
  const auto spans = good.const_spans();
  expect_local_error([&] { sender.submit(3, 5, 0, {spans.begin(), spans.begin() + 2}); });
  expect_local_error([&] { sender.layer_ready(4, 0); });
  raw_header(comm, 7, 1000, 0, true);
  raw_header(comm, -5, 4, 0, false);
  raw_header(comm, 8, 4, 2, true);
  sender.submit(9, 5, 0, good.const_spans());
  for (int l = 0; l < spec.layout.layers; ++l) {
    good.fill_layer(9, l);
    sender.layer_ready(9, l);
  }
  const serving::KvRequestOutcome outcome = sender.wait(9);
  sender.close();
  KV_SAY("GOOD request 9 %s", outcome.ok ? "ok" : outcome.error.c_str());
  return outcome.ok ? 0 : 1;
}

int decode_malformed(Communicator& comm, const serving::KvStreamSpec& spec) {
  TestDecodeCache cache(spec, 0, 4);
  serving::KvStreamReceiver receiver(comm, spec, cache.allocator());
  int good = 0;
  while (!receiver.closed()) {
    for (const auto& a : receiver.wait_any()) {
      if (!a.ok) {
        KV_SAY("DECODE-REFUSED %s", a.error.c_str());
        continue;
      }
      good += a.id == 9 && cache.at(a.prefill_instance, a.id).first_wrong(a.id).empty();
    }
  }
  return good == 1 ? 0 : 1;
}

}  // namespace

int scenario_malformed(Communicator& comm, const Args&) {
  const serving::KvStreamSpec spec = test_spec(1, 1, 1);
  const int rc = comm.rank() == 0 ? prefill_malformed(comm, spec) : decode_malformed(comm, spec);
  comm.barrier();  // both sides still in step
  if (rc == 0) KV_SAY("PASS malformed rank %d", comm.rank());
  return rc;
}

int scenario_layout_mismatch(Communicator& comm, const Args&) {
  serving::KvStreamSpec spec = test_spec(1, 1, 1);
  if (comm.rank() == 1) {
    spec.layout.head_dim = 16;
    spec.chunk_bytes = 4096;  // the chunking decides the messages: it must agree too
  }
  try {
    if (comm.rank() == 0) {
      serving::KvStreamSender sender(comm, spec);
    } else {
      TestDecodeCache cache(spec, 0, 1);
      serving::KvStreamReceiver receiver(comm, spec, cache.allocator());
    }
    KV_SAY("NO-ERROR");
  } catch (const Mismatch& e) {
    KV_SAY("MISMATCH %s", e.what());
  }
  comm.barrier();
  KV_SAY("PASS layout-mismatch rank %d", comm.rank());
  return 0;
}

namespace {

constexpr std::int64_t kKilledTokens = 37;

// Submits request `id` to decode instance `instance`, writes and readies every layer, waits.
serving::KvRequestOutcome stream_whole(serving::KvStreamSender& sender, std::int64_t id, int instance) {
  const serving::KvStreamSpec& spec = sender.spec();
  KvRankBlocks blocks(spec.layout, kKilledTokens, 0, spec.layout.kv_heads);
  sender.submit(id, kKilledTokens, instance, blocks.const_spans());
  for (int l = 0; l < spec.layout.layers; ++l) {
    blocks.fill_layer(id, l);
    sender.layer_ready(id, l);
  }
  return sender.wait(id);
}

// Generation 0: request 0 to decode instance 0 (completes), request 1 to instance 1 with only
// layer 0 ready: its decode rank dies once layer 0 is there, so the request fails mid-transfer.
void prefill_before_loss(Communicator& comm, const serving::KvStreamSpec& spec) {
  serving::KvStreamSender sender(comm, spec);
  const auto done = stream_whole(sender, 0, 0);
  KV_SAY("REQUEST 0 %s", done.ok ? "ok" : done.error.c_str());
  auto second = std::make_unique<KvRankBlocks>(spec.layout, kKilledTokens, 0, spec.layout.kv_heads);
  sender.submit(1, kKilledTokens, 1, second->const_spans());
  second->fill_layer(1, 0);
  sender.layer_ready(1, 0);
  serving::IdleBackoff idle;
  for (;;) {
    const auto outcomes = sender.poll();
    for (const auto& o : outcomes) {
      KV_SAY("CLIENT-ERROR request %lld: %s", static_cast<long long>(o.id), o.ok ? "ok?" : o.error.c_str());
      second.reset();  // the request's blocks are the caller's again: freed
      KV_SAY("FREED request %lld: %d in flight", static_cast<long long>(o.id), sender.in_flight());
      throw PeerLost({.rank = comm.rank(), .op = "kv send"}, "decode rank lost");  // -> shrink
    }
    idle.after_pass(false);
  }
}

int prefill_after_loss(Communicator& comm, const serving::KvStreamSpec& spec) {
  serving::KvStreamSender sender(comm, spec);
  const auto done = stream_whole(sender, 2, 0);
  sender.close();
  KV_SAY("CONTINUED request 2 %s", done.ok ? "ok" : done.error.c_str());
  return done.ok ? 0 : 1;
}

int decode_stream(Communicator& comm, const serving::KvStreamSpec& spec, bool victim) {
  TestDecodeCache cache(spec, 0, 4);
  serving::KvStreamReceiver receiver(comm, spec, cache.allocator());
  serving::IdleBackoff idle;
  int good = 0;
  while (!receiver.closed()) {
    if (victim && receiver.layers_arrived(0, 1) >= 1) std::raise(SIGKILL);  // mid-transfer
    const auto arrivals = receiver.poll();
    for (const auto& a : arrivals) good += a.ok && cache.at(a.prefill_instance, a.id).first_wrong(a.id).empty();
    idle.after_pass(!arrivals.empty());
  }
  return good;
}

}  // namespace

int scenario_decode_killed(const Args&) {
  ElasticGroup group = ElasticGroup::join();
  const bool prefill = group.id() == 0;
  try {
    const serving::KvStreamSpec spec = test_spec(1, 1, 1);
    if (prefill) {
      prefill_before_loss(group.comm(), spec);
    } else {
      decode_stream(group.comm(), spec, group.id() == 2);
    }
    KV_SAY("FAIL member %d: no loss seen", group.id());
    return 1;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kPeerLost) throw;
    KV_SAY("LOST member %d: %s", group.id(), e.what());
  }
  group.shrink(0);
  KV_SAY("SHRUNK member %d: rank %d of %d", group.id(), group.comm().rank(), group.comm().size());
  const serving::KvStreamSpec spec = test_spec(1, 1, 1);
  int rc = 0;
  if (prefill) {
    rc = prefill_after_loss(group.comm(), spec);
  } else {
    rc = decode_stream(group.comm(), spec, false) == 1 ? 0 : 1;
  }
  if (rc == 0) KV_SAY("PASS decode-killed member %d", group.id());
  return rc;
}

}  // namespace braid::testing
