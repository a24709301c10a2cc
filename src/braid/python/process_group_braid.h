// ProcessGroupBraid: the c10d::ProcessGroup behind torch.distributed's backend "braid".
//
// Each group owns one braid::Communicator, joined through the group's c10d store
// (c10d_store.h): the default group and every new_group() alike, so subgroups connect their
// members directly (their own fabric) and need nothing from ranks outside them.
//
// Collectives check their arguments on the caller's thread (a bad dtype, op, count or shape is
// an InvalidArgument raised by the call itself), stage non-contiguous tensors into contiguous
// copies, and queue one task on the communicator's background queue: it runs braid's blocking
// collective, copies results back, and completes the Work and its future (work_adapter.h).
// So every call returns at once, ops run in issue order, and DDP's bucket allreduces overlap
// backward as they do with Gloo. Send and receive are transport requests driven by wait().
//
// Errors that need the peers (Mismatch of shapes across ranks, PeerLost, Timeout) come from
// Work::wait() / the future, with braid's message (rank, peer, op, sequence number).
//
// Thread-safety: as c10d's: one thread issues the ops of a group; Works and futures may be
// waited on from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "braid/base/error.h"
#include "braid/comm/communicator.h"
#include "braid/compress/compression_policy.h"
#include "braid/python/compression_hook.h"

namespace braid::python {

class ProcessGroupBraid final : public c10d::ProcessGroup {
 public:
  // Collective over the group's ranks: rendezvous through `store`, then braid's transports.
  ProcessGroupBraid(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size);
  ~ProcessGroupBraid() override;

  const std::string getBackendName() const override { return "braid"; }

  // Data movement (process_group_movement.cc).
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& output_lists,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits, std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;

  // Reductions (process_group_reductions.cc).
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;

  // Synchronisation and point-to-point (process_group_braid.cc).
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

  // braid's DDP comm hooks (compression_hook.cc): averages `buffer` (a contiguous fp32 bucket)
  // piece by piece, each compressed with the codec `policy_options` (with `codec` as its
  // default) chooses for it at `step`, error feedback in `residuals`. The Work's future's
  // value is [buffer], averaged in place.
  c10::intrusive_ptr<c10d::Work> compressed_allreduce(const at::Tensor& buffer, std::vector<HookPiece> pieces,
                                                               const std::string& codec,
                                                               const compress::CompressionPolicyOptions& policy_options,
                                                               std::int64_t step,
                                                               std::shared_ptr<CompressionHookResiduals> residuals);

 private:
  // Queues `body` (run on braid's worker); the Work completes with `outputs` or body's error.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char* op, std::vector<at::Tensor> outputs,
                                         std::function<void()> body);
  ErrorContext context(const char* op) const { return {.rank = rank_, .op = op}; }
  // On the worker: averages the pieces `which` of a hook's bucket in one allreduce (compression_hook.cc).
  void allreduce_uncompressed(float* base, const std::vector<HookPiece>& pieces, const std::vector<std::size_t>& which,
                              compress::CompressionState& state);
  // InvalidArgument unless 0 <= root < size.
  int checked_root(std::int64_t root, const ErrorContext& ctx) const;
  // The single tensor of a one-tensor-per-process list (c10d's CPU convention), checked.
  const at::Tensor& only_tensor(const std::vector<at::Tensor>& tensors, const ErrorContext& ctx) const;

  Communicator comm_;
};

}  // namespace braid::python
