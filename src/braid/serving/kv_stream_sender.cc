#include "braid/serving/kv_stream_sender.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "braid/base/error.h"
#include "braid/serving/idle_backoff.h"

namespace braid::serving {
namespace {

constexpr const char* kSubmit = "kv send";

// Completes what has completed at the front of `works` (they finish in order per peer); true if
// any did. Rethrows a failed one's error.
bool drain_completed(std::vector<Work>& works) {
  const auto done = std::find_if_not(works.begin(), works.end(), [](Work& w) { return w.test(); });
  const bool progressed = done != works.begin();
  works.erase(works.begin(), done);
  return progressed;
}

}  // namespace

KvStreamSender::KvStreamSender(Communicator& comm, const KvStreamSpec& spec)
    : comm_(comm), spec_(spec), watch_(comm, kSubmit) {
  agree_on_kv_stream(comm_, spec_, "kv stream");
  if (comm_.rank() >= spec_.prefill_ranks) {
    throw InvalidArgument(context("kv stream"), fmt::format("a KV sender runs on a prefill rank (0..{}), not rank {}",
                                                            spec_.prefill_ranks - 1, comm_.rank()));
  }
  tp_rank_ = comm_.rank() % spec_.prefill_tp;
}

void KvStreamSender::check_submit(std::int64_t id, std::int64_t tokens, int decode_instance) const {
  const ErrorContext ctx = context(kSubmit);
  if (closed_) throw InvalidArgument(ctx, fmt::format("request {} submitted after close()", id));
  if (id < 0 || id > kMaxKvRequestId) {
    throw InvalidArgument(ctx, fmt::format("request id {} is outside [0, {}]", id, kMaxKvRequestId));
  }
  if (tokens < 1 || tokens > spec_.max_tokens) {
    throw InvalidArgument(ctx, fmt::format("request {} has {} tokens, outside the context [1, {}]", id, tokens,
                                           spec_.max_tokens));
  }
  const int instances = spec_.decode_instances(comm_.size());
  if (decode_instance < 0 || decode_instance >= instances) {
    throw InvalidArgument(ctx, fmt::format("request {} names decode instance {}, outside [0, {})", id, decode_instance,
                                           instances));
  }
  const bool duplicate = std::any_of(requests_.begin(), requests_.end(), [&](const Request& r) { return r.id == id; });
  if (duplicate) throw InvalidArgument(ctx, fmt::format("request id {} is already in flight", id));
}

void KvStreamSender::submit(std::int64_t id, std::int64_t tokens, int decode_instance,
                            std::vector<std::span<const std::byte>> blocks) {
  check_submit(id, tokens, decode_instance);
  KvTransferPlan plan = make_kv_transfer_plan(spec_.layout, tokens, spec_.prefill_tp, spec_.decode_tp);
  check_block_spans<const std::byte>(blocks, spec_.layout, plan.blocks, spec_.layout.block_bytes(plan.prefill_heads()),
                                     id, context(kSubmit));
  wait_for_room();
  Request r{.id = id, .decode_instance = decode_instance, .plan = std::move(plan)};
  r.pairs = r.plan.pairs_from(tp_rank_);
  r.blocks = std::move(blocks);
  r.grants.resize(r.pairs.size());
  for (std::size_t i = 0; i < r.pairs.size(); ++i) {
    r.headers.push_back({static_cast<std::int64_t>(KvMessageKind::kRequest), id, tokens, decode_instance});
  }
  // The grant receives first: a decode rank may answer before the header's send completes here.
  for (std::size_t i = 0; i < r.pairs.size(); ++i) {
    const int peer = spec_.decode_comm_rank(decode_instance, r.pairs[i].decode_rank);
    r.grant_receives.push_back(comm_.irecv(r.grants[i].data(), kKvMessageWords, DType::kI64, peer,
                                           kGrantTagBase + static_cast<int>(id)));
    r.header_sends.push_back(comm_.isend(r.headers[i].data(), kKvMessageWords, DType::kI64, peer, kHeaderTag));
  }
  requests_.push_back(std::move(r));
}

void KvStreamSender::wait_for_room() {
  IdleBackoff idle;
  while (in_flight() >= spec_.max_in_flight) {
    const bool any_ready = std::any_of(requests_.begin(), requests_.end(),
                                       [&](const Request& r) { return r.ready_layers == spec_.layout.layers; });
    if (!any_ready) {
      throw InvalidArgument(context(kSubmit), fmt::format("{} requests are in flight (max in flight) and none has all "
                                                          "its layers ready: finish one first", in_flight()));
    }
    const bool moved = progress_all();
    sweep();
    idle.after_pass(moved);
  }
}

KvStreamSender::Request& KvStreamSender::find(std::int64_t id, const char* op) {
  for (Request& r : requests_) {
    if (r.id == id) return r;
  }
  throw InvalidArgument(context(op), fmt::format("request {} is not in flight on this rank", id));
}

void KvStreamSender::layer_ready(std::int64_t id, int layer) {
  Request& r = find(id, "kv layer ready");
  if (layer != r.ready_layers) {
    throw InvalidArgument(context("kv layer ready"), fmt::format("request {}: layer {} reported ready, the next one is {}",
                                                                 id, layer, r.ready_layers));
  }
  ++r.ready_layers;
  progress(r);
}

void KvStreamSender::make_outboxes(Request& r) {
  for (const KvTransferPair& pair : r.pairs) {
    const int peer = spec_.decode_comm_rank(r.decode_instance, pair.decode_rank);
    const std::int64_t chunk_bytes = chunk_bytes_to(comm_, spec_, peer);
    r.outboxes.emplace_back(kv_layer_chunks(r.plan, pair, chunk_bytes), r.plan.blocks, peer, static_cast<int>(r.id),
                            chunk_bytes > 0);
  }
}

// Posts what the ready layers allow and completes sends; every pair's outbox in turn, so one
// pair's in-flight bound never holds up another's.
bool KvStreamSender::send_ready_layers(Request& r) {
  if (r.outboxes.empty()) make_outboxes(r);
  bool moved = false;
  for (KvChunkOutbox& out : r.outboxes) {
    moved = out.drain() || moved;
    const std::int64_t posted = out.post(comm_, r.blocks, r.ready_layers);
    r.bytes += posted;
    moved = out.drain() || moved || posted > 0;
  }
  return moved;
}

// Receives grants, posts the layers that are ready once all are granted, completes sends. A
// refusal or a lost peer finishes the request with its error.
bool KvStreamSender::progress(Request& r) {
  if (r.id < 0) return false;
  bool moved = false;
  try {
    moved = drain_completed(r.header_sends);
    while (r.granted < static_cast<int>(r.pairs.size()) && r.grant_receives[static_cast<std::size_t>(r.granted)].test()) {
      const KvMessage& grant = r.grants[static_cast<std::size_t>(r.granted)];
      const int peer = spec_.decode_comm_rank(r.decode_instance, r.pairs[static_cast<std::size_t>(r.granted)].decode_rank);
      if (grant[0] != static_cast<std::int64_t>(KvMessageKind::kGranted) || grant[1] != r.id) {
        const KvMessage header{static_cast<std::int64_t>(KvMessageKind::kRequest), r.id, r.plan.tokens, r.decode_instance};
        throw InvalidArgument(context(kSubmit, peer),
                              fmt::format("decode rank {} refused request {}: {}", peer, r.id,
                                          refusal_text(static_cast<KvRefusal>(grant[2]), header, spec_)));
      }
      ++r.granted;
      moved = true;
    }
    // Once: an arrival may complete before this rank has seen its last send complete, and a
    // second receive on the grant tag would wait for a message that never comes.
    if (r.granted == static_cast<int>(r.pairs.size()) && r.arrivals.empty()) post_arrival_receives(r);
    if (r.granted == static_cast<int>(r.pairs.size())) {
      moved = send_ready_layers(r) || moved;
      // Tested while layers are still to come too: on a lost decode rank this is what fails.
      moved = drain_completed(r.arrival_receives) || moved;
      const bool sent = std::all_of(r.outboxes.begin(), r.outboxes.end(),
                                    [&](const KvChunkOutbox& out) { return out.done(spec_.layout.layers); });
      if (sent && r.header_sends.empty() && r.arrival_receives.empty()) check_arrivals(r);
    }
  } catch (const Error& e) {
    finish(r, false, fmt::format("request {} to decode instance {} failed: {}", r.id, r.decode_instance, e.what()));
    return true;
  }
  return moved;
}

void KvStreamSender::post_arrival_receives(Request& r) {
  r.arrivals.resize(r.pairs.size());
  for (std::size_t i = 0; i < r.pairs.size(); ++i) {
    const int peer = spec_.decode_comm_rank(r.decode_instance, r.pairs[i].decode_rank);
    r.arrival_receives.push_back(comm_.irecv(r.arrivals[i].data(), kKvMessageWords, DType::kI64, peer,
                                             kGrantTagBase + static_cast<int>(r.id)));
  }
}

void KvStreamSender::check_arrivals(Request& r) {
  for (std::size_t i = 0; i < r.pairs.size(); ++i) {
    const KvMessage& m = r.arrivals[i];
    if (m[0] != static_cast<std::int64_t>(KvMessageKind::kArrived) || m[1] != r.id) {
      const int peer = spec_.decode_comm_rank(r.decode_instance, r.pairs[i].decode_rank);
      throw Corrupt(context(kSubmit, peer), fmt::format("request {}: decode rank {} answered kind {:#x} for request {} "
                                                        "where its arrival was due", r.id, peer, m[0], m[1]));
    }
  }
  finish(r, true, "");
}

void KvStreamSender::finish(Request& r, bool ok, std::string error) {
  finished_.push_back({.id = r.id, .decode_instance = r.decode_instance, .ok = ok, .error = std::move(error), .bytes = r.bytes});
  r.id = -1;  // removed by the caller's sweep; its blocks are the caller's again
  r.blocks.clear();
}

void KvStreamSender::watch_peers() {
  if (!watch_.due()) return;
  std::vector<int> awaited;
  for (const Request& r : requests_) {
    if (r.id < 0) continue;
    for (const KvTransferPair& pair : r.pairs) awaited.push_back(spec_.decode_comm_rank(r.decode_instance, pair.decode_rank));
  }
  try {
    watch_.check(awaited);
  } catch (const Error&) {
    // The communicator is poisoned now: progress() finishes every request in flight with it.
  }
}

bool KvStreamSender::progress_all() {
  watch_peers();
  bool moved = false;
  for (Request& r : requests_) moved = progress(r) || moved;
  return moved;
}

void KvStreamSender::sweep() {
  requests_.erase(std::remove_if(requests_.begin(), requests_.end(), [](const Request& r) { return r.id < 0; }),
                  requests_.end());
}

std::vector<KvRequestOutcome> KvStreamSender::poll() {
  progress_all();
  sweep();
  return std::exchange(finished_, {});
}

KvRequestOutcome KvStreamSender::wait(std::int64_t id) {
  const auto done = [&] { return std::find_if(finished_.begin(), finished_.end(), [&](const KvRequestOutcome& o) { return o.id == id; }); };
  if (done() == finished_.end()) check_waitable(id);
  IdleBackoff idle;
  for (auto it = done();; it = done()) {
    if (it != finished_.end()) {
      KvRequestOutcome out = *it;
      finished_.erase(it);
      sweep();
      return out;
    }
    idle.after_pass(progress_all());
  }
}

// A request may finish inside layer_ready's progress: wait() looks among the finished first.
void KvStreamSender::check_waitable(std::int64_t id) {
  Request& r = find(id, "kv wait");
  if (r.ready_layers != spec_.layout.layers) {
    throw InvalidArgument(context("kv wait"), fmt::format("request {}: waited for with {} of {} layers ready", id,
                                                          r.ready_layers, spec_.layout.layers));
  }
}

std::vector<KvRequestOutcome> KvStreamSender::close() {
  std::vector<KvRequestOutcome> out;
  while (!requests_.empty()) {
    const std::int64_t id = requests_.front().id;
    if (id < 0) {
      requests_.pop_front();
      continue;
    }
    out.push_back(wait(id));
  }
  for (KvRequestOutcome& o : poll()) out.push_back(std::move(o));
  if (!closed_) {
    closed_ = true;
    const KvMessage bye{static_cast<std::int64_t>(KvMessageKind::kClose), 0, 0, 0};
    for (int peer = spec_.prefill_ranks; peer < comm_.size(); ++peer) {
      comm_.send(bye.data(), kKvMessageWords, DType::kI64, peer, kHeaderTag);
    }
  }
  return out;
}

std::vector<std::int64_t> KvStreamSender::unfinished() const {
  std::vector<std::int64_t> ids;
  for (const Request& r : requests_) {
    if (r.id >= 0) ids.push_back(r.id);
  }
  return ids;
}

}  // namespace braid::serving
