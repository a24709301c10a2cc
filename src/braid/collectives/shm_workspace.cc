#include "braid/collectives/shm_workspace.h"

#include <immintrin.h>
#include <sched.h>
#include <unistd.h>

#include <fmt/format.h>

#include "braid/base/env.h"
#include <cstring>

#include "braid/base/error.h"
#include "braid/base/reduce_op.h"
#include "braid/collectives/exchange.h"
#include "braid/collectives/registered_peers.h"
#include "braid/comm/communicator_internal.h"
#include "braid/comm/work.h"
#include "braid/transport/fabric.h"
#include "braid/transport/shm/cross_memory.h"
#include "braid/transport/shm/futex.h"
#include "braid/transport/shm/memfd_arena.h"
#include "braid/transport/shm/segment_names.h"
#include "braid/transport/shm/shm_budget.h"

namespace braid {

namespace {

constexpr std::uint32_t kWorkspaceMagic = 0x57445242;  // "BRDW"
// 2: call slots of kFastBytes x 2, kGathered; 3: single copy; 4: the posted word and inline inputs in the slot
constexpr std::uint32_t kWorkspaceVersion = 4;
constexpr std::size_t kHeaderBytes = 4096;
// Polls with a pause between them per clock read of a spin that does not yield
// (spin_until_reached): ~256 x 40-140 cycles, a few microseconds.
constexpr int kPausePolls = 256;
// How long a sleeping waiter sleeps before it checks liveness and the deadline.
constexpr Seconds kLivenessInterval{0.05};

// What the set-up messages carry, so that ranks built or configured differently refuse to
// share a workspace instead of reading each other's memory at the wrong offsets.
struct Geometry {
  std::uint64_t ranks;
  std::uint64_t slice_bytes;
};

const char* phase_name(ShmPhase phase) {
  switch (phase) {
    case ShmPhase::kStaged: return "publish its data of the round";
    case ShmPhase::kReduced: return "finish the round";
    case ShmPhase::kPosted: return "post its input";
    case ShmPhase::kGathered: return "publish its reduced block";
  }
  return "progress";
}

constexpr std::size_t kSmallSlotBytes = ShmWorkspace::kSlotHeaderBytes + 2 * ShmWorkspace::kFastBytes;
static_assert(ShmWorkspace::kSmallBytes <= ShmWorkspace::kFastBytes);
// A slot's first cache line: the signature at 0, the posted word (the last call posted in this
// slot: ShmPhase::kPosted's progress) and an inline input. Its second: the registrations.
constexpr std::size_t kPostedAt = 24;
constexpr std::size_t kInlineAt = 32;
constexpr std::size_t kRegistrationsAt = 64;
static_assert(sizeof(ShmCallSignature) <= kPostedAt && kInlineAt + ShmWorkspace::kInlineBytes <= 64);
static_assert(kRegistrationsAt + sizeof(ShmRegistrations) <= ShmWorkspace::kSlotHeaderBytes);

std::size_t segment_bytes(int ranks, std::size_t slice_bytes) {
  return kHeaderBytes + 2 * kSmallSlotBytes + (static_cast<std::size_t>(ranks) + 1) * slice_bytes;
}

// The slice where BRAID_SHM_SLICE_BYTES is not set. A staged call runs message / (ranks x
// slice) rounds, each ending in a wait for every peer. With a core per rank a wait costs about
// a cache-line round trip and small slices keep the staging in the caches (64-128 KiB measured
// best). Where the host's ranks outnumber its CPUs, each wait is for peers that hold no core,
// and beside other programs for those programs' time slices as well: 4 ranks on 2 CPUs with
// two busy loops beside, a 64 MiB allreduce took 533 ms with 128 KiB slices and 79 ms with
// 1 MiB ones (quiet: 34.6 and 32.4 ms; docs/performance.md, "Staged rounds beside other
// programs"). Every rank of the host gets the same answer, as the geometry requires.
constexpr long long kSliceWithACorePerRank = 128 << 10;
constexpr long long kSliceWhereRanksOutnumberCpus = 1 << 20;

// BRAID_SHM_SLICE_BYTES (range-checked by its env.h declaration) or the default above, bounded
// by what the machine can give (one segment per rank of the communicator).
std::size_t configured_slice_bytes(Communicator& comm) {
  try {
    const long long bytes = env::get_int_if_set(env::kShmSliceBytes)
                                .value_or(detail::CollectiveAccess(comm).host_ranks_outnumber_cpus()
                                              ? kSliceWhereRanksOutnumberCpus
                                              : kSliceWithACorePerRank);
    const std::size_t ranks = static_cast<std::size_t>(comm.size());
    shm::require_shm_demand({.variable = env::kShmSliceBytes.name, .value = bytes,
                             .total = shm::saturating_product(ranks, segment_bytes(comm.size(), static_cast<std::size_t>(bytes))),
                             .how = fmt::format("{} ranks x {} slices of {} bytes, plus headers", ranks, ranks + 1, bytes)},
                            comm.world_rank(comm.rank()), "shm.workspace");
    return static_cast<std::size_t>(bytes);
  } catch (const Error&) {
    // Poisons rather than throwing alone: the peers are about to wait for this rank's workspace.
    detail::CollectiveAccess(comm).fail_world(std::current_exception());
  }
}

// The set-up messages: sends `mine` to every peer and receives each peer's into theirs[peer].
template <class T>
void exchange_with_peers(Communicator& comm, const T& mine, std::vector<T>& theirs, OpKind op, std::int64_t seq) {
  const Envelope envelope{.op = op, .seq = seq, .dtype = DType::kU8, .bytes = sizeof(T)};
  detail::CollectiveAccess access(comm);
  std::vector<Work> works;
  for (int peer = 0; peer < comm.size(); ++peer) {
    if (peer == comm.rank()) continue;
    works.push_back(access.post_collective_recv(&theirs[static_cast<std::size_t>(peer)], envelope, peer));
    works.push_back(access.post_collective_send(&mine, envelope, peer));
  }
  algorithms::wait_all(works);
}

}  // namespace

// The first page of every rank's segment. The owner writes `progress`; peers read it, and
// ring `doorbell` (futex word) when `sleeping` says the owner sleeps on it.
struct ShmWorkspace::Header {
  std::uint32_t magic;
  std::uint32_t version;
  std::uint64_t ranks;
  std::uint64_t slice_bytes;
  std::int32_t pid;  // the owner's, for peers that map its registered arenas (registered_peers.h)
  // Where this header lies in its owner's address space: peers probe process_vm_readv on it.
  std::uint64_t own_address;
  // 1 once the owner found at set-up that it may read every peer's memory (written before its
  // second set-up message, read by the peers after they received it).
  std::atomic<std::uint32_t> reads_every_peer;
  // Indexed by ShmPhase: the last round / call done (kPosted's is in the call slots instead).
  alignas(64) std::atomic<std::uint64_t> progress[4];
  alignas(64) std::atomic<std::uint32_t> doorbell;
  std::atomic<std::uint32_t> sleeping;
};


bool ShmWorkspace::usable(const Communicator& comm) {
  if (comm.size() < 2 || comm.topology().num_hosts() != 1) return false;
  for (int peer = 0; peer < comm.size(); ++peer) {
    if (peer != comm.rank() && comm.transport_to(peer) != "shm") return false;
  }
  return true;
}

ShmWorkspace::ShmWorkspace(Communicator& comm, OpKind op, std::int64_t seq)
    : fabric_(detail::CollectiveAccess(comm).fabric()), rank_(comm.rank()), size_(comm.size()), op_(op), seq_(seq),
      slice_bytes_(configured_slice_bytes(comm)),
      timeout_(default_timeout_seconds()),
      quiet_key_{.comm_id = comm.id(), .channel = Channel::kCollective},
      registered_(std::make_unique<RegisteredPeers>(comm.world_rank(comm.rank()))) {
  // Whatever ends set-up early (a peer's bad geometry, a segment that cannot be created or
  // opened) poisons the fabric, so every peer stops waiting for this rank at once.
  try {
    set_up(comm, op, seq);
  } catch (const Error&) {
    fabric_.fail(std::current_exception());
  }
}

void ShmWorkspace::set_up(Communicator& comm, OpKind op, std::int64_t seq) {
  std::vector<std::string> all_names;
  for (int r = 0; r < size_; ++r) {
    all_names.push_back(fmt::format("/braid-{}-w{:x}-{}", detail::CollectiveAccess(comm).job_id(), comm.id(), r));
    world_ranks_.push_back(comm.world_rank(r));
  }
  // Declared before this rank's segment exists: however set-up ends, every name goes (see
  // segment_names.h), on success once the second exchange proves every rank mapped them all.
  shm::SegmentNames names(std::move(all_names));
  segments_.resize(static_cast<std::size_t>(size_));
  shm::Segment& own = segments_[static_cast<std::size_t>(rank_)];
  static_assert(sizeof(Header) <= kHeaderBytes);
  own = shm::Segment::create(names[static_cast<std::size_t>(rank_)], segment_bytes(size_, slice_bytes_));
  auto* h = reinterpret_cast<Header*>(own.data());
  h->magic = kWorkspaceMagic;
  h->version = kWorkspaceVersion;
  h->ranks = static_cast<std::uint64_t>(size_);
  h->slice_bytes = slice_bytes_;
  h->pid = static_cast<std::int32_t>(::getpid());
  h->own_address = shm::address_of(h);

  // Tell every peer the segment exists (and its geometry), then map theirs.
  const Geometry mine{static_cast<std::uint64_t>(size_), slice_bytes_};
  std::vector<Geometry> theirs(static_cast<std::size_t>(size_));
  exchange_with_peers(comm, mine, theirs, op, seq);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const Geometry& g = theirs[static_cast<std::size_t>(peer)];
    if (g.ranks != mine.ranks || g.slice_bytes != mine.slice_bytes) {
      fabric_.fail(std::make_exception_ptr(Mismatch(
          {.rank = world_rank(rank_), .peer = world_rank(peer), .op = std::string(op_kind_name(op)), .seq = seq},
          fmt::format("shared-memory workspace geometry differs: peer has {} ranks x {} bytes, this rank {} x {} "
                      "(is BRAID_SHM_SLICE_BYTES the same on every rank?)", g.ranks, g.slice_bytes, mine.ranks, mine.slice_bytes))));
    }
    shm::Segment& s = segments_[static_cast<std::size_t>(peer)] = shm::Segment::open(names[static_cast<std::size_t>(peer)]);
    const Header* ph = header(peer);
    if (s.size() != segment_bytes(size_, slice_bytes_) || ph->magic != kWorkspaceMagic || ph->version != kWorkspaceVersion) {
      fabric_.fail(std::make_exception_ptr(Corrupt({.rank = world_rank(rank_), .peer = world_rank(peer), .op = "shm.workspace"},
                                                   "peer's shared-memory workspace has a bad size, magic or version")));
    }
  }
  h->reads_every_peer.store(may_read_every_peer() ? 1 : 0, std::memory_order_release);
  // Every peer has mapped every segment once it has sent this: the names can go.
  exchange_with_peers(comm, mine, theirs, op, seq);
  single_copy_ = true;
  for (int r = 0; r < size_; ++r) single_copy_ = single_copy_ && header(r)->reads_every_peer.load(std::memory_order_acquire) == 1;
}

