// Barrier and split scenarios.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "scenario.h"

namespace braid::testing {

namespace {

std::int64_t monotonic_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // one clock for all processes of the host
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Every rank's value, at every rank (a test-only allgather through point-to-point messages).
std::vector<std::int64_t> gather_all(Communicator& comm, std::int64_t value, int tag) {
  const int n = comm.size();
  std::vector<std::int64_t> all(static_cast<std::size_t>(n));
  std::vector<Work> work;
  for (int peer = 0; peer < n; ++peer) work.push_back(comm.irecv(&all[static_cast<std::size_t>(peer)], 1, DType::kI64, peer, tag));
  for (int peer = 0; peer < n; ++peer) work.push_back(comm.isend(&value, 1, DType::kI64, peer, tag));
  for (auto& w : work) w.wait();
  return all;
}

}  // namespace

// In each round one rank arrives late; nobody may leave the barrier before the last arrival.
int scenario_barrier(Communicator& comm, const Args&) {
  const int n = comm.size(), me = comm.rank();
  int errors = 0;
  for (int round = 0; round < std::min(n, 4) + 2; ++round) {
    if (round % n == me) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::int64_t entered = monotonic_ns();
    comm.barrier();
    std::int64_t left = monotonic_ns();
    auto entries = gather_all(comm, entered, 100 + round);
    std::int64_t last_entry = *std::max_element(entries.begin(), entries.end());
    if (left < last_entry) {
      RANK_SAY("FAIL barrier round %d: left %lld ns before the last rank entered", round,
               static_cast<long long>(last_entry - left));
      ++errors;
    }
  }
  for (int i = 0; i < 200; ++i) comm.barrier();  // many back-to-back barriers must not confuse matching
  if (errors == 0) RANK_SAY("PASS barrier rank %d", me);
  return errors == 0 ? 0 : 1;
}

// Split by parity with reversed keys, talk inside the halves, split again, and leave rank 0
// out of one split with kUndefinedColor.
int scenario_split(Communicator& comm, const Args&) {
  const int n = comm.size(), me = comm.rank();
  int errors = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      RANK_SAY("FAIL split: %s", what);
      ++errors;
    }
  };

  std::optional<Communicator> half = comm.split(me % 2, -me);
  expect(half.has_value(), "a defined color must yield a communicator");
  int expected_size = (n + 1 - me % 2) / 2;
  expect(half->size() == expected_size, "size of the parity group");
  // Keys are -rank, so the highest world rank of the group becomes rank 0.
  int members_above = 0;
  for (int r = me + 2; r < n; r += 2) ++members_above;
  expect(half->rank() == members_above, "rank order follows the keys");

  // A ring inside the half: everyone sends its world rank to the next member.
  int right = (half->rank() + 1) % half->size(), left = (half->rank() - 1 + half->size()) % half->size();
  std::int64_t mine = me, got = -1;
  Work r = half->irecv(&got, 1, DType::kI64, left, 9);
  half->send(&mine, 1, DType::kI64, right, 9);
  r.wait();
  expect(got == half->world_rank(left), "the left neighbour's world rank");
  expect(got % 2 == me % 2, "messages stay inside the group");
  half->barrier();

  // Same tag on the world communicator at the same time: communicators do not cross-talk.
  std::int64_t world_got = -1;
  int next = (me + 1) % n, prev = (me - 1 + n) % n;
  Work wr = comm.irecv(&world_got, 1, DType::kI64, prev, 9);
  comm.send(&mine, 1, DType::kI64, next, 9);
  wr.wait();
  expect(world_got == prev, "world ring after split");

  std::optional<Communicator> without_zero = comm.split(me == 0 ? Communicator::kUndefinedColor : 0, me);
  expect(without_zero.has_value() == (me != 0), "kUndefinedColor leaves rank 0 out");
  if (without_zero) {
    expect(without_zero->size() == n - 1 && without_zero->rank() == me - 1, "the rest keeps its order");
    std::optional<Communicator> nested = without_zero->split(0, 0);
    expect(nested && nested->size() == n - 1, "nested split");
    if (nested) nested->barrier();
  }
  comm.barrier();
  if (errors == 0) RANK_SAY("PASS split rank %d", me);
  return errors == 0 ? 0 : 1;
}

}  // namespace braid::testing
