#include "braid/python/process_group_braid.h"

#include <Python.h>

#include <fmt/format.h>

#include "braid/collectives/collective_queue.h"
#include "braid/comm/communicator_internal.h"
#include "braid/python/c10d_store.h"
#include "braid/python/staging.h"
#include "braid/python/tensor_mapping.h"
#include "braid/python/work_adapter.h"

namespace braid::python {

ProcessGroupBraid::ProcessGroupBraid(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size)
    : c10d::ProcessGroup(rank, size), comm_(Communicator::init(rank, size, std::make_shared<C10dStore>(store, rank))) {}

// The communicator's destructor waits for the queued ops (each bounded by BRAID_TIMEOUT). When
// the last reference drops in Python (the GIL held), an op still queued may complete a future
// whose callback is Python code (fut.then(fn)), which needs the GIL on braid's worker: wait for
// the queue with the GIL released, or the two would wait for each other forever.
ProcessGroupBraid::~ProcessGroupBraid() {
  if (Py_IsInitialized() == 0 || PyGILState_Check() == 0) return;
  PyThreadState* python = PyEval_SaveThread();
  detail::CollectiveAccess(comm_).attachment<CollectiveQueue>().drain();
  PyEval_RestoreThread(python);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::enqueue(c10d::OpType type, const char* op,
                                                          std::vector<at::Tensor> outputs, std::function<void()> body) {
  auto work = c10::make_intrusive<QueuedWork>(rank_, type, std::move(outputs));
  auto& queue = detail::CollectiveAccess(comm_).attachment<CollectiveQueue>();
  work->set_task(queue.submit(context(op), [work, body = std::move(body)] {
    // Copying results back into a leaf that requires grad (a parameter) is an update, not a
    // step of the graph: allowed, and not recorded, as in an optimizer's step.
    const at::NoGradGuard no_grad;
    try {
      body();
    } catch (...) {
      work->complete(std::current_exception());
      return;
    }
    work->complete(nullptr);
  }));
  return work;
}

int ProcessGroupBraid::checked_root(std::int64_t root, const ErrorContext& ctx) const {
  if (root < 0 || root >= size_) {
    throw InvalidArgument(ctx, fmt::format("root {} is out of range for a group of size {}", root, size_));
  }
  return static_cast<int>(root);
}

const at::Tensor& ProcessGroupBraid::only_tensor(const std::vector<at::Tensor>& tensors,
                                                 const ErrorContext& ctx) const {
  check_count(tensors.size(), 1, "the tensor list", ctx);
  check_dense_cpu(tensors[0], ctx);
  return tensors[0];
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::barrier(const c10d::BarrierOptions& /*opts*/) {
  return enqueue(c10d::OpType::BARRIER, "barrier", {}, [this] { comm_.barrier(); });
}

// Gloo's monitored barrier names the rank that did not arrive; braid's barrier cannot tell
// which one it was, so this one says how long it waited. A lost rank is PeerLost anyway.
void ProcessGroupBraid::monitoredBarrier(const c10d::BarrierOptions& opts, bool /*wait_all_ranks*/) {
  c10::intrusive_ptr<c10d::Work> work = barrier(opts);
  if (opts.timeout == c10d::kUnsetTimeout) {
    work->wait();
    return;
  }
  try {
    work->wait(opts.timeout);
  } catch (const c10::Error&) {
    throw Timeout(context("monitored_barrier"),
                  fmt::format("not every rank of the group reached the barrier within {} ms", opts.timeout.count()));
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  const ErrorContext ctx = context("send");
  Staged staged(only_tensor(tensors, ctx), Staged::Direction::kInput);
  const Buffer b = byte_buffer(staged.work());
  braid::Work transfer = comm_.isend(b.data, b.count, b.dtype, dst_rank, tag);
  return c10::make_intrusive<PointToPointWork>(rank_, c10d::OpType::SEND, std::move(transfer), std::move(staged),
                                               [] { return -1; });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  const ErrorContext ctx = context("recv");
  Staged staged(only_tensor(tensors, ctx));
  const Buffer b = byte_buffer(staged.work());
  braid::Work transfer = comm_.irecv(b.data, b.count, b.dtype, src_rank, tag);
  return c10::make_intrusive<PointToPointWork>(rank_, c10d::OpType::RECV, std::move(transfer), std::move(staged),
                                               [src_rank] { return src_rank; });
}

// c10d asks the Work who sent it (work._source_rank(), what dist.recv(t) returns): braid's
// any-source receive knows once it has completed, as a rank of this group.
c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  const ErrorContext ctx = context("recv");
  Staged staged(only_tensor(tensors, ctx));
  const Buffer b = byte_buffer(staged.work());
  AnySourceRecv receive = comm_.irecv_any_source(b.data, b.count, b.dtype, tag);
  braid::Work transfer = receive.work();
  return c10::make_intrusive<PointToPointWork>(rank_, c10d::OpType::RECVANYSOURCE, std::move(transfer),
                                               std::move(staged), [receive] { return receive.source(); });
}

}  // namespace braid::python
