#include "braid/comm/communicator.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <unistd.h>

#include <fmt/format.h>

#include "braid/base/splitmix64.h"
#include "braid/comm/communicator_internal.h"
#include "braid/comm/world.h"

namespace braid {

namespace {

constexpr std::uint64_t kWorldCommId = 1;

// SplitMix64's first output as a cheap, well-mixed hash, so that communicator ids derived from
// (parent, seq, color) on different ranks agree, and different splits almost surely differ.
std::uint64_t mix(std::uint64_t x) { return SplitMix64(x).next(); }

std::uint64_t child_comm_id(std::uint64_t parent, std::int64_t seq, int color) {
  return mix(parent ^ mix(static_cast<std::uint64_t>(seq) ^ mix(static_cast<std::uint64_t>(color) + 1)));
}

}  // namespace

Communicator Communicator::init() { return world_communicator(World::create()); }

Communicator Communicator::init(int rank, int size, std::shared_ptr<KeyValueStore> store) {
  return world_communicator(World::join(rank, size, std::move(store)));
}

Communicator Communicator::world_communicator(std::shared_ptr<World> world) {
  std::vector<int> members(static_cast<std::size_t>(world->info.world_size));
  std::iota(members.begin(), members.end(), 0);
  Topology topology = world->topology;
  int rank = world->info.rank;
  Communicator comm(std::move(world), std::move(members), rank, kWorldCommId, std::move(topology));
  // Every rank returns from init only once every connection works end to end.
  comm.barrier();
  return comm;
}

Communicator::Communicator(std::shared_ptr<World> world, std::vector<int> members, int rank, std::uint64_t id,
                           Topology topology)
    : world_(std::move(world)),
      members_(std::move(members)),
      rank_(rank),
      id_(id),
      topology_(std::move(topology)),
      scratch_(std::make_unique<ScratchBuffer>()) {}

Communicator::Communicator(Communicator&& other) noexcept {
  other.for_each_attachment(&CommAttachment::quiesce);
  *this = std::move(other);
}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this == &other) return *this;
  for_each_attachment(&CommAttachment::quiesce);
  other.for_each_attachment(&CommAttachment::quiesce);
  take_attachments();  // destroyed outside the lock, before the connections they may use
  world_ = std::move(other.world_);
  members_ = std::move(other.members_);
  rank_ = other.rank_;
  id_ = other.id_;
  topology_ = std::move(other.topology_);
  next_collective_seq_ = other.next_collective_seq_;
  next_send_seq_ = other.next_send_seq_;
  scratch_ = std::move(other.scratch_);
  std::array<const std::type_info*, kIndexedAttachments> types{};  // take_attachments clears them
  for (std::size_t i = 0; i < kIndexedAttachments; ++i) types[i] = other.indexed_[i].type.load(std::memory_order_relaxed);
  Attachments theirs = other.take_attachments();
  MutexLock lock(attachments_mu_);
  attachments_ = std::move(theirs);
  const std::size_t indexed = std::min(attachments_.size(), kIndexedAttachments);
  for (std::size_t i = 0; i < indexed; ++i) index_attachment_locked(i, *types[i], attachments_[i].second.get());
  for (const auto& [type, value] : attachments_) {
    if (value->wants_before_collective()) before_collective_hooks_.store(true, std::memory_order_release);
  }
  indexed_count_.store(indexed, std::memory_order_release);
  return *this;
}

// Background work (queued collectives) may still use the communicator, and may create
// attachments while it runs: finish it before any attachment is destroyed.
Communicator::~Communicator() { for_each_attachment(&CommAttachment::quiesce); }

Communicator::Attachments Communicator::take_attachments() {
  MutexLock lock(attachments_mu_);
  indexed_count_.store(0, std::memory_order_release);
  before_collective_hooks_.store(false, std::memory_order_release);
  for (auto& entry : indexed_) {
    entry.type.store(nullptr, std::memory_order_relaxed);
    entry.name_hash.store(0, std::memory_order_relaxed);
    entry.value.store(nullptr, std::memory_order_relaxed);
  }
  return std::exchange(attachments_, {});
}

void Communicator::index_attachment_locked(std::size_t i, const std::type_info& type, CommAttachment* value) {
  indexed_[i].type.store(&type, std::memory_order_relaxed);
  indexed_[i].name_hash.store(detail::type_name_hash(type), std::memory_order_relaxed);
  indexed_[i].value.store(value, std::memory_order_relaxed);
}

