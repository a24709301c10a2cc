#include "soak_call.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "braid/base/element_value.h"
#include "braid/collectives/algorithm_registry.h"
#include "braid/collectives/async_collectives.h"
#include "braid/collectives/collectives.h"
#include "collective_reference.h"

namespace braid::soak {

namespace {

using testing::fill_reduce_expected;
using testing::fill_reduce_inputs;
using testing::kTestDTypes;
using testing::kTestOps;

constexpr std::byte kPoison{0xA5};  // what receive buffers hold before a call: never a result
constexpr int kRingTag = 7;

// The relative frequency of each operation: allreduce is what training issues most.
struct Weighted {
  OpKind op;
  int weight;
};
constexpr std::array kOps{Weighted{OpKind::kAllreduce, 6},   Weighted{OpKind::kReduceScatter, 2},
                          Weighted{OpKind::kAllgather, 2},   Weighted{OpKind::kBroadcast, 2},
                          Weighted{OpKind::kReduce, 1},      Weighted{OpKind::kGather, 1},
                          Weighted{OpKind::kScatter, 1},     Weighted{OpKind::kAlltoall, 2},
                          Weighted{OpKind::kAlltoallv, 2},   Weighted{OpKind::kBarrier, 1},
                          Weighted{OpKind::kSendRecv, 2}};

template <typename T, std::size_t N>
const T& pick(SplitMix64& rng, const std::array<T, N>& items) {
  return items[rng.next() % N];
}

OpKind pick_op(SplitMix64& rng) {
  int total = 0;
  for (const Weighted& w : kOps) total += w.weight;
  int ticket = static_cast<int>(rng.next() % static_cast<std::uint64_t>(total));
  for (const Weighted& w : kOps) {
    if (ticket < w.weight) return w.op;
    ticket -= w.weight;
  }
  return OpKind::kAllreduce;
}

bool per_block(OpKind op) {
  return op == OpKind::kReduceScatter || op == OpKind::kAllgather || op == OpKind::kGather ||
         op == OpKind::kScatter || op == OpKind::kAlltoall;
}

// Log-uniform in [1, max_bytes] (sizes from a few bytes to megabytes are equally likely per
// decade), 1 call in 50 with no elements at all.
std::int64_t pick_elements(SplitMix64& rng, std::size_t max_bytes, std::size_t elem) {
  if (rng.next() % 50 == 0) return 0;
  const double bytes = std::exp(rng.next_unit() * std::log(static_cast<double>(max_bytes)));
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(bytes / static_cast<double>(elem)));
}

// One of the operation's algorithms that accepts this communicator, or the tuner (empty).
// supports() reads only the communicator's size and topology, so every rank answers alike.
std::string pick_algorithm(SplitMix64& rng, Communicator& comm, OpKind op) {
  const auto entries = algorithms_for(op);
  const std::size_t k = rng.next() % (entries.size() + 1);
  if (k == entries.size()) return {};
  const AlgorithmEntry& entry = *entries[k];
  const CollectiveArgs probe{.comm = comm, .op = op, .seq = -1, .send = nullptr, .recv = nullptr, .count = 0,
                             .dtype = DType::kF32};
  if (entry.supports != nullptr && !entry.supports(probe)) return {};
  return std::string(entry.name);
}

// Uneven counts with zeros, as MoE dispatch sends: each block 0 with probability 1/4, else
// up to twice its share of the per-rank budget.
std::vector<std::int64_t> pick_alltoallv_counts(SplitMix64& rng, int n, std::int64_t per_rank) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(n * n));
  const std::int64_t share = std::max<std::int64_t>(1, per_rank / n);
  for (std::int64_t& c : counts) c = rng.next() % 4 == 0 ? 0 : static_cast<std::int64_t>(rng.next() % (2 * share + 1));
  return counts;
}

// The element a data-moving call carries from src to dst at index i: in [1, 50], exact in
// every dtype, different per pair, index and salt so misrouted or stale bytes are caught.
double moved_value(int src, int dst, std::int64_t i, std::int64_t salt) {
  return static_cast<double>((src * 13 + dst * 7 + i + salt) % 50 + 1);
}

void fill_moved(std::vector<std::byte>& out, std::size_t at, std::int64_t count, DType dtype, int src, int dst,
                std::int64_t salt) {
  for (std::int64_t i = 0; i < count; ++i) {
    store_element(out.data() + at * dtype_size(dtype), i, dtype, moved_value(src, dst, i, salt));
  }
}

std::vector<std::int64_t> displacements(const std::vector<std::int64_t>& counts) {
  std::vector<std::int64_t> displs(counts.size());
  for (std::size_t p = 1; p < counts.size(); ++p) displs[p] = displs[p - 1] + counts[p - 1];
  return displs;
}

std::int64_t sum(const std::vector<std::int64_t>& v) {
  std::int64_t total = 0;
  for (std::int64_t x : v) total += x;
  return total;
}

}  // namespace