// Reads the start of each peer's header through process_vm_readv at the address the peer
// posted and compares it with the same bytes seen through the shared mapping: true only if the
// kernel lets this process read the peer's memory and the address means what it should.
bool ShmWorkspace::may_read_every_peer() const {
  if (env::get_choice(env::kCrossMemory) == "0") return false;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    const Header* ph = header(peer);
    const std::span<const std::byte> expected(reinterpret_cast<const std::byte*>(ph), 8);  // magic and version
    if (!shm::can_read_peer_memory(ph->pid, ph->own_address, expected)) return false;
  }
  return true;
}

ShmWorkspace::~ShmWorkspace() = default;

std::size_t ShmWorkspace::chunk_bytes() const {
  return std::min(slice_bytes_, static_cast<std::size_t>(kSliceWithACorePerRank));
}

ShmWorkspace::Header* ShmWorkspace::header(int rank) const {
  return reinterpret_cast<Header*>(segments_[static_cast<std::size_t>(rank)].data());
}

std::byte* ShmWorkspace::small_slot(int rank, std::uint64_t call) const {
  return segments_[static_cast<std::size_t>(rank)].data() + kHeaderBytes + (call % 2) * kSmallSlotBytes;
}

std::byte* ShmWorkspace::posted_input(int rank, std::uint64_t call, std::size_t bytes) const {
  return small_slot(rank, call) + (bytes <= kInlineBytes ? kInlineAt : kSlotHeaderBytes);
}