void Communicator::add_attachment_locked(const std::type_info& type, std::unique_ptr<CommAttachment> value) {
  // The flag before the attachment is found: a collective that finds it also runs its hook.
  if (value->wants_before_collective()) before_collective_hooks_.store(true, std::memory_order_release);
  const std::size_t i = attachments_.size();
  if (i < kIndexedAttachments) {
    index_attachment_locked(i, type, value.get());
    indexed_count_.store(i + 1, std::memory_order_release);
  }
  attachments_.emplace_back(std::type_index(type), std::move(value));
}

CommAttachment* Communicator::find_indexed(const std::type_info& type, std::uint64_t name_hash, bool& complete) const {
  const std::size_t count = indexed_count_.load(std::memory_order_acquire);
  // The same type_info object is a hit at a pointer comparison. Another object may stand for
  // the same type (one per shared library): its name hashes alike, and only then are the
  // names compared (type_info's operator== may strcmp them).
  for (std::size_t i = 0; i < count; ++i) {
    const std::type_info* held = indexed_[i].type.load(std::memory_order_relaxed);
    if (held == &type || (indexed_[i].name_hash.load(std::memory_order_relaxed) == name_hash && *held == type)) {
      return indexed_[i].value.load(std::memory_order_relaxed);
    }
  }
  complete = count < kIndexedAttachments;
  return nullptr;
}

CommAttachment* Communicator::attachment_at(std::size_t i) const {
  // Below the count the index is exact; between it and the index's size there is nothing yet.
  const std::size_t count = indexed_count_.load(std::memory_order_acquire);
  if (i < count) return indexed_[i].value.load(std::memory_order_relaxed);
  if (i < kIndexedAttachments && count < kIndexedAttachments) return nullptr;
  MutexLock lock(attachments_mu_);
  return i < attachments_.size() ? attachments_[i].second.get() : nullptr;
}

void Communicator::for_each_attachment(void (CommAttachment::*hook)() noexcept) {
  for (std::size_t i = 0;; ++i) {
    CommAttachment* attachment = attachment_at(i);
    if (attachment == nullptr) return;
    (attachment->*hook)();
  }
}

Fabric& detail::CollectiveAccess::fabric() const { return *comm_.world_->fabric; }
void detail::CollectiveAccess::fail_world(std::exception_ptr error) const { comm_.world_->fabric->fail(std::move(error)); }
std::uint64_t detail::CollectiveAccess::bytes_sent() const { return comm_.world_->fabric->bytes_sent(); }

const std::string& detail::CollectiveAccess::job_id() const { return comm_.world_->job_id; }

bool detail::CollectiveAccess::host_ranks_outnumber_cpus() const {
  const World& world = *comm_.world_;
  return world.topology.local_size(world.info.rank) > static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
}

std::string_view Communicator::transport_to(int peer) const {
  if (peer < 0 || peer >= size()) {
    throw InvalidArgument({.rank = rank_, .peer = peer, .op = "transport_to"},
                          fmt::format("peer {} is out of range for a communicator of size {}", peer, size()));
  }
  return world_->fabric->transport_name(world_rank(peer));
}

std::uint64_t Communicator::checked_bytes(const void* data, std::int64_t count, DType dtype, int peer, int tag,
                                          const char* op) const {
  ErrorContext ctx{.rank = rank_, .peer = peer, .op = op};
  if (peer < 0 || peer >= size()) {
    throw InvalidArgument(ctx, fmt::format("peer {} is out of range: this communicator has ranks 0..{}", peer, size() - 1));
  }
  if (count < 0) throw InvalidArgument(ctx, fmt::format("count must be >= 0, got {}", count));
  if (data == nullptr && count > 0) throw InvalidArgument(ctx, fmt::format("null buffer with count {}", count));
  if (tag < 0) throw InvalidArgument(ctx, fmt::format("tag must be >= 0, got {}", tag));
  if (!is_valid_dtype(static_cast<std::uint8_t>(dtype))) {
    throw InvalidArgument(ctx, fmt::format("invalid dtype value {}", static_cast<int>(dtype)));
  }
  auto elem = static_cast<std::int64_t>(dtype_size(dtype));
  if (count > std::numeric_limits<std::int64_t>::max() / elem) {
    throw InvalidArgument(ctx, fmt::format("count {} of {} overflows a byte count", count, dtype_name(dtype)));
  }
  return static_cast<std::uint64_t>(count * elem);
}

std::shared_ptr<Request> Communicator::make_request(bool is_send, void* data, const MatchKey& key,
                                                    const Envelope& envelope, int peer) const {
  auto request = std::make_shared<Request>();
  request->kind = is_send ? Request::Kind::kSend : Request::Kind::kRecv;
  request->peer = world_rank(peer);
  request->key = key;
  request->envelope = envelope;
  request->data = static_cast<std::byte*>(data);
  return request;
}