std::string SoakCall::describe() const {
  std::string what = fmt::format("{} {} x{} {}", op_kind_name(op), dtype_name(dtype), count,
                                 algorithm.empty() ? "(tuner)" : algorithm);
  if (is_reducing(op)) what += fmt::format(" op={}", reduce_op_name(reduce_op));
  if (is_rooted(op)) what += fmt::format(" root={}", root);
  if (async) what += " async";
  if (in_place) what += " in-place";
  return what;
}

SoakCall draw_call(SplitMix64& rng, Communicator& comm, std::size_t max_bytes, std::int64_t salt) {
  const int n = comm.size();
  SoakCall c;
  c.salt = salt;
  c.op = pick_op(rng);
  c.dtype = pick(rng, kTestDTypes);
  c.reduce_op = pick(rng, kTestOps);
  c.root = static_cast<int>(rng.next() % static_cast<std::uint64_t>(n));
  const std::int64_t elements = pick_elements(rng, max_bytes, dtype_size(c.dtype));
  c.count = per_block(c.op) ? elements / n : elements;
  if (c.op == OpKind::kAlltoallv) c.alltoallv_counts = pick_alltoallv_counts(rng, n, elements);
  if (c.op != OpKind::kBarrier && c.op != OpKind::kSendRecv) c.algorithm = pick_algorithm(rng, comm, c.op);
  c.async = c.op != OpKind::kSendRecv && rng.next() % 10 < 3;
  c.in_place = c.op == OpKind::kAllreduce && rng.next() % 5 == 0;
  return c;
}

SoakCallRun::SoakCallRun(Communicator& comm, SoakCall call) : comm_(comm), call_(std::move(call)) {
  fill_inputs();
  fill_expected();
}

void SoakCallRun::fill_inputs() {
  const int n = comm_.size(), r = comm_.rank();
  const SoakCall& c = call_;
  const std::size_t elem = dtype_size(c.dtype);
  auto poisoned = [&](std::int64_t elements) { return std::vector<std::byte>(elements * elem, kPoison); };
  switch (c.op) {
    case OpKind::kAllreduce:
    case OpKind::kReduce: fill_reduce_inputs(send_, c.reduce_op, r, c.count, c.dtype, c.salt); break;
    case OpKind::kReduceScatter: fill_reduce_inputs(send_, c.reduce_op, r, c.count * n, c.dtype, c.salt); break;
    case OpKind::kAllgather:
    case OpKind::kGather:
    case OpKind::kSendRecv:
      send_.resize(c.count * elem);
      fill_moved(send_, 0, c.count, c.dtype, r, c.op == OpKind::kSendRecv ? (r + 1) % n : 0, c.salt);
      break;
    case OpKind::kScatter:
      if (r != c.root) break;
      send_.resize(c.count * n * elem);
      for (int b = 0; b < n; ++b) fill_moved(send_, b * c.count, c.count, c.dtype, r, b, c.salt);
      break;
    case OpKind::kAlltoall:
      send_.resize(c.count * n * elem);
      for (int p = 0; p < n; ++p) fill_moved(send_, p * c.count, c.count, c.dtype, r, p, c.salt);
      break;
    case OpKind::kAlltoallv:
      for (int p = 0; p < n; ++p) {
        send_counts_.push_back(c.alltoallv_counts[r * n + p]);
        recv_counts_.push_back(c.alltoallv_counts[p * n + r]);
      }
      send_displs_ = displacements(send_counts_);
      recv_displs_ = displacements(recv_counts_);
      send_.resize(sum(send_counts_) * elem);
      for (int p = 0; p < n; ++p) fill_moved(send_, send_displs_[p], send_counts_[p], c.dtype, r, p, c.salt);
      break;
    default: break;  // broadcast fills its one buffer below; a barrier moves nothing
  }
  const bool root_only = c.op == OpKind::kReduce || c.op == OpKind::kGather;
  expects_result_ = c.op != OpKind::kBarrier && (!root_only || r == c.root);
  std::int64_t out = 0;
  if (expects_result_) {
    if (c.op == OpKind::kAllgather || c.op == OpKind::kGather || c.op == OpKind::kAlltoall) out = c.count * n;
    else if (c.op == OpKind::kAlltoallv) out = sum(recv_counts_);
    else out = c.count;
  }
  recv_ = poisoned(out);
  if (c.op == OpKind::kBroadcast && r == c.root) fill_moved(recv_, 0, c.count, c.dtype, c.root, 0, c.salt);
  if (c.in_place) recv_ = send_;
}

