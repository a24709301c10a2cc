// Point-to-point scenarios: every pair exchanging messages of awkward sizes, and many
// interleaved tags received in a different order than sent.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <sstream>
#include <utility>

#include "braid/base/error.h"
#include "scenario.h"

namespace braid::testing {

namespace {

std::vector<std::size_t> parse_sizes(const Args& args,
                                     std::vector<std::size_t> sizes = {0, 1, 4095, 4096, (1u << 20) + 7, 64u << 20}) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--sizes") continue;
    sizes.clear();
    std::stringstream list(args[i + 1]);
    for (std::string item; std::getline(list, item, ',');) sizes.push_back(std::strtoull(item.c_str(), nullptr, 10));
  }
  return sizes;
}

}  // namespace

// Every rank sends a distinct message to every rank (itself included) and receives from
// every rank, all at once (non-blocking), for each size; every byte is verified.
int scenario_pairs(Communicator& comm, const Args& args) {
  const int n = comm.size(), me = comm.rank();
  int errors = 0;
  for (std::size_t bytes : parse_sizes(args)) {
    std::vector<std::unique_ptr<std::uint8_t[]>> out(static_cast<std::size_t>(n)), in(static_cast<std::size_t>(n));
    std::vector<Work> work;
    for (int peer = 0; peer < n; ++peer) {
      auto p = static_cast<std::size_t>(peer);
      out[p] = std::make_unique<std::uint8_t[]>(bytes + 1);
      in[p] = std::make_unique<std::uint8_t[]>(bytes + 1);
      fill_pattern(out[p].get(), bytes, me, peer, bytes);
      work.push_back(comm.irecv(in[p].get(), static_cast<std::int64_t>(bytes), DType::kU8, peer, 5));
    }
    for (int peer = 0; peer < n; ++peer) {
      work.push_back(comm.isend(out[static_cast<std::size_t>(peer)].get(), static_cast<std::int64_t>(bytes), DType::kU8, peer, 5));
    }
    for (auto& w : work) w.wait();
    for (int peer = 0; peer < n; ++peer) {
      long long bad = first_pattern_error(in[static_cast<std::size_t>(peer)].get(), bytes, peer, me, bytes);
      if (bad >= 0) {
        RANK_SAY("FAIL pairs: %zu-byte message from rank %d differs at byte %lld", bytes, peer, bad);
        ++errors;
      }
    }
    comm.barrier();
  }
  if (errors == 0) RANK_SAY("PASS pairs rank %d of %d", me, n);
  return errors == 0 ? 0 : 1;
}

// Rank pairs (r, r^1) exchange 64 messages on 64 tags with varying sizes; the receiver posts
// its receives in reverse tag order, so matching must look past the oldest message.
int scenario_tags(Communicator& comm, const Args&) {
  const int me = comm.rank();
  const int partner = (me ^ 1) < comm.size() ? (me ^ 1) : me;
  constexpr int kTags = 64;
  auto size_of = [](int tag) { return static_cast<std::size_t>(tag * 977 % 70000); };
  std::vector<std::vector<std::uint8_t>> out(kTags), in(kTags);
  std::vector<Work> work;
  for (int tag = kTags - 1; tag >= 0; --tag) {
    in[static_cast<std::size_t>(tag)].resize(size_of(tag) + 1);
    work.push_back(comm.irecv(in[static_cast<std::size_t>(tag)].data(), static_cast<std::int64_t>(size_of(tag)), DType::kU8, partner, tag));
  }
  for (int tag = 0; tag < kTags; ++tag) {
    auto& buffer = out[static_cast<std::size_t>(tag)];
    buffer.resize(size_of(tag) + 1);
    fill_pattern(buffer.data(), size_of(tag), me, partner, static_cast<std::uint64_t>(tag));
    comm.send(buffer.data(), static_cast<std::int64_t>(size_of(tag)), DType::kU8, partner, tag);
  }
  for (auto& w : work) w.wait();
  int errors = 0;
  for (int tag = 0; tag < kTags; ++tag) {
    if (first_pattern_error(in[static_cast<std::size_t>(tag)].data(), size_of(tag), partner, me, static_cast<std::uint64_t>(tag)) >= 0) {
      RANK_SAY("FAIL tags: message with tag %d from rank %d is wrong", tag, partner);
      ++errors;
    }
  }
  comm.barrier();
  if (errors == 0) RANK_SAY("PASS tags rank %d", me);
  return errors == 0 ? 0 : 1;
}

