// The `async` scenario: the non-blocking collectives (async_collectives.h) through real ranks.
//  1. A batch of every async collective (async_batch.h) issued back to back, computation in
//     between, test() polled until true, the Works waited for in reverse order; every result
//     equal bit for bit to the reference and to the same batch run blocking.
//  2. A blocking collective right after async ones runs after them.
//  3. Point-to-point traffic while async collectives are pending.
//  4. Bad arguments raise InvalidArgument at the call and queue nothing.
//  5. Moving a communicator (construction and assignment) with async work pending.
#include <chrono>
#include <cstring>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "async_batch.h"
#include "braid/base/error.h"
#include "braid/collectives/async_collectives.h"
#include "collective_reference.h"
#include "scenario.h"

namespace braid::testing {

namespace {

using Bytes = std::vector<std::byte>;

// Counts failed checks and prints the first few.
class Checks {
 public:
  explicit Checks(int rank) : rank_(rank) {}
  void expect(bool ok, const std::string& what) {
    if (ok) return;
    if (++failures_ <= 20) RANK_SAY("FAIL async rank %d: %s", rank_, what.c_str());
  }
  int failures() const { return failures_; }

 private:
  int rank_;
  int failures_ = 0;
};

// Local work to overlap with the communication.
double compute(int iterations) {
  double x = 1.0;
  for (int i = 0; i < iterations; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

bool poll_until_done(Work& work) {
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  while (!work.test()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

// An f32 sum allreduce with its buffers and expected result.
struct Allreduce {
  Bytes data, want;
  Work work;
  Allreduce(Communicator& comm, std::int64_t count, bool async) {
    fill_reduce_inputs(data, ReduceOp::kSum, comm.rank(), count, DType::kF32);
    fill_reduce_expected(want, ReduceOp::kSum, comm.size(), 0, count, DType::kF32);
    if (async) {
      work = iallreduce(comm, data.data(), data.data(), count, DType::kF32, ReduceOp::kSum);
    } else {
      allreduce(comm, data.data(), data.data(), count, DType::kF32, ReduceOp::kSum);
    }
  }
  bool correct() const { return data == want; }
};

void check_batches(Communicator& comm, Checks& checks) {
  const std::int64_t n = comm.size();
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kI64, DType::kU8}) {
    for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, n + 1, std::int64_t{1000}, std::int64_t{65537}}) {
      const std::string what = std::string(dtype_name(dtype)) + " count=" + std::to_string(count);
      Batch batch(comm, dtype, count);
      std::vector<Slot> async = batch.issue(true);
      volatile double overlapped = compute(20000);
      (void)overlapped;
      checks.expect(poll_until_done(async.back().work), what + ": test() never turned true");
      for (auto it = async.rbegin(); it != async.rend(); ++it) it->work.wait();
      std::vector<Slot> blocking = batch.issue(false);
      for (std::size_t i = 0; i < async.size(); ++i) {
        const Slot& a = async[i];
        checks.expect(a.work.completed(), a.name + " " + what + ": not completed after wait()");
        if (a.want.empty()) continue;
        checks.expect(a.recv == a.want, a.name + " " + what + ": differs from the reference");
        checks.expect(a.recv == blocking[i].recv, a.name + " " + what + ": differs from the blocking result");
      }
    }
  }
}

// The blocking call must find the async ones finished when it returns: it ran after them.
void check_blocking_after_async(Communicator& comm, Checks& checks) {
  Allreduce first(comm, 1 << 18, true), second(comm, 1000, true);
  Allreduce blocking(comm, 4096, false);
  checks.expect(blocking.correct(), "blocking allreduce after async ones: wrong result");
  checks.expect(first.work.completed() && second.work.completed(),
                "blocking allreduce returned before the async ones issued earlier had finished");
  Allreduce before_barrier(comm, 1 << 16, true);
  comm.barrier();
  checks.expect(before_barrier.work.completed(), "barrier returned before the async allreduce issued earlier");
  second.work.wait();
  first.work.wait();
  checks.expect(first.correct() && second.correct() && before_barrier.correct(), "async allreduce: wrong result");
}

// Point-to-point runs beside the pending collectives (its own channel and sequence numbers).
void check_p2p_while_pending(Communicator& comm, Checks& checks) {
  const int n = comm.size(), r = comm.rank();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  constexpr std::size_t kBytes = (1 << 20) + 3;
  Allreduce pending(comm, 1 << 18, true);
  std::vector<std::uint8_t> out(kBytes), in(kBytes);
  fill_pattern(out.data(), kBytes, r, next, 77);
  Work sent = comm.isend(out.data(), kBytes, DType::kU8, next, 9);
  comm.recv(in.data(), kBytes, DType::kU8, prev, 9);
  sent.wait();
  checks.expect(first_pattern_error(in.data(), kBytes, prev, r, 77) < 0, "p2p message while async pending: wrong bytes");
  pending.work.wait();
  checks.expect(pending.correct(), "async allreduce beside p2p traffic: wrong result");
}

template <class Call>
void expect_invalid_at_call(Checks& checks, const char* what, Call call) {
  try {
    call();
    checks.expect(false, std::string(what) + ": accepted at the call");
  } catch (const InvalidArgument&) {
  }
}

// Rank 0 alone passes bad arguments: had anything been queued, its sequence numbers would run
// ahead of its peers' and the allreduce after them would raise Mismatch.
void check_bad_arguments(Communicator& comm, Checks& checks) {
  const int n = comm.size();
  if (comm.rank() == 0) {
    std::vector<float> buffer(4 * static_cast<std::size_t>(n));
    float* b = buffer.data();
    std::vector<std::int64_t> counts(static_cast<std::size_t>(n), -1), displs(static_cast<std::size_t>(n), 0);
    expect_invalid_at_call(checks, "negative count", [&] { iallreduce(comm, b, b, -1, DType::kF32, ReduceOp::kSum); });
    expect_invalid_at_call(checks, "null buffer", [&] { iallgather(comm, nullptr, b, 4, DType::kF32); });
    expect_invalid_at_call(checks, "bad root", [&] { ibroadcast(comm, b, 4, DType::kF32, n); });
    expect_invalid_at_call(checks, "bad dtype", [&] { ialltoall(comm, b, b, 1, static_cast<DType>(99)); });
    expect_invalid_at_call(checks, "bad op",
                           [&] { ireduce(comm, b, b, 4, DType::kF32, static_cast<ReduceOp>(99), 0); });
    expect_invalid_at_call(checks, "bad algorithm",
                           [&] { iallreduce(comm, b, b, 4, DType::kF32, ReduceOp::kSum, {.algorithm = "nope"}); });
    expect_invalid_at_call(checks, "negative alltoallv count", [&] {
      ialltoallv(comm, b, counts.data(), displs.data(), b + n, counts.data(), displs.data(), DType::kF32);
    });
    std::vector<std::int64_t> zeros(static_cast<std::size_t>(n), 0);
    expect_invalid_at_call(checks, "bad alltoallv algorithm", [&] {
      ialltoallv(comm, b, zeros.data(), zeros.data(), b + n, zeros.data(), zeros.data(), DType::kF32,
                 {.algorithm = "nope"});
    });
  }
  Allreduce after(comm, 1000, true);
  after.work.wait();
  checks.expect(after.correct(), "async allreduce after refused calls: wrong result");
}

// Two communicators over the same ranks (the world and a split of it, as a data-parallel and a
// tensor-parallel group) each have their own background queue: collectives issued alternately on
// both, without waiting in between, all complete with the right results, each queue in its own
// submission order (a queue that ran another's task would mismatch sequence numbers).
void check_two_communicators(Communicator& comm, Checks& checks) {
  std::optional<Communicator> group = comm.split(comm.rank() % 2, comm.rank());
  std::vector<std::unique_ptr<Allreduce>> ops;
  for (int i = 0; i < 8; ++i) {
    ops.push_back(std::make_unique<Allreduce>(comm, 1000 + 37 * i, true));
    ops.push_back(std::make_unique<Allreduce>(*group, 4096 + 11 * i, true));
  }
  volatile double overlapped = compute(20000);
  (void)overlapped;
  for (auto& op : ops) op->work.wait();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    checks.expect(ops[i]->correct(), std::string("two communicators: wrong result on the ") +
                                         (i % 2 == 0 ? "world" : "split") + " communicator");
  }
}

// Moving waits for the pending work (its tasks hold the old address); the moved-to
// communicator takes the queue along and keeps working.
void check_moves(Communicator& comm, Checks& checks) {
  Allreduce a(comm, 1 << 16, true), b(comm, 1000, true);
  Communicator moved(std::move(comm));
  checks.expect(a.work.completed() && b.work.completed(), "move construction did not finish the pending work");
  std::optional<Communicator> other = moved.split(0, moved.rank());
  Allreduce on_other(*other, 1000, true), on_moved(moved, 1 << 16, true);
  *other = std::move(moved);  // drops the split communicator's queue, takes the world's
  checks.expect(on_other.work.completed() && on_moved.work.completed(),
                "move assignment did not finish the pending work");
  Allreduce after(*other, 1000, true);
  after.work.wait();
  for (const Allreduce* x : {&a, &b, &on_other, &on_moved, &after}) {
    checks.expect(x->correct(), "async allreduce around a move: wrong result");
  }
  Work barrier = ibarrier(*other);
  barrier.wait();
}

}  // namespace

int scenario_async(Communicator& comm, const Args&) {
  const int rank = comm.rank();
  Checks checks(rank);
  check_batches(comm, checks);
  check_blocking_after_async(comm, checks);
  check_p2p_while_pending(comm, checks);
  check_bad_arguments(comm, checks);
  check_two_communicators(comm, checks);
  check_moves(comm, checks);  // last: it moves `comm` away
  if (checks.failures() > 0) return 1;
  RANK_SAY("PASS async rank %d", rank);
  return 0;
}

}  // namespace braid::testing
