#include "braid/serving/kv_stream_receiver.h"

#include <fmt/format.h>

#include <algorithm>

#include "braid/base/error.h"
#include "braid/serving/idle_backoff.h"

namespace braid::serving {
namespace {

constexpr const char* kReceive = "kv receive";

}  // namespace

KvStreamReceiver::KvStreamReceiver(Communicator& comm, const KvStreamSpec& spec, KvBlockAllocator allocate)
    : comm_(comm), spec_(spec), allocate_(std::move(allocate)), watch_(comm, kReceive) {
  agree_on_kv_stream(comm_, spec_, "kv stream");
  if (comm_.rank() < spec_.prefill_ranks) {
    throw InvalidArgument({.rank = comm_.rank(), .op = "kv stream"},
                          fmt::format("a KV receiver runs on a decode rank ({}..{}), not rank {}", spec_.prefill_ranks,
                                      comm_.size() - 1, comm_.rank()));
  }
  tp_rank_ = (comm_.rank() - spec_.prefill_ranks) % spec_.decode_tp;
  instance_ = (comm_.rank() - spec_.prefill_ranks) / spec_.decode_tp;
  header_buffers_.resize(static_cast<std::size_t>(spec_.prefill_ranks));
  peer_closed_.assign(static_cast<std::size_t>(spec_.prefill_ranks), false);
  for (int peer = 0; peer < spec_.prefill_ranks; ++peer) {
    header_receives_.push_back(comm_.irecv(header_buffers_[static_cast<std::size_t>(peer)].data(), kKvMessageWords,
                                           DType::kI64, peer, kHeaderTag));
  }
}

// Every prefill rank's next header, as they come; each receive is posted again after use.
bool KvStreamReceiver::take_headers() {
  bool moved = false;
  for (int peer = 0; peer < spec_.prefill_ranks; ++peer) {
    const auto p = static_cast<std::size_t>(peer);
    if (peer_closed_[p] || !header_receives_[p].test()) continue;
    moved = true;
    const KvMessage header = header_buffers_[p];
    if (header[0] == static_cast<std::int64_t>(KvMessageKind::kClose)) {
      peer_closed_[p] = true;
      ++closes_;
      continue;
    }
    header_receives_[p] = comm_.irecv(header_buffers_[p].data(), kKvMessageWords, DType::kI64, peer, kHeaderTag);
    on_header(peer, header);
  }
  return moved;
}

void KvStreamReceiver::on_header(int peer, const KvMessage& header) {
  const std::int64_t id = header[1];
  if (header[0] != static_cast<std::int64_t>(KvMessageKind::kRequest)) return refuse(peer, header, KvRefusal::kBadKind);
  if (id < 0 || id > kMaxKvRequestId) return refuse(peer, header, KvRefusal::kBadId);
  if (header[2] < 1 || header[2] > spec_.max_tokens) return refuse(peer, header, KvRefusal::kBadTokens);
  if (header[3] != instance_) return refuse(peer, header, KvRefusal::kWrongInstance);
  const Key key{peer / spec_.prefill_tp, id};
  auto it = requests_.find(key);
  if (it == requests_.end()) {
    Request r{.tokens = header[2],
              .plan = make_kv_transfer_plan(spec_.layout, header[2], spec_.prefill_tp, spec_.decode_tp),
              .order = next_order_++};
    for (const KvTransferPair& pair : r.plan.pairs_to(tp_rank_)) {
      r.incoming.push_back({.peer = spec_.prefill_comm_rank(key.first, pair.prefill_rank), .pair = pair});
    }
    it = requests_.emplace(key, std::move(r)).first;
  }
  Request& r = it->second;
  const auto in = std::find_if(r.incoming.begin(), r.incoming.end(), [&](const Incoming& i) { return i.peer == peer; });
  if (in == r.incoming.end() || in->header_seen || header[2] != r.tokens) {
    return refuse(peer, header, KvRefusal::kDuplicate);
  }
  in->header_seen = true;
  if (r.blocks) grant(r, *in, id);
}

void KvStreamReceiver::refuse(int peer, const KvMessage& header, KvRefusal reason) {
  const ErrorContext ctx{.rank = comm_.rank(), .peer = peer, .op = kReceive};
  const InvalidArgument error(ctx, fmt::format("refused a request header from prefill rank {}: {}", peer,
                                               refusal_text(reason, header, spec_)));
  done_.push_back({.id = header[1], .prefill_instance = peer / spec_.prefill_tp, .tokens = header[2], .ok = false,
                   .error = error.what()});
  // An id that fits a tag gets its answer on the grant tag the prefill rank waits on.
  if (reason == KvRefusal::kBadId || reason == KvRefusal::kBadKind) return;
  send_control(peer, {static_cast<std::int64_t>(KvMessageKind::kRefused), header[1], static_cast<std::int64_t>(reason), 0});
}

// On the grant tag of the message's request id.
void KvStreamReceiver::send_control(int peer, const KvMessage& message) {
  control_sends_.emplace_back(message, Work{});
  auto& [data, work] = control_sends_.back();
  work = comm_.isend(data.data(), kKvMessageWords, DType::kI64, peer, kGrantTagBase + static_cast<int>(message[1]));
}

// The caller's blocks for queued requests, oldest first; stops at the first it has no room for,
// so a large request is not overtaken forever by small ones.
bool KvStreamReceiver::allocate_queued() {
  std::vector<std::pair<std::int64_t, Key>> queue;
  for (const auto& [key, r] : requests_) {
    if (!r.blocks) queue.push_back({r.order, key});
  }
  std::sort(queue.begin(), queue.end());
  bool moved = false;
  for (const auto& entry : queue) {
    Request& r = requests_.at(entry.second);
    auto blocks = allocate_(entry.second.second, r.tokens, entry.second.first);
    if (!blocks) break;
    const std::int64_t block_bytes = spec_.layout.block_bytes(r.plan.decode_heads());
    check_block_spans<std::byte>(*blocks, spec_.layout, r.plan.blocks, block_bytes, entry.second.second,
                                 {.rank = comm_.rank(), .op = kReceive});
    r.blocks = std::move(blocks);
    for (Incoming& in : r.incoming) {
      if (in.header_seen) grant(r, in, entry.second.second);
    }
    moved = true;
  }
  return moved;
}

// Posts the layers' receives into the request's blocks, then tells the prefill rank to send.
void KvStreamReceiver::grant(Request& r, Incoming& in, std::int64_t id) {
  in.inbox.emplace(kv_layer_chunks(r.plan, in.pair, chunk_bytes_to(comm_, spec_, in.peer)), r.plan.blocks,
                   spec_.layout.layers, in.peer, static_cast<int>(id));
  in.inbox->advance(comm_, *r.blocks);
  in.granted = true;
  in.grant = {static_cast<std::int64_t>(KvMessageKind::kGranted), id, 0, 0};
  in.grant_send = comm_.isend(in.grant.data(), kKvMessageWords, DType::kI64, in.peer, kGrantTagBase + static_cast<int>(id));
}

int KvStreamReceiver::complete_layers(const Request& r) const {
  int layers = spec_.layout.layers;
  for (const Incoming& in : r.incoming) {
    if (!in.granted) return 0;
    layers = std::min(layers, in.inbox->layers_done());
  }
  return layers;
}

bool KvStreamReceiver::progress(const Key& key, Request& r, bool& moved) {
  if (!r.blocks) return false;
  bool complete = true;
  for (Incoming& in : r.incoming) {
    if (!in.granted) {
      complete = false;
      continue;
    }
    moved = in.inbox->advance(comm_, *r.blocks) || moved;
    complete = complete && in.inbox->complete() && in.grant_send.test();
  }
  if (!complete) return false;
  std::int64_t bytes = 0;
  for (const Incoming& in : r.incoming) {
    bytes += r.plan.pair_bytes(in.pair);
    send_control(in.peer, {static_cast<std::int64_t>(KvMessageKind::kArrived), key.second, 0, 0});
  }
  done_.push_back({.id = key.second, .prefill_instance = key.first, .tokens = r.tokens, .ok = true, .error = "",
                   .bytes = bytes});
  return true;
}

std::vector<KvArrival> KvStreamReceiver::poll() {
  pass();
  return std::exchange(done_, {});
}

bool KvStreamReceiver::pass() {
  bool moved = take_headers();
  watch_prefill_ranks();
  moved = allocate_queued() || moved;
  for (auto it = requests_.begin(); it != requests_.end();) {
    if (progress(it->first, it->second, moved)) {
      it = requests_.erase(it);
      moved = true;
    } else {
      ++it;
    }
  }
  while (!control_sends_.empty() && control_sends_.front().second.test()) control_sends_.pop_front();
  return moved;
}

// Only the prefill ranks with a granted transfer still arriving: one of them cannot have closed
// (a prefill rank closes after every arrival), so its exit is a loss, not a race with its kClose.
void KvStreamReceiver::watch_prefill_ranks() {
  if (!watch_.due()) return;
  awaited_.clear();
  for (const auto& entry : requests_) {
    for (const Incoming& in : entry.second.incoming) {
      if (in.granted) awaited_.push_back(in.peer);
    }
  }
  watch_.check(awaited_);
}

std::vector<KvArrival> KvStreamReceiver::wait_any() {
  IdleBackoff idle;
  for (;;) {
    const bool moved = pass();
    if (!done_.empty() || closed()) return std::exchange(done_, {});
    idle.after_pass(moved);
  }
}

int KvStreamReceiver::layers_arrived(int prefill_instance, std::int64_t id) const {
  const auto it = requests_.find({prefill_instance, id});
  return it == requests_.end() ? -1 : complete_layers(it->second);
}

int KvStreamReceiver::queued() const {
  return static_cast<int>(std::count_if(requests_.begin(), requests_.end(), [](const auto& e) { return !e.second.blocks; }));
}

}  // namespace braid::serving