// Any-source receives. Each rank in turn is the root: it posts one any-source receive per rank
// (itself included) and every rank sends it one 1 MiB + 7 message, so each sender must be
// reported exactly once with its own bytes. Then the root posts an any-source receive and
// after it one for its partner, on a tag only the partner sends two messages on: the
// any-source receive keeps its place and takes the first (MPI's order).
int scenario_any_source(Communicator& comm, const Args&) {
  const int n = comm.size(), me = comm.rank();
  constexpr std::size_t kBytes = (1u << 20) + 7;
  constexpr std::size_t kSmall = 16;
  int errors = 0;
  for (int root = 0; root < n; ++root) {
    std::vector<std::vector<std::uint8_t>> in(static_cast<std::size_t>(n), std::vector<std::uint8_t>(kBytes + 1));
    std::vector<AnySourceRecv> recvs;
    if (me == root) {
      for (auto& buffer : in) recvs.push_back(comm.irecv_any_source(buffer.data(), kBytes, DType::kU8, 7));
    }
    std::vector<std::uint8_t> out(kBytes + 1);
    fill_pattern(out.data(), kBytes, me, root, 7);
    Work sent = comm.isend(out.data(), kBytes, DType::kU8, root, 7);
    std::vector<int> times_seen(static_cast<std::size_t>(n), 0);
    for (std::size_t i = 0; i < recvs.size(); ++i) {
      recvs[i].work().wait();
      const int source = recvs[i].source();
      if (source < 0 || source >= n) {
        RANK_SAY("FAIL any-source: receive %zu reports source %d", i, source);
        ++errors;
        continue;
      }
      ++times_seen[static_cast<std::size_t>(source)];
      if (first_pattern_error(in[i].data(), kBytes, source, root, 7) >= 0) {
        RANK_SAY("FAIL any-source: receive %zu holds other bytes than rank %d sent", i, source);
        ++errors;
      }
    }
    sent.wait();
    for (int r = 0; r < n && me == root; ++r) {
      if (times_seen[static_cast<std::size_t>(r)] != 1) {
        RANK_SAY("FAIL any-source: rank %d reported %d times", r, times_seen[static_cast<std::size_t>(r)]);
        ++errors;
      }
    }
    const int partner = (root + 1) % n;
    if (me == root) {
      std::vector<std::uint8_t> first(kSmall), second(kSmall);
      AnySourceRecv any = comm.irecv_any_source(first.data(), kSmall, DType::kU8, 8);
      Work specific = comm.irecv(second.data(), kSmall, DType::kU8, partner, 8);
      if (me == partner) {  // a world of one: send to itself
        std::vector<std::uint8_t> one(kSmall), two(kSmall);
        fill_pattern(one.data(), kSmall, me, root, 1);
        fill_pattern(two.data(), kSmall, me, root, 2);
        comm.send(one.data(), kSmall, DType::kU8, root, 8);
        comm.send(two.data(), kSmall, DType::kU8, root, 8);
      }
      any.work().wait();
      specific.wait();
      if (any.source() != partner || first_pattern_error(first.data(), kSmall, partner, root, 1) >= 0 ||
          first_pattern_error(second.data(), kSmall, partner, root, 2) >= 0) {
        RANK_SAY("FAIL any-source: order with a receive for rank %d broken (source %d)", partner, any.source());
        ++errors;
      }
    } else if (me == partner) {
      std::vector<std::uint8_t> one(kSmall), two(kSmall);
      fill_pattern(one.data(), kSmall, me, root, 1);
      fill_pattern(two.data(), kSmall, me, root, 2);
      comm.send(one.data(), kSmall, DType::kU8, root, 8);
      comm.send(two.data(), kSmall, DType::kU8, root, 8);
    }
    comm.barrier();
  }
  if (errors == 0) RANK_SAY("PASS any-source rank %d of %d", me, n);
  return errors == 0 ? 0 : 1;
}

namespace {

// A message held as pieces for isendv / irecvv: sizes cycling from 1 byte to 70 KB, laid out in
// reverse order with a gap after each, so a byte mapped to the wrong piece or offset shows.
struct PieceLayout {
  std::vector<std::byte> memory;
  std::vector<std::span<std::byte>> pieces;

