#include "braid/transport/shm/shm_transport.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "braid/base/env.h"
#include "braid/bootstrap/refusal.h"
#include "braid/bootstrap/key_value_store.h"
#include "braid/transport/shm/futex.h"
#include "braid/transport/shm/segment_names.h"
#include "braid/transport/shm/shm_budget.h"

namespace braid::shm {

// Everything this rank knows about one local peer: the ring it writes (in the peer's
// segment), the ring it reads (in its own), the requests in flight, and the peer's process.
struct ShmTransport::Peer {
  int rank = -1;
  Segment segment;  // the peer's segment, mapped here
  SegmentHeader* header = nullptr;
  RingWriter out;
  RingReader in;
  PeerProcess process;
  Matcher matcher;
  std::deque<RequestPtr> sends;
  bool front_header_written = false;
  std::optional<IncomingMessage> incoming;

  Peer(int self, int peer_rank) : rank(peer_rank), matcher(self, peer_rank) {}

  bool pending() const { return !sends.empty() || incoming.has_value() || matcher.has_posted_recvs(); }
  // The operation a PeerLost error names: the oldest thing this rank is waiting for.
  const Request* oldest_request() const {
    if (incoming && incoming->recv) return incoming->recv.get();
    if (!sends.empty()) return sends.front().get();
    return nullptr;
  }
};

std::string segment_name(const std::string& job_id, int rank) { return fmt::format("/braid-{}-{}", job_id, rank); }

namespace {

std::string store_key(const char* stage, int rank) { return fmt::format("shm/{}/{}", stage, rank); }

void wait_for_stage(KeyValueStore& store, const char* stage, const std::vector<int>& ranks, Deadline deadline) {
  std::vector<std::string> keys;
  for (int r : ranks) keys.push_back(store_key(stage, r));
  store.wait(keys, deadline);
}

void check_peer_segment(const SegmentHeader& h, const SegmentLayout& layout, int peer, int rank) {
  ErrorContext ctx{.rank = rank, .peer = peer, .op = "shm.connect"};
  if (h.magic != kSegmentMagic || h.version != kSegmentVersion) {
    throw Corrupt(ctx, "shared-memory segment has a bad magic or version (another braid build?)");
  }
  if (h.slots != layout.slots || h.ring_bytes != layout.ring_bytes || h.total_bytes != layout.total_bytes()) {
    throw Mismatch(ctx, fmt::format("shared-memory geometry differs: peer has {} slots of {} bytes, this rank expects {} of {} "
                                    "(is BRAID_SHM_RING_BYTES the same on every rank?)",
                                    h.slots, h.ring_bytes, layout.slots, layout.ring_bytes));
  }
}

std::size_t local_index(const std::vector<int>& local_ranks, int rank) {
  return static_cast<std::size_t>(std::find(local_ranks.begin(), local_ranks.end(), rank) - local_ranks.begin());
}

std::string describe_geometry(const SegmentLayout& layout) {
  return fmt::format("{} rings of {} bytes per segment", layout.slots, layout.ring_bytes);
}

// The host's rings must fit what the machine can give: one segment per local rank.
void check_budget(const ShmOptions& options, const SegmentLayout& layout) {
  const std::size_t ranks = options.local_ranks.size();
  require_shm_demand({.variable = env::kShmRingBytes.name,
                      .value = static_cast<long long>(layout.ring_bytes),
                      .total = saturating_product(ranks, layout.total_bytes()),
                      .how = fmt::format("{} ranks x {} rings of {} bytes, plus headers", ranks, layout.slots,
                                         layout.ring_bytes)},
                     options.rank, "shm.connect");
}

// Stage 0, before any segment exists: every rank of the host publishes its geometry (or why it
// refuses its settings) and checks every peer's. Disagreement or a refusal therefore ends the
// set-up with nothing to clean up, even if a launcher SIGTERMs the ranks at once.
void agree_on_geometry(const ShmOptions& options, const SegmentLayout& layout, KeyValueStore& store, Deadline deadline) {
  const int self = options.rank;
  const std::string key = store_key("geometry", self);
  try {
    check_budget(options, layout);
  } catch (const Error& e) {
    publish_refusal(store, key, e, deadline);
    throw;
  }
  const std::string mine = describe_geometry(layout);
  store.set(key, mine, deadline);
  for (int r : options.local_ranks) {
    if (r == self) continue;
    const std::string theirs = store.get(store_key("geometry", r), deadline);
    ErrorContext ctx{.rank = self, .peer = r, .op = "shm.connect"};
    throw_if_refused(theirs, ctx, "shared-memory settings");
    if (theirs != mine) {
      throw Mismatch(ctx, fmt::format("shared-memory geometry differs: rank {} has {}, this rank {} (is {} the same on "
                                      "every rank?)", r, theirs, mine, env::kShmRingBytes.name));
    }
  }
}

}  // namespace

ShmTransport::ShmTransport(const ShmOptions& options)
    : options_(options), layout_{options.local_ranks.size(), options.ring_bytes} {}

ShmTransport::~ShmTransport() = default;

std::unique_ptr<ShmTransport> ShmTransport::connect(const ShmOptions& options, KeyValueStore& store, Deadline deadline) {
  std::unique_ptr<ShmTransport> t(new ShmTransport(options));
  agree_on_geometry(options, t->layout_, store, deadline);
  const int self = options.rank;
  std::vector<std::string> all_names;
  for (int r : options.local_ranks) all_names.push_back(segment_name(options.job_id, r));
  // Declared before the first segment exists: however connect() ends, every name goes.
  SegmentNames names(std::move(all_names));
  t->create_own_segment(names[local_index(options.local_ranks, self)]);
  store.set(store_key("created", self), "1", deadline);
  wait_for_stage(store, "created", options.local_ranks, deadline);

  int max_rank = *std::max_element(options.local_ranks.begin(), options.local_ranks.end());
  t->peer_index_.assign(static_cast<std::size_t>(max_rank) + 1, -1);
  for (int r : options.local_ranks) {
    if (r != self) t->map_peer(r, names[local_index(options.local_ranks, r)]);
  }

  // Once every peer has mapped every segment, no name is needed any more: `names` unlinks them
  // all on the way out, so no exit path, however abrupt, can leave one behind in /dev/shm.
  store.set(store_key("mapped", self), "1", deadline);
  wait_for_stage(store, "mapped", options.local_ranks, deadline);
  return t;
}

void ShmTransport::create_own_segment(const std::string& name) {
  own_segment_ = Segment::create(name, layout_.total_bytes());
  SegmentHeader* own = own_header();
  own->magic = kSegmentMagic;
  own->version = kSegmentVersion;
  own->owner_rank = options_.rank;
  own->owner_pid = static_cast<std::int32_t>(::getpid());
  own->slots = static_cast<std::uint32_t>(layout_.slots);
  own->ring_bytes = layout_.ring_bytes;
  own->total_bytes = layout_.total_bytes();
}

void ShmTransport::map_peer(int r, const std::string& name) {
  const int self = options_.rank;
  const std::size_t my_slot = local_index(options_.local_ranks, self);
  const std::size_t their_slot = local_index(options_.local_ranks, r);
  auto p = std::make_unique<Peer>(self, r);
  p->segment = Segment::open(name);
  if (p->segment.size() < sizeof(SegmentHeader)) throw Corrupt({.rank = self, .peer = r, .op = "shm.connect"}, "segment too small");
  p->header = reinterpret_cast<SegmentHeader*>(p->segment.data());
  check_peer_segment(*p->header, layout_, r, self);
  p->out = RingWriter(reinterpret_cast<RingControl*>(p->segment.data() + layout_.control_offset(my_slot)),
                      p->segment.data() + layout_.ring_offset(my_slot), layout_.ring_bytes);
  std::byte* own_base = own_segment_.data();
  p->in = RingReader(reinterpret_cast<RingControl*>(own_base + layout_.control_offset(their_slot)),
                     own_base + layout_.ring_offset(their_slot), layout_.ring_bytes);
  p->process = PeerProcess(p->header->owner_pid);
  peer_index_[static_cast<std::size_t>(r)] = static_cast<int>(peers_.size());
  peers_.push_back(std::move(p));
}

SegmentHeader* ShmTransport::own_header() const { return reinterpret_cast<SegmentHeader*>(own_segment_.data()); }

ShmTransport::Peer& ShmTransport::peer(int rank) {
  int index = rank >= 0 && static_cast<std::size_t>(rank) < peer_index_.size() ? peer_index_[static_cast<std::size_t>(rank)] : -1;
  if (index < 0) throw InvalidArgument({.rank = options_.rank, .peer = rank, .op = "shm"}, "not a shared-memory peer");
  return *peers_[static_cast<std::size_t>(index)];
}

void ShmTransport::post_send(const RequestPtr& send) {
  peer(send->peer).sends.push_back(send);
}

void ShmTransport::post_recv(const RequestPtr& recv) { peer(recv->peer).matcher.post_recv(recv); }

void ShmTransport::post_any_source_recv(const RequestPtr& recv, int peer_rank) { peer(peer_rank).matcher.post_recv(recv); }

bool ShmTransport::progress() {
  check_abort_mailbox();
  bool moved = false;
  for (auto& p : peers_) {
    moved |= progress_recvs(*p);
    moved |= progress_sends(*p);
  }
  return moved;
}

bool ShmTransport::progress_sends(Peer& p) {
  bool moved = false;
  while (!p.sends.empty()) {
    Request& r = *p.sends.front();
    if (!p.front_header_written) {
      if (p.out.writable() < sizeof(WireHeader)) break;
      WireHeader h = make_data_header(r.key, r.envelope);
      if (r.inject_corrupt_header) [[unlikely]] h.seq ^= 1;  // after the CRC: fault injection
      p.out.put(&h, sizeof h);
      p.front_header_written = true;
      moved = true;
    }
    while (r.transferred < r.envelope.bytes) {
      std::size_t n = std::min({p.out.writable(), options_.chunk_bytes,
                                static_cast<std::size_t>(r.envelope.bytes - r.transferred)});
      if (n == 0) break;
      r.buffer().for_each(r.transferred, n, [&](const std::byte* from, std::size_t k) {
        p.out.put(from, k);
        return true;
      });
      r.transferred += n;
      // Publish every chunk, so the receiver starts copying out while the next one goes in.
      p.out.publish();
      ring_doorbell(p.header);
      moved = true;
    }
    if (r.transferred < r.envelope.bytes) break;
    p.out.publish();
    ring_doorbell(p.header);
    r.finish();
    p.sends.pop_front();
    p.front_header_written = false;
  }
  return moved;
}

bool ShmTransport::progress_recvs(Peer& p) {
  bool moved = false;
  while (true) {
    if (!p.incoming) {
      if (p.in.readable() < sizeof(WireHeader)) break;
      WireHeader h;
      p.in.get(&h, sizeof h);
      moved = true;
      std::string problem = validate_header(h);
      if (problem.empty() && h.frame != static_cast<std::uint8_t>(FrameType::kData)) problem = "unexpected control frame";
      if (!problem.empty()) {
        throw Corrupt({.rank = options_.rank, .peer = p.rank, .op = "recv"},
                      fmt::format("shared-memory ring from rank {}: {}", p.rank, problem));
      }
      p.incoming = p.matcher.begin_message(h);
    }
    IncomingMessage& m = *p.incoming;
    while (m.remaining() > 0) {
      std::size_t n = std::min({p.in.readable(), options_.chunk_bytes, static_cast<std::size_t>(m.remaining())});
      if (n == 0) break;
      m.dst.for_each(m.received, n, [&](std::byte* to, std::size_t k) {
        p.in.get(to, k);
        return true;
      });
      m.received += n;
      if (m.recv) m.recv->transferred = m.received;
      // Free the space at once: the sender may be waiting to write the next chunk.
      p.in.release();
      ring_doorbell(p.header);
      moved = true;
    }
    if (m.remaining() > 0) break;
    p.matcher.finish_message(m);
    p.incoming.reset();
  }
  if (moved) {
    p.in.release();
    ring_doorbell(p.header);
  }
  return moved;
}

// Wake-up protocol (no lost wake-ups, and no shared write when nobody sleeps): a sleeper
// increments `sleepers`, issues a seq_cst fence, reads the doorbell, makes a last progress
// pass, and sleeps only while the doorbell still holds what it read. A notifier publishes its
// data, issues a seq_cst fence, and only if it sees a sleeper increments the doorbell and
// wakes it. The two fences forbid the store-buffering outcome in which each side misses the
// other's write: either the notifier sees the sleeper, or the sleeper's last pass sees the
// data. In the common case (the peer is spinning) a message costs no write to a shared line
// beyond the ring itself.
void ShmTransport::ring_doorbell(SegmentHeader* header) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (header->sleepers.load(std::memory_order_relaxed) == 0) return;
  header->doorbell.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&header->doorbell);
}

