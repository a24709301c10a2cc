#include "async_batch.h"

#include <type_traits>

#include "braid/base/element_value.h"
#include "braid/collectives/async_collectives.h"
#include "collective_reference.h"

namespace braid::testing {

namespace {

using Bytes = std::vector<std::byte>;
constexpr std::byte kGarbage{0xEE};

// The element j of alltoall(v)'s block from rank src to rank dst.
double pair_value(int src, int dst, std::int64_t j) { return static_cast<double>((src * 7 + dst * 3 + j) % 50 + 1); }

// alltoallv's irregular count from src to dst.
std::int64_t v_count(int src, int dst, std::int64_t count) { return count + (src + 2 * dst) % 3; }

Bytes garbage(std::size_t bytes) { return Bytes(bytes, kGarbage); }

// Calls the async operation or the blocking one of the same signature, with the same arguments.
template <class... A>
Work call(bool async, Work (*async_op)(A...), void (*blocking_op)(A...), std::type_identity_t<A>... args) {
  if (async) return async_op(args...);
  blocking_op(args...);
  return Work();
}

}  // namespace

Slot& Batch::add(const char* name) {
  slots_.push_back({.name = name});
  return slots_.back();
}

Bytes Batch::block_of(const Bytes& all, int block) const {
  const auto size = static_cast<std::ptrdiff_t>(bytes(count_));
  return Bytes(all.begin() + block * size, all.begin() + (block + 1) * size);
}

void Batch::issue_reductions(bool async) {
  const int n = comm_.size(), r = comm_.rank();
  const CollectiveOptions defaults;
  Slot& sum = add("allreduce sum");
  fill_reduce_inputs(sum.send, ReduceOp::kSum, r, count_, dtype_);
  fill_reduce_expected(sum.want, ReduceOp::kSum, n, 0, count_, dtype_);
  sum.recv = garbage(sum.want.size());
  sum.work = call(async, iallreduce, allreduce, comm_, sum.send.data(), sum.recv.data(), count_, dtype_,
                  ReduceOp::kSum, defaults);
  Slot& avg = add("allreduce avg in place");
  fill_reduce_inputs(avg.recv, ReduceOp::kAvg, r, count_, dtype_);
  fill_reduce_expected(avg.want, ReduceOp::kAvg, n, 0, count_, dtype_);
  avg.work = call(async, iallreduce, allreduce, comm_, avg.recv.data(), avg.recv.data(), count_, dtype_,
                  ReduceOp::kAvg, defaults);
  Slot& scattered = add("reduce_scatter max");
  fill_reduce_inputs(scattered.send, ReduceOp::kMax, r, count_ * n, dtype_);
  fill_reduce_expected(scattered.want, ReduceOp::kMax, n, r * count_, count_, dtype_);
  scattered.recv = garbage(scattered.want.size());
  scattered.work = call(async, ireduce_scatter, reduce_scatter, comm_, scattered.send.data(), scattered.recv.data(),
                        count_, dtype_, ReduceOp::kMax, defaults);
  Slot& reduced = add("reduce min to rank 0");
  fill_reduce_inputs(reduced.send, ReduceOp::kMin, r, count_, dtype_);
  if (r == 0) {
    fill_reduce_expected(reduced.want, ReduceOp::kMin, n, 0, count_, dtype_);
    reduced.recv = garbage(reduced.want.size());
  }
  reduced.work = call(async, ireduce, reduce, comm_, reduced.send.data(), r == 0 ? reduced.recv.data() : nullptr,
                      count_, dtype_, ReduceOp::kMin, 0, defaults);
}

void Batch::issue_gathers(bool async) {
  const int n = comm_.size(), r = comm_.rank(), last = n - 1;
  const CollectiveOptions defaults;
  Bytes all;
  fill_gathered(all, n, count_, dtype_);
  Slot& everywhere = add("allgather");
  everywhere.send = block_of(all, r);
  everywhere.want = all;
  everywhere.recv = garbage(all.size());
  everywhere.work = call(async, iallgather, allgather, comm_, everywhere.send.data(), everywhere.recv.data(), count_,
                         dtype_, defaults);
  Slot& gathered = add("gather to the last rank");
  gathered.send = block_of(all, r);
  if (r == last) {
    gathered.want = all;
    gathered.recv = garbage(all.size());
  }
  gathered.work = call(async, igather, gather, comm_, gathered.send.data(), r == last ? gathered.recv.data() : nullptr,
                       count_, dtype_, last, defaults);
  Slot& scattered = add("scatter from rank 0");
  if (r == 0) scattered.send = all;
  scattered.want = block_of(all, r);
  scattered.recv = garbage(scattered.want.size());
  scattered.work = call(async, iscatter, scatter, comm_, r == 0 ? scattered.send.data() : nullptr,
                        scattered.recv.data(), count_, dtype_, 0, defaults);
  Slot& broadcasted = add("broadcast from the last rank");
  fill_broadcast(broadcasted.want, last, count_, dtype_);
  broadcasted.recv = r == last ? broadcasted.want : garbage(broadcasted.want.size());
  broadcasted.work = call(async, ibroadcast, broadcast, comm_, broadcasted.recv.data(), count_, dtype_, last, defaults);
}

void Batch::issue_alltoall(bool async) {
  const int n = comm_.size(), r = comm_.rank();
  Slot& exchanged = add("alltoall");
  exchanged.send = garbage(bytes(count_ * n));
  exchanged.want = garbage(bytes(count_ * n));
  for (int p = 0; p < n; ++p) {
    for (std::int64_t j = 0; j < count_; ++j) {
      store_element(exchanged.send.data(), p * count_ + j, dtype_, pair_value(r, p, j));
      store_element(exchanged.want.data(), p * count_ + j, dtype_, pair_value(p, r, j));
    }
  }
  exchanged.recv = garbage(exchanged.want.size());
  exchanged.work = call(async, ialltoall, alltoall, comm_, exchanged.send.data(), exchanged.recv.data(), count_,
                        dtype_, CollectiveOptions{});
}

// Contiguous irregular blocks. The count arrays are scribbled over right after the call: the
// async call must have copied them.
void Batch::issue_alltoallv(bool async) {
  const int n = comm_.size(), r = comm_.rank();
  const auto size = static_cast<std::size_t>(n);
  std::vector<std::int64_t> send_counts(size), send_displs(size), recv_counts(size), recv_displs(size);
  std::int64_t sent = 0, received = 0;
  for (std::size_t p = 0; p < size; ++p) {
    send_counts[p] = v_count(r, static_cast<int>(p), count_);
    send_displs[p] = sent;
    sent += send_counts[p];
    recv_counts[p] = v_count(static_cast<int>(p), r, count_);
    recv_displs[p] = received;
    received += recv_counts[p];
  }
  Slot& varied = add("alltoallv");
  varied.send = garbage(bytes(sent));
  varied.want = garbage(bytes(received));
  for (std::size_t p = 0; p < size; ++p) {
    for (std::int64_t j = 0; j < send_counts[p]; ++j) {
      store_element(varied.send.data(), send_displs[p] + j, dtype_, pair_value(r, static_cast<int>(p), j));
    }
    for (std::int64_t j = 0; j < recv_counts[p]; ++j) {
      store_element(varied.want.data(), recv_displs[p] + j, dtype_, pair_value(static_cast<int>(p), r, j));
    }
  }
  varied.recv = garbage(varied.want.size());
  varied.work = call(async, ialltoallv, alltoallv, comm_, varied.send.data(), send_counts.data(), send_displs.data(),
                     varied.recv.data(), recv_counts.data(), recv_displs.data(), dtype_, CollectiveOptions{});
  for (auto* array : {&send_counts, &send_displs, &recv_counts, &recv_displs}) array->assign(size, -1);
}

std::vector<Slot> Batch::issue(bool async) {
  slots_.clear();
  slots_.reserve(16);  // references returned by add() stay valid while the batch is built
  issue_reductions(async);
  issue_gathers(async);
  issue_alltoall(async);
  issue_alltoallv(async);
  Slot& barrier = add("barrier");
  if (async) {
    barrier.work = ibarrier(comm_);
  } else {
    comm_.barrier();
  }
  return std::move(slots_);
}

}  // namespace braid::testing