  explicit PieceLayout(std::size_t bytes) {
    static constexpr std::size_t kCycle[] = {1, 4096, 3, 70001, 13, 512};
    std::vector<std::size_t> sizes;
    for (std::size_t left = bytes, k = 0; left > 0; left -= sizes.back(), ++k) {
      sizes.push_back(std::min(left, kCycle[k % std::size(kCycle)]));
    }
    memory.resize(bytes + 8 * sizes.size());
    std::size_t at = memory.size();
    for (std::size_t size : sizes) {
      at -= size + 8;
      pieces.emplace_back(memory.data() + at, size);
    }
  }
  void scatter(const std::uint8_t* from) {
    for (std::span<std::byte> p : pieces) std::memcpy(p.data(), std::exchange(from, from + p.size()), p.size());
  }
  void gather(std::uint8_t* to) const {
    for (std::span<std::byte> p : pieces) std::memcpy(std::exchange(to, to + p.size()), p.data(), p.size());
  }
  std::vector<std::span<const std::byte>> const_pieces() const { return {pieces.begin(), pieces.end()}; }
};

}  // namespace

// Gather sends and scatter receives between every ordered pair (self included): for each size,
// the four pairings of a send from pieces or contiguous memory with a receive into pieces or
// contiguous memory, on tags 0..3, all in flight at once; every byte verified. Then a null
// piece is refused with InvalidArgument, and the communicator still works.
int scenario_pieces(Communicator& comm, const Args& args) {
  const int n = comm.size(), me = comm.rank();
  int errors = 0;
  // 3 MiB + 5: striped over every stream BRAID_TCP_STREAMS may open (stripe_plan.h).
  for (std::size_t bytes : parse_sizes(args, {0, 1, 4097, (1u << 20) + 7, (3u << 20) + 5})) {
    struct Message {
      std::vector<std::uint8_t> plain;
      std::unique_ptr<PieceLayout> pieces;
    };
    const std::size_t count = static_cast<std::size_t>(n) * 4;
    std::vector<Message> out(count), in(count);
    std::vector<Work> work;
    for (int peer = 0; peer < n; ++peer) {
      for (int combo = 0; combo < 4; ++combo) {
        const auto i = static_cast<std::size_t>(peer * 4 + combo);
        Message& m = in[i];
        m.plain.assign(bytes, 0);
        if (combo & 1) {
          m.pieces = std::make_unique<PieceLayout>(bytes);
          work.push_back(comm.irecvv(m.pieces->pieces, peer, combo));
        } else {
          work.push_back(comm.irecv(m.plain.data(), static_cast<std::int64_t>(bytes), DType::kU8, peer, combo));
        }
      }
    }
    for (int peer = 0; peer < n; ++peer) {
      for (int combo = 0; combo < 4; ++combo) {
        Message& m = out[static_cast<std::size_t>(peer * 4 + combo)];
        m.plain.resize(bytes + 1);
        fill_pattern(m.plain.data(), bytes, me, peer, bytes * 4 + static_cast<std::size_t>(combo));
        if (combo & 2) {
          m.pieces = std::make_unique<PieceLayout>(bytes);
          m.pieces->scatter(m.plain.data());
          work.push_back(comm.isendv(m.pieces->const_pieces(), peer, combo));
        } else {
          work.push_back(comm.isend(m.plain.data(), static_cast<std::int64_t>(bytes), DType::kU8, peer, combo));
        }
      }
    }
    for (auto& w : work) w.wait();
    for (int peer = 0; peer < n; ++peer) {
      for (int combo = 0; combo < 4; ++combo) {
        Message& m = in[static_cast<std::size_t>(peer * 4 + combo)];
        if (m.pieces) m.pieces->gather(m.plain.data());
        long long bad = first_pattern_error(m.plain.data(), bytes, peer, me, bytes * 4 + static_cast<std::size_t>(combo));
        if (bad >= 0) {
          RANK_SAY("FAIL pieces: %zu-byte message from rank %d (%s send, %s receive) differs at byte %lld", bytes, peer,
                   combo & 2 ? "gather" : "contiguous", combo & 1 ? "scatter" : "contiguous", bad);
          ++errors;
        }
      }
    }
    comm.barrier();
  }
  std::byte one{};
  const std::span<std::byte> bad_pieces[] = {{&one, 1}, {static_cast<std::byte*>(nullptr), 4}};
  try {
    comm.irecvv(bad_pieces, (me + 1) % n, 9);
    RANK_SAY("FAIL pieces: a null piece was accepted");
    ++errors;
  } catch (const InvalidArgument& e) {
    RANK_SAY("refused: %s", e.what());
  }
  comm.barrier();
  if (errors == 0) RANK_SAY("PASS pieces rank %d of %d", me, n);
  return errors == 0 ? 0 : 1;
}

}  // namespace braid::testing