void SoakCallRun::fill_expected() {
  const int n = comm_.size(), r = comm_.rank();
  const SoakCall& c = call_;
  if (!expects_result_) return;
  expected_.assign(recv_.size(), std::byte{0});
  switch (c.op) {
    case OpKind::kAllreduce:
    case OpKind::kReduce: fill_reduce_expected(expected_, c.reduce_op, n, c.salt, c.count, c.dtype); break;
    case OpKind::kReduceScatter:
      fill_reduce_expected(expected_, c.reduce_op, n, c.salt + r * c.count, c.count, c.dtype);
      break;
    case OpKind::kAllgather:
    case OpKind::kGather:
      for (int b = 0; b < n; ++b) fill_moved(expected_, b * c.count, c.count, c.dtype, b, 0, c.salt);
      break;
    case OpKind::kBroadcast: fill_moved(expected_, 0, c.count, c.dtype, c.root, 0, c.salt); break;
    case OpKind::kScatter: fill_moved(expected_, 0, c.count, c.dtype, c.root, r, c.salt); break;
    case OpKind::kSendRecv: fill_moved(expected_, 0, c.count, c.dtype, (r + n - 1) % n, r, c.salt); break;
    case OpKind::kAlltoall:
      for (int p = 0; p < n; ++p) fill_moved(expected_, p * c.count, c.count, c.dtype, p, r, c.salt);
      break;
    case OpKind::kAlltoallv:
      for (int p = 0; p < n; ++p) fill_moved(expected_, recv_displs_[p], recv_counts_[p], c.dtype, p, r, c.salt);
      break;
    default: break;
  }
}

Work SoakCallRun::run_p2p() {
  const int n = comm_.size(), r = comm_.rank();
  Work received = comm_.irecv(recv_.data(), call_.count, call_.dtype, (r + n - 1) % n, kRingTag);
  comm_.isend(send_.data(), call_.count, call_.dtype, (r + 1) % n, kRingTag).wait();
  return received;
}

Work SoakCallRun::run() {
  const SoakCall& c = call_;
  const CollectiveOptions o{.algorithm = c.algorithm};
  const void* in = c.in_place ? recv_.data() : send_.data();
  void* out = recv_.empty() ? nullptr : recv_.data();
  const bool a = c.async;
  switch (c.op) {
    case OpKind::kAllreduce:
      if (a) return iallreduce(comm_, in, out, c.count, c.dtype, c.reduce_op, o);
      allreduce(comm_, in, out, c.count, c.dtype, c.reduce_op, o);
      break;
    case OpKind::kReduceScatter:
      if (a) return ireduce_scatter(comm_, in, out, c.count, c.dtype, c.reduce_op, o);
      reduce_scatter(comm_, in, out, c.count, c.dtype, c.reduce_op, o);
      break;
    case OpKind::kAllgather:
      if (a) return iallgather(comm_, in, out, c.count, c.dtype, o);
      allgather(comm_, in, out, c.count, c.dtype, o);
      break;
    case OpKind::kBroadcast:
      if (a) return ibroadcast(comm_, out, c.count, c.dtype, c.root, o);
      broadcast(comm_, out, c.count, c.dtype, c.root, o);
      break;
    case OpKind::kReduce:
      if (a) return ireduce(comm_, in, out, c.count, c.dtype, c.reduce_op, c.root, o);
      reduce(comm_, in, out, c.count, c.dtype, c.reduce_op, c.root, o);
      break;
    case OpKind::kGather:
      if (a) return igather(comm_, in, out, c.count, c.dtype, c.root, o);
      gather(comm_, in, out, c.count, c.dtype, c.root, o);
      break;
    case OpKind::kScatter:
      if (a) return iscatter(comm_, in, out, c.count, c.dtype, c.root, o);
      scatter(comm_, in, out, c.count, c.dtype, c.root, o);
      break;
    case OpKind::kAlltoall:
      if (a) return ialltoall(comm_, in, out, c.count, c.dtype, o);
      alltoall(comm_, in, out, c.count, c.dtype, o);
      break;
    case OpKind::kAlltoallv:
      if (a) {
        return ialltoallv(comm_, in, send_counts_.data(), send_displs_.data(), out, recv_counts_.data(),
                          recv_displs_.data(), c.dtype, o);
      }
      alltoallv(comm_, in, send_counts_.data(), send_displs_.data(), out, recv_counts_.data(), recv_displs_.data(),
                c.dtype, o);
      break;
    case OpKind::kBarrier:
      if (a) return ibarrier(comm_);
      comm_.barrier();
      break;
    case OpKind::kSendRecv: return run_p2p();
    default: break;
  }
  return Work{};
}

std::int64_t SoakCallRun::wrong_elements() const {
  if (!expects_result_) return 0;
  const std::size_t elem = dtype_size(call_.dtype);
  std::int64_t wrong = 0;
  for (std::size_t at = 0; at < recv_.size(); at += elem) {
    if (std::memcmp(recv_.data() + at, expected_.data() + at, elem) != 0) ++wrong;
  }
  return wrong;
}

}  // namespace braid::soak