std::atomic<std::uint64_t>& ShmWorkspace::progress(int rank, ShmPhase phase, std::uint64_t round) const {
  if (phase == ShmPhase::kPosted) return *reinterpret_cast<std::atomic<std::uint64_t>*>(small_slot(rank, round) + kPostedAt);
  return header(rank)->progress[static_cast<int>(phase)];
}

std::byte* ShmWorkspace::staging(int rank) const {
  return segments_[static_cast<std::size_t>(rank)].data() + kHeaderBytes + 2 * kSmallSlotBytes;
}

std::byte* ShmWorkspace::result(int rank) const { return staging(rank) + static_cast<std::size_t>(size_) * slice_bytes_; }

std::uint64_t ShmWorkspace::post_call(const CollectiveArgs& a, std::span<const std::byte> small_input,
                                      const ShmRegistrations& registrations) {
  const std::uint64_t call = begin_call(a.op, a.seq);
  const ShmCallSignature mine{.seq = a.seq, .count = a.count, .op = static_cast<std::uint8_t>(a.op),
                              .dtype = static_cast<std::uint8_t>(a.dtype),
                              .reduce_op = static_cast<std::uint8_t>(a.reduce_op), .root = a.root};
  std::byte* slot = small_slot(rank_, call);
  std::memcpy(slot, &mine, sizeof mine);
  std::memcpy(slot + kRegistrationsAt, &registrations, sizeof registrations);
  if (!small_input.empty()) std::memcpy(posted_input(rank_, call, small_input.size()), small_input.data(), small_input.size());
  publish(ShmPhase::kPosted, call);
  // The deadline (a clock read and a conversion) only when a peer is still to come.
  if (!peers_reached(ShmPhase::kPosted, call)) wait_for_peers(ShmPhase::kPosted, call, deadline());
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    ShmCallSignature theirs;
    std::memcpy(&theirs, small_slot(q, call), sizeof theirs);
    check_signature(q, theirs, mine);
  }
  return call;
}