Work Communicator::submit(std::shared_ptr<Request> request) {
  world_->fabric->post(request);
  return Work(world_->fabric, std::move(request));
}

Work Communicator::isend(const void* data, std::int64_t count, DType dtype, int peer, int tag) {
  std::uint64_t bytes = checked_bytes(data, count, dtype, peer, tag, "send");
  world_->fabric->fault_point(OpKind::kSendRecv);
  Envelope envelope{.op = OpKind::kSendRecv, .seq = next_send_seq_++, .dtype = dtype, .bytes = bytes};
  MatchKey key{.comm_id = id_, .channel = Channel::kUser, .tag = static_cast<std::uint32_t>(tag)};
  return post(true, const_cast<void*>(data), key, envelope, peer);
}

Work Communicator::irecv(void* data, std::int64_t count, DType dtype, int peer, int tag) {
  std::uint64_t bytes = checked_bytes(data, count, dtype, peer, tag, "recv");
  Envelope envelope{.op = OpKind::kSendRecv, .seq = kAnySeq, .dtype = dtype, .bytes = bytes};
  MatchKey key{.comm_id = id_, .channel = Channel::kUser, .tag = static_cast<std::uint32_t>(tag)};
  return post(false, data, key, envelope, peer);
}

namespace {

// isendv / irecvv's pieces as the transport takes them: empty ones dropped, null memory and
// an overflowing byte count refused; `bytes` gets their sum. The transport never writes a
// send's memory: a send's const is shed only because one piece type serves both.
template <typename Byte>
std::vector<BufferPiece> checked_pieces(std::span<const std::span<Byte>> pieces, const ErrorContext& ctx,
                                        std::uint64_t& bytes) {
  std::vector<BufferPiece> checked;
  checked.reserve(pieces.size());
  bytes = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const std::span<Byte> piece = pieces[i];
    if (piece.empty()) continue;
    if (piece.data() == nullptr) {
      throw InvalidArgument(ctx, fmt::format("piece {} of {} is null with {} bytes", i, pieces.size(), piece.size()));
    }
    if (piece.size() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) - bytes) {
      throw InvalidArgument(ctx, fmt::format("the byte count of {} pieces overflows", pieces.size()));
    }
    bytes += piece.size();
    checked.push_back({const_cast<std::byte*>(piece.data()), piece.size()});
  }
  return checked;
}

}  // namespace

Work Communicator::post_pieces(bool is_send, std::vector<BufferPiece> pieces, std::uint64_t bytes, int peer, int tag) {
  if (is_send) world_->fabric->fault_point(OpKind::kSendRecv);
  Envelope envelope{.op = OpKind::kSendRecv, .seq = is_send ? next_send_seq_++ : kAnySeq, .dtype = DType::kU8, .bytes = bytes};
  MatchKey key{.comm_id = id_, .channel = Channel::kUser, .tag = static_cast<std::uint32_t>(tag)};
  std::shared_ptr<Request> request = make_request(is_send, nullptr, key, envelope, peer);
  request->pieces = std::move(pieces);
  return submit(std::move(request));
}

Work Communicator::isendv(std::span<const std::span<const std::byte>> pieces, int peer, int tag) {
  checked_bytes(nullptr, 0, DType::kU8, peer, tag, "send");  // the peer and the tag
  std::uint64_t bytes = 0;
  std::vector<BufferPiece> checked = checked_pieces(pieces, {.rank = rank_, .peer = peer, .op = "send"}, bytes);
  return post_pieces(true, std::move(checked), bytes, peer, tag);
}

Work Communicator::irecvv(std::span<const std::span<std::byte>> pieces, int peer, int tag) {
  checked_bytes(nullptr, 0, DType::kU8, peer, tag, "recv");  // the peer and the tag
  std::uint64_t bytes = 0;
  std::vector<BufferPiece> checked = checked_pieces(pieces, {.rank = rank_, .peer = peer, .op = "recv"}, bytes);
  return post_pieces(false, std::move(checked), bytes, peer, tag);
}

