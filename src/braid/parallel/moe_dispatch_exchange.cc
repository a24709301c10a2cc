// MoeDispatcher's exchanges: the forward all-to-all (rows to the experts), the reverse one
// (results back to the tokens' ranks), and run(), which interleaves both with the experts'
// compute chunk by chunk (Tutel's pipelining). Row orders: moe_exchange_layout.h.
#include <fmt/format.h>

#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/async_collectives.h"
#include "braid/parallel/moe_dispatcher.h"
#include "braid/parallel/moe_row_ops.h"

namespace braid::parallel {
namespace {

std::byte* grown(std::vector<std::byte>& buffer, std::int64_t bytes) {
  if (static_cast<std::int64_t>(buffer.size()) < bytes) buffer.resize(static_cast<std::size_t>(bytes));
  return buffer.data();
}

std::vector<std::int64_t> scaled(const std::vector<std::int64_t>& rows, std::int64_t hidden) {
  std::vector<std::int64_t> out(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) out[i] = rows[i] * hidden;
  return out;
}

// Queues chunk c's alltoallv; forward: send buffer -> receive buffer, reverse: the other way
// with the same counts swapped.
Work exchange_chunk(Communicator& group, const MoeChunkLayout& chunk, std::int64_t hidden, DType dtype,
                    const std::byte* from, std::byte* to, bool reverse) {
  const auto sc = scaled(reverse ? chunk.recv_counts : chunk.send_counts, hidden);
  const auto sd = scaled(reverse ? chunk.recv_displs : chunk.send_displs, hidden);
  const auto rc = scaled(reverse ? chunk.send_counts : chunk.recv_counts, hidden);
  const auto rd = scaled(reverse ? chunk.send_displs : chunk.recv_displs, hidden);
  return ialltoallv(group, from, sc.data(), sd.data(), to, rc.data(), rd.data(), dtype);
}

// Waits for every Work still pending when a callback or a wait throws, so no queued exchange
// is left reading or writing the staging buffers after we return.
class PendingWorks {
 public:
  ~PendingWorks() {
    for (Work& w : works_) {
      try {
        w.wait();
      } catch (const Error&) {  // the first error is already on its way to the caller
      }
    }
  }
  void add(Work w) { works_.push_back(std::move(w)); }
  Work& operator[](std::size_t i) { return works_[i]; }
  void wait_all() {
    for (Work& w : works_) w.wait();
    works_.clear();
  }

