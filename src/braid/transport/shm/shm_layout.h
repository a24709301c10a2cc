// The layout of one rank's shared-memory segment: the rank owns (creates, zeroes) one segment
// holding its doorbell, its abort mailbox and one inbound ring per local peer (its name is
// unlinked at the end of set-up by whichever rank gets there: segment_names.h).
// Peers map it and write into "their" ring; the owner reads. Offsets are pure arithmetic on
// (local world size, ring bytes), computed identically by the owner and by every peer.
//
//   [SegmentHeader, padded to 4 KiB][RingControl x slots, padded to 4 KiB][ring data x slots]
//
// Memory orders: ring head/tail are single-writer counters published with release and read
// with acquire (the data copy happens-before the counter store). The doorbell and sleepers
// words use seq_cst, the Dekker-style pairing that prevents a lost wake-up (see shm_transport.cc).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "braid/transport/message_header.h"

namespace braid::shm {

inline constexpr std::uint64_t kSegmentMagic = 0x42524149445f5348ULL;  // "BRAID_SH"
inline constexpr std::uint32_t kSegmentVersion = 1;
inline constexpr std::size_t kPage = 4096;

struct AbortMailbox {
  enum State : std::uint32_t { kEmpty = 0, kWriting = 1, kFull = 2 };
  std::atomic<std::uint32_t> state;
  std::int32_t from_rank;
  std::uint32_t kind;
  std::uint32_t length;
  char message[kMaxAbortMessage];
};

struct SegmentHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::int32_t owner_rank;
  std::int32_t owner_pid;
  std::uint32_t slots;
  std::uint64_t ring_bytes;
  std::uint64_t total_bytes;
  alignas(64) std::atomic<std::uint32_t> doorbell;  // bumped by anyone with news for the owner
  alignas(64) std::atomic<std::uint32_t> sleepers;  // owner threads asleep on the doorbell
  alignas(64) AbortMailbox abort;
};

struct RingControl {
  alignas(64) std::atomic<std::uint64_t> head;  // bytes ever written (writer-owned)
  alignas(64) std::atomic<std::uint64_t> tail;  // bytes ever consumed (reader-owned)
};

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

struct SegmentLayout {
  std::size_t slots;
  std::size_t ring_bytes;

  std::size_t controls_offset() const { return round_up(sizeof(SegmentHeader), kPage); }
  std::size_t rings_offset() const { return controls_offset() + round_up(slots * sizeof(RingControl), kPage); }
  std::size_t control_offset(std::size_t slot) const { return controls_offset() + slot * sizeof(RingControl); }
  std::size_t ring_offset(std::size_t slot) const { return rings_offset() + slot * ring_bytes; }
  std::size_t total_bytes() const { return rings_offset() + slots * ring_bytes; }
};

}  // namespace braid::shm