AnySourceRecv Communicator::irecv_any_source(void* data, std::int64_t count, DType dtype, int tag) {
  std::uint64_t bytes = checked_bytes(data, count, dtype, rank_, tag, "recv");
  MatchKey key{.comm_id = id_, .channel = Channel::kUser, .tag = static_cast<std::uint32_t>(tag)};
  std::shared_ptr<Request> request = make_request(false, data, key, Envelope{.op = OpKind::kSendRecv, .seq = kAnySeq, .dtype = dtype, .bytes = bytes}, rank_);
  request->peer = kAnySource;
  world_->fabric->post_any_source(request, members_);
  return AnySourceRecv(Work(world_->fabric, request), request, members_);
}

int AnySourceRecv::source() const {
  if (!request_->complete.load(std::memory_order_acquire) || request_->error) return -1;
  auto it = std::find(members_.begin(), members_.end(), request_->peer);
  return it == members_.end() ? -1 : static_cast<int>(it - members_.begin());
}

void Communicator::send(const void* data, std::int64_t count, DType dtype, int peer, int tag) {
  isend(data, count, dtype, peer, tag).wait();
}

void Communicator::recv(void* data, std::int64_t count, DType dtype, int peer, int tag) {
  irecv(data, count, dtype, peer, tag).wait();
}

Work Communicator::post_collective_send(const void* data, const Envelope& envelope, int peer) {
  return post(true, const_cast<void*>(data), MatchKey{.comm_id = id_, .channel = Channel::kCollective}, envelope, peer);
}

Work Communicator::post_collective_recv(void* data, const Envelope& envelope, int peer) {
  return post(false, data, MatchKey{.comm_id = id_, .channel = Channel::kCollective}, envelope, peer);
}

void Communicator::barrier() {
  const int n = size();
  const std::int64_t seq = detail::CollectiveAccess(*this).begin_collective();
  Envelope envelope{.op = OpKind::kBarrier, .seq = seq, .dtype = DType::kU8, .bytes = 0};
  // Dissemination barrier (Hensgen, Finkel, Manber 1988): in round k every rank signals
  // rank + 2^k and waits for rank - 2^k; after ceil(log2 n) rounds all have heard from all.
  for (int distance = 1; distance < n; distance <<= 1) {
    Work sent = post_collective_send(nullptr, envelope, (rank_ + distance) % n);
    Work received = post_collective_recv(nullptr, envelope, (rank_ - distance + n) % n);
    received.wait();
    sent.wait();
  }
}

std::optional<Communicator> Communicator::split(int color, int key) {
  if (color < 0 && color != kUndefinedColor) {
    throw InvalidArgument({.rank = rank_, .op = "split"},
                          fmt::format("color must be >= 0 or Communicator::kUndefinedColor, got {}", color));
  }
  const int n = size();
  const std::int64_t seq = detail::CollectiveAccess(*this).begin_collective();
  // Every rank learns every (color, key): gather at rank 0, then rank 0 sends the table out.
  std::vector<std::int64_t> table(static_cast<std::size_t>(2 * n));
  std::int64_t mine[2] = {color, key};
  Envelope one{.op = OpKind::kSplit, .seq = seq, .dtype = DType::kI64, .bytes = sizeof mine};
  Envelope all{.op = OpKind::kSplit, .seq = seq, .dtype = DType::kI64, .bytes = table.size() * sizeof(std::int64_t)};
  if (rank_ == 0) {
    std::copy(mine, mine + 2, table.begin());
    std::vector<Work> gathered;
    for (int r = 1; r < n; ++r) gathered.push_back(post_collective_recv(&table[static_cast<std::size_t>(2 * r)], one, r));
    for (auto& w : gathered) w.wait();
    std::vector<Work> sent;
    for (int r = 1; r < n; ++r) sent.push_back(post_collective_send(table.data(), all, r));
    for (auto& w : sent) w.wait();
  } else {
    Work sent = post_collective_send(mine, one, 0);
    post_collective_recv(table.data(), all, 0).wait();
    sent.wait();
  }
  if (color == kUndefinedColor) return std::nullopt;

  std::vector<int> group;  // ranks of this communicator with my color, in (key, rank) order
  for (int r = 0; r < n; ++r) {
    if (table[static_cast<std::size_t>(2 * r)] == color) group.push_back(r);
  }
  std::stable_sort(group.begin(), group.end(),
                   [&](int a, int b) { return table[static_cast<std::size_t>(2 * a + 1)] < table[static_cast<std::size_t>(2 * b + 1)]; });
  std::vector<int> world_members;
  for (int r : group) world_members.push_back(world_rank(r));
  int new_rank = static_cast<int>(std::find(group.begin(), group.end(), rank_) - group.begin());
  return Communicator(world_, std::move(world_members), new_rank, child_comm_id(id_, seq, color), topology_.subset(group));
}

}  // namespace braid
