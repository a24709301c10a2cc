// Point-to-point scenarios: every pair exchanging messages of awkward sizes, and many
// interleaved tags received in a different order than sent.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "scenario.h"

namespace braid::testing {

namespace {

std::vector<std::size_t> parse_sizes(const Args& args) {
  std::vector<std::size_t> sizes{0, 1, 4095, 4096, (1u << 20) + 7, 64u << 20};
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

}  // namespace braid::testing