void ShmTransport::arm_wakeup(WakeupArm& arm) {
  own_header()->sleepers.fetch_add(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  arm.doorbell = own_header()->doorbell.load(std::memory_order_seq_cst);
}

void ShmTransport::sleep(const WakeupArm& arm, Seconds max_wait) {
  futex_wait(&own_header()->doorbell, static_cast<std::uint32_t>(arm.doorbell), max_wait);
}

void ShmTransport::disarm_wakeup() { own_header()->sleepers.fetch_sub(1, std::memory_order_seq_cst); }

void ShmTransport::check_abort_mailbox() {
  AbortMailbox& box = own_header()->abort;
  if (box.state.load(std::memory_order_acquire) != AbortMailbox::kFull) return;
  std::string message(box.message, std::min<std::size_t>(box.length, kMaxAbortMessage));
  auto kind = static_cast<ErrorKind>(box.kind);
  if (box.kind < 1 || box.kind > static_cast<std::uint32_t>(ErrorKind::kSystem)) kind = ErrorKind::kCorrupt;
  throw_error(kind, {.rank = options_.rank, .peer = box.from_rank, .op = "abort"},
              fmt::format("rank {} stopped and reported: {}", box.from_rank, message));
}

void ShmTransport::send_abort(int peer_rank, const Error& error) noexcept {
  int index = peer_rank >= 0 && static_cast<std::size_t>(peer_rank) < peer_index_.size()
                  ? peer_index_[static_cast<std::size_t>(peer_rank)] : -1;
  if (index < 0) return;
  SegmentHeader* header = peers_[static_cast<std::size_t>(index)]->header;
  AbortMailbox& box = header->abort;
  std::uint32_t expected = AbortMailbox::kEmpty;
  // The first report wins; later ones would only repeat the failure.
  if (!box.state.compare_exchange_strong(expected, AbortMailbox::kWriting, std::memory_order_acq_rel)) return;
  std::string text = error.what();
  box.from_rank = options_.rank;
  box.kind = static_cast<std::uint32_t>(error.kind());
  box.length = static_cast<std::uint32_t>(std::min<std::size_t>(text.size(), kMaxAbortMessage));
  std::memcpy(box.message, text.data(), box.length);
  box.state.store(AbortMailbox::kFull, std::memory_order_release);
  ring_doorbell(header);
}

void ShmTransport::check_peers() {
  for (auto& p : peers_) {
    if (!p->pending() || !p->process.exited()) continue;
    progress_recvs(*p);  // what it wrote before exiting is still in the ring
    if (!p->pending()) continue;
    // A rank that stopped on an error wrote its abort here before exiting: that error (a
    // Timeout, a Corrupt) is the cause, its exit only the consequence, as on TCP, where the
    // abort frame arrives before the end of the stream (found by the fault matrix: a survivor
    // reported PeerLost for a frozen rank's Timeout).
    check_abort_mailbox();
    const Request* r = p->oldest_request();
    ErrorContext ctx{.rank = options_.rank, .peer = p->rank, .op = "recv"};
    if (r != nullptr) {
      ctx.op = r->is_send() ? "send" : "recv";
      ctx.seq = r->envelope.seq;
    }
    throw PeerLost(ctx, fmt::format("rank {} (pid {}) exited while a transfer with it was pending", p->rank, p->process.pid()));
  }
}

std::string ShmTransport::lost_reason(int peer_rank) {
  Peer& p = peer(peer_rank);
  if (!p.process.exited()) return {};
  return fmt::format("rank {} (pid {}) exited", p.rank, p.process.pid());
}

std::optional<Envelope> ShmTransport::unexpected(int peer_rank, const MatchKey& key) {
  return peer(peer_rank).matcher.oldest_unexpected(key);
}

void ShmTransport::fail_all(const std::exception_ptr& error) noexcept {
  for (auto& p : peers_) {
    for (auto& s : p->sends) s->fail(error);
    p->sends.clear();
    if (p->incoming && p->incoming->recv) p->incoming->recv->fail(error);
    p->incoming.reset();
    p->matcher.fail_all(error);
  }
}

bool ShmTransport::has_pending() const {
  return std::any_of(peers_.begin(), peers_.end(), [](const auto& p) { return p->pending(); });
}

void ShmTransport::shutdown(Deadline) noexcept {
  // Completed sends already sit in the receivers' segments, which outlive this process's
  // mappings; there is nothing to flush.
}

}  // namespace braid::shm