 private:
  std::vector<Work> works_;
};

}  // namespace

void MoeDispatcher::forward(const MoeDispatchPlan& plan, const void* source, std::span<const std::int64_t> source_row,
                            void* expert_input) {
  const std::int64_t rb = row_bytes();
  std::byte* send = grown(send_, plan.layout.send_rows() * rb);
  std::byte* recv = grown(recv_, plan.layout.recv_rows() * rb);
  moe_rows::gather(source, source_row, rb, send);
  PendingWorks works;
  for (int c = 0; c < plan.chunks(); ++c) {
    works.add(exchange_chunk(group_, plan.layout.chunk(c), spec_.hidden, spec_.dtype, send, recv, false));
  }
  for (int c = 0; c < plan.chunks(); ++c) {
    works[static_cast<std::size_t>(c)].wait();
    moe_rows::move_blocks(recv, plan.layout.chunk(c).recv_to_expert, rb, expert_input, false);
  }
  works.wait_all();
}

void MoeDispatcher::reverse(const MoeDispatchPlan& plan, const void* expert_rows) {
  const std::int64_t rb = row_bytes();
  std::byte* staging = grown(recv_, plan.layout.recv_rows() * rb);
  std::byte* back = grown(back_, plan.layout.send_rows() * rb);
  PendingWorks works;
  for (int c = 0; c < plan.chunks(); ++c) {
    const MoeChunkLayout& chunk = plan.layout.chunk(c);
    moe_rows::move_blocks(expert_rows, chunk.recv_to_expert, rb, staging, true);
    works.add(exchange_chunk(group_, chunk, spec_.hidden, spec_.dtype, staging, back, true));
  }
  works.wait_all();
}

void MoeDispatcher::dispatch(const MoeDispatchPlan& plan, const void* tokens, void* expert_input) {
  check_plan(plan, "moe dispatch");
  forward(plan, tokens, plan.token_of_send_row, expert_input);
}

void MoeDispatcher::dispatch_choices(const MoeDispatchPlan& plan, const void* choice_rows, void* expert_input) {
  check_plan(plan, "moe dispatch_choices");
  forward(plan, choice_rows, plan.choice_of_send_row, expert_input);
}

void MoeDispatcher::return_rows(const MoeDispatchPlan& plan, const void* expert_rows, void* choice_rows) {
  check_plan(plan, "moe return_rows");
  reverse(plan, expert_rows);
  moe_rows::scatter_choices(back_.data(), plan.send_row_of_choice, row_bytes(), choice_rows);
}

void MoeDispatcher::combine(const MoeDispatchPlan& plan, const void* expert_output, const float* gates, void* out) {
  check_plan(plan, "moe combine");
  reverse(plan, expert_output);
  moe_rows::weighted_sum(spec_.dtype, back_.data(), plan.send_row_of_choice, gates, plan.routing.tokens, spec_.top_k,
                         spec_.hidden, out);
}

void MoeDispatcher::undispatch(const MoeDispatchPlan& plan, const void* grad_expert_input, void* grad_tokens) {
  check_plan(plan, "moe undispatch");
  reverse(plan, grad_expert_input);
  moe_rows::weighted_sum(spec_.dtype, back_.data(), plan.send_row_of_choice, nullptr, plan.routing.tokens,
                         spec_.top_k, spec_.hidden, grad_tokens);
}

// The forward chunks are all queued first; the group's queue runs them in order while this
// thread computes: chunk c's experts overlap chunk c + 1's transfer, and chunk c's reverse
// exchange, queued behind the forward ones, overlaps the later chunks' compute. Every rank
// queues the same exchanges in the same order (F0 .. F(C-1), R0 .. R(C-1)), as the ordering
// contract requires. source_row names the source row of each send row (tokens or choices);
// the returned rows are left in back_ (send-buffer order).
void MoeDispatcher::pipeline(const MoeDispatchPlan& plan, const void* source, std::span<const std::int64_t> source_row,
                             const MoeExpertFunction& experts) {
  const std::int64_t rb = row_bytes();
  const std::int64_t rows = plan.layout.recv_rows();
  std::byte* send = grown(send_, plan.layout.send_rows() * rb);
  std::byte* recv = grown(recv_, rows * rb);
  std::byte* in = grown(expert_in_, rows * rb);
  std::byte* result = grown(expert_out_, rows * rb);
  std::byte* staging = grown(ret_, rows * rb);
  std::byte* back = grown(back_, plan.layout.send_rows() * rb);
  moe_rows::gather(source, source_row, rb, send);
  PendingWorks forward_works, reverse_works;
  for (int c = 0; c < plan.chunks(); ++c) {
    forward_works.add(exchange_chunk(group_, plan.layout.chunk(c), spec_.hidden, spec_.dtype, send, recv, false));
  }
  std::vector<std::int64_t> offsets;
  for (int c = 0; c < plan.chunks(); ++c) {
    const MoeChunkLayout& chunk = plan.layout.chunk(c);
    forward_works[static_cast<std::size_t>(c)].wait();
    moe_rows::move_blocks(recv, chunk.recv_to_expert, rb, in, false);
    offsets.assign(chunk.expert_offsets.begin(), chunk.expert_offsets.end());
    for (std::int64_t& o : offsets) o -= chunk.first_recv_row;
    experts({.chunk = c, .first_expert = first_local_expert(), .expert_offsets = offsets,
             .input = in + chunk.first_recv_row * rb, .output = result + chunk.first_recv_row * rb,
             .rows = chunk.recv_rows, .hidden = spec_.hidden, .dtype = spec_.dtype});
    moe_rows::move_blocks(result, chunk.recv_to_expert, rb, staging, true);
    reverse_works.add(exchange_chunk(group_, chunk, spec_.hidden, spec_.dtype, staging, back, true));
  }
  forward_works.wait_all();
  reverse_works.wait_all();
}

void MoeDispatcher::run(const MoeDispatchPlan& plan, const void* tokens, const float* gates,
                        const MoeExpertFunction& experts, void* out) {
  check_plan(plan, "moe run");
  pipeline(plan, tokens, plan.token_of_send_row, experts);
  moe_rows::weighted_sum(spec_.dtype, back_.data(), plan.send_row_of_choice, gates, plan.routing.tokens, spec_.top_k,
                         spec_.hidden, out);
}

void MoeDispatcher::run_choices(const MoeDispatchPlan& plan, const void* tokens, const MoeExpertFunction& experts,
                                void* choice_rows) {
  check_plan(plan, "moe run_choices");
  pipeline(plan, tokens, plan.token_of_send_row, experts);
  moe_rows::scatter_choices(back_.data(), plan.send_row_of_choice, row_bytes(), choice_rows);
}

void MoeDispatcher::run_backward(const MoeDispatchPlan& plan, const void* grad_choice_rows,
                                 const MoeExpertFunction& expert_backward, void* grad_tokens) {
  check_plan(plan, "moe run_backward");
  pipeline(plan, grad_choice_rows, plan.choice_of_send_row, expert_backward);
  moe_rows::weighted_sum(spec_.dtype, back_.data(), plan.send_row_of_choice, nullptr, plan.routing.tokens,
                         spec_.top_k, spec_.hidden, grad_tokens);
}

}  // namespace braid::parallel