ShmRegistrations ShmWorkspace::registrations_of(const CollectiveArgs& a, std::size_t send_bytes, std::size_t recv_bytes) {
  auto where = [](const std::byte* p, std::size_t bytes) {
    const auto ref = p == nullptr || bytes == 0 ? std::nullopt : shm::ArenaRegistry::find(p, bytes);
    return ref ? ShmRegistration{.arena = ref->arena, .fd = ref->fd, .offset = ref->offset}
               : ShmRegistration{.offset = shm::address_of(p)};
  };
  return {.send = where(a.send, send_bytes), .recv = where(a.recv, recv_bytes)};
}

ShmRegistrations ShmWorkspace::posted_registrations(int rank, std::uint64_t call) const {
  ShmRegistrations theirs;
  std::memcpy(&theirs, small_slot(rank, call) + kRegistrationsAt, sizeof theirs);
  return theirs;
}

bool ShmWorkspace::registered_everywhere(std::uint64_t call, bool send, bool recv) const {
  for (int q = 0; q < size_; ++q) {
    const ShmRegistrations theirs = posted_registrations(q, call);
    if ((send && theirs.send.arena == 0) || (recv && theirs.recv.arena == 0)) return false;
  }
  return true;
}

std::byte* ShmWorkspace::registered_buffer(int rank, std::uint64_t call, bool recv, std::size_t bytes) {
  const ShmRegistrations theirs = posted_registrations(rank, call);
  ++registered_buffer_uses_;
  try {
    return registered_->address(world_rank(rank), header(rank)->pid, recv ? theirs.recv : theirs.send, bytes);
  } catch (const Error&) {
    fabric_.fail(std::current_exception());
  }
}

std::size_t ShmWorkspace::registered_arenas_mapped() const { return registered_->mapped(); }

void ShmWorkspace::read_posted(int rank, std::uint64_t call, bool recv, std::size_t total, std::size_t at,
                               std::byte* local, std::size_t bytes) {
  copy_posted(rank, call, recv, total, at, local, bytes, /*to_peer=*/false);
}

void ShmWorkspace::write_posted(int rank, std::uint64_t call, bool recv, std::size_t total, std::size_t at,
                                const std::byte* local, std::size_t bytes) {
  // Only read on this path: process_vm_writev's local iovec is not const.
  copy_posted(rank, call, recv, total, at, const_cast<std::byte*>(local), bytes, /*to_peer=*/true);
}

void ShmWorkspace::copy_posted(int rank, std::uint64_t call, bool recv, std::size_t total, std::size_t at,
                               std::byte* local, std::size_t bytes, bool to_peer) {
  const ShmRegistrations theirs = posted_registrations(rank, call);
  const ShmRegistration& where = recv ? theirs.recv : theirs.send;
  if (where.arena != 0) {
    std::byte* mapped = registered_buffer(rank, call, recv, total) + at;
    to_peer ? std::memcpy(mapped, local, bytes) : std::memcpy(local, mapped, bytes);
    return;
  }
  try {
    const pid_t pid = header(rank)->pid;
    if (to_peer) shm::write_peer_memory(pid, where.offset + at, local, bytes, context(rank));
    else shm::read_peer_memory(pid, where.offset + at, local, bytes, context(rank));
  } catch (const Error&) {
    // A peer that gave up (Timeout, Mismatch) told every rank why before it exited; its abort
    // may still wait in the transport. That error wins over "its process is gone", as it does
    // on the paths that wait (wait_for_peers' health check).
    fabric_.check_health(world_ranks_, context(rank), quiet_key_);
    fabric_.fail(std::current_exception());
  }
  single_copy_bytes_ += bytes;
}

ErrorContext ShmWorkspace::context(int peer) const {
  return {.rank = world_rank(rank_), .peer = peer < 0 ? -1 : world_rank(peer), .op = std::string(op_kind_name(op_)),
          .seq = seq_};
}

void ShmWorkspace::check_signature(int peer, const ShmCallSignature& theirs, const ShmCallSignature& mine) const {
  if (theirs == mine) return;
  fabric_.fail(std::make_exception_ptr(Mismatch(
      context(peer),
      fmt::format("rank {} called {} #{} with {} elements of {}, op {} and root {}; this rank {} #{} with {} of "
                  "{}, op {} and root {}", world_rank(peer), op_kind_name(static_cast<OpKind>(theirs.op)), theirs.seq, theirs.count,
                  dtype_name(static_cast<DType>(theirs.dtype)), reduce_op_name(static_cast<ReduceOp>(theirs.reduce_op)),
                  theirs.root, op_kind_name(static_cast<OpKind>(mine.op)), mine.seq, mine.count,
                  dtype_name(static_cast<DType>(mine.dtype)), reduce_op_name(static_cast<ReduceOp>(mine.reduce_op)),
                  mine.root))));
}

void ShmWorkspace::exchange_rounds(std::int64_t rounds, std::size_t half_bytes, const RoundStep& stage,
                                   const RoundStep& read) {
  const std::uint64_t base = round_;
  const Deadline until = deadline();
  std::uint64_t g = base;
  for (std::int64_t k = 0; k < rounds; ++k) {
    g = base + static_cast<std::uint64_t>(k) + 1;
    const std::size_t offset = (g % 2) * half_bytes;
    if (g >= base + 3) wait_for_peers(ShmPhase::kReduced, g - 2, until);
    stage(k, offset);
    publish(ShmPhase::kStaged, g);
    wait_for_peers(ShmPhase::kStaged, g, until);
    read(k, offset);
    publish(ShmPhase::kReduced, g);
  }
  wait_for_peers(ShmPhase::kReduced, g, until);
  end(static_cast<std::uint64_t>(rounds));
}

// Memory order: the progress store and the `sleeping` load are both seq_cst, as are the
// waiter's `sleeping` store and progress loads (sleep_until_published). In the single total
// order either the waiter's flag precedes our load (we ring) or our store precedes its
// re-check (it sees the new value and does not sleep). Release on the store also publishes
// the data written before it to the peers' acquire loads.
void ShmWorkspace::publish(ShmPhase phase, std::uint64_t round) {
  progress(rank_, phase, round).store(round, std::memory_order_seq_cst);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    Header* ph = header(peer);
    if (ph->sleeping.load(std::memory_order_seq_cst) != 0) {
      ph->doorbell.fetch_add(1, std::memory_order_seq_cst);
      shm::futex_wake_all(&ph->doorbell);
    }
  }
}

bool ShmWorkspace::peers_reached(ShmPhase phase, std::uint64_t round) const {
  for (int peer = 0; peer < size_; ++peer) {
    if (peer != rank_ && progress(peer, phase, round).load(std::memory_order_seq_cst) < round) {
      return false;
    }
  }
  return true;
}

void ShmWorkspace::sleep_until_published(ShmPhase phase, std::uint64_t round, Seconds max_wait) {
  Header* own = header(rank_);
  const std::uint32_t rung = own->doorbell.load(std::memory_order_seq_cst);
  own->sleeping.store(1, std::memory_order_seq_cst);
  if (!peers_reached(phase, round)) shm::futex_wait(&own->doorbell, rung, max_wait);
  own->sleeping.store(0, std::memory_order_relaxed);
}

bool ShmWorkspace::spin_until_reached(ShmPhase phase, std::uint64_t round, Clock::time_point spin_end) const {
  // With a core per rank a peer that is running arrives within a microsecond or two: poll with
  // pauses, reading the clock every kPausePolls polls (~a few us). Never yield then: with no
  // other task on the core a yield returns at once, and with another program's there it hands
  // that program the core for a whole slice (~4 ms) while the peer publishes (the Fabric's wait
  // pauses too; docs/performance.md, "Waiting beside other programs"). Where ranks outnumber
  // cores, yield at every check: the peer we wait for may need this very core (Open MPI's
  // yield_when_idle does the same). The clock is read at every yield (a vDSO call): a yield can
  // take a whole time slice, so counting yields would stretch the spin.
  const bool yield = fabric_.options().yield_while_spinning;
  do {
    if (yield) {
      if (peers_reached(phase, round)) return true;
      ::sched_yield();
      continue;
    }
    for (int i = 0; i < kPausePolls; ++i) {
      if (peers_reached(phase, round)) return true;
      _mm_pause();
    }
  } while (Clock::now() < spin_end);
  return peers_reached(phase, round);
}

void ShmWorkspace::wait_for_peers(ShmPhase phase, std::uint64_t round, const Deadline& deadline) {
  if (peers_reached(phase, round)) return;
  const auto start = Clock::now();
  const auto interval = std::chrono::duration_cast<Clock::duration>(kLivenessInterval);
  const auto spin_end = start + std::chrono::duration_cast<Clock::duration>(Seconds(fabric_.options().spin_seconds));
  if (spin_until_reached(phase, round, spin_end)) return;
  // The first health check comes one interval into the wait: the fabric's check takes its
  // lock and may allocate, and a short sleep (a peer descheduled on a loaded machine) must keep
  // the fast path free of both. A lost or diverged peer is still noticed within an interval.
  auto next_check = start + interval;
  while (!peers_reached(phase, round)) {
    const auto now = Clock::now();
    if (now >= next_check) {
      // A lost peer, or an error another rank reported, ends the wait; so does a message of
      // this collective (or an earlier one) from a peer, which means it runs another operation.
      const ErrorContext ctx = context(-1);
      if (auto stray = fabric_.check_health(world_ranks_, ctx, quiet_key_)) {
        if (stray->envelope.seq <= seq_ && !peers_reached(phase, round)) fail_on_stray_message(*stray);
      }
      next_check = Clock::now() + interval;
    }
    if (deadline.expired()) throw_timeout(phase, round, Seconds(Clock::now() - start).count());
    sleep_until_published(phase, round, deadline.remaining(Seconds(next_check - Clock::now())));
  }
}

void ShmWorkspace::fail_on_stray_message(const Fabric::Unexpected& stray) {
  fabric_.fail(std::make_exception_ptr(Mismatch(
      {.rank = world_rank(rank_), .peer = stray.peer, .op = std::string(op_kind_name(op_)), .seq = seq_},
      fmt::format("rank {} sent a message of {} while this rank runs {} #{} through shared memory: the ranks called "
                  "different collectives", stray.peer, describe(stray.envelope), op_kind_name(op_), seq_))));
}

void ShmWorkspace::throw_timeout(ShmPhase phase, std::uint64_t round, double waited) {
  int late = -1;
  for (int peer = 0; peer < size_ && late < 0; ++peer) {
    if (peer != rank_ && progress(peer, phase, round).load() < round) late = peer;
  }
  fabric_.fail(std::make_exception_ptr(Timeout(
      context(late),
      fmt::format("timed out after {:.1f} s waiting in shared memory for rank {} to {}; the peer may be "
                  "stuck, or the ranks called different operations (BRAID_TIMEOUT sets the limit)",
                  waited, world_rank(late), phase_name(phase)))));
}

}  // namespace braid
