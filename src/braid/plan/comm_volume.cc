#include "braid/plan/comm_volume.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "braid/base/error.h"
#include "braid/plan/units.h"

namespace braid::plan {

namespace {

void check_group(int n, const char* field) { require_range(field, n, 1, 1 << 24, "a group has at least one rank"); }

void check_bytes(double bytes, const char* field) { require_range(field, bytes, 0, 1e21); }

double share(int n) { return static_cast<double>(n - 1) / n; }

}  // namespace

Estimate ring_reduce_scatter_bytes(double bytes, int n) {
  check_bytes(bytes, "bytes");
  check_group(n, "ranks");
  return {"ring_reduce_scatter_bytes_per_rank", share(n) * bytes, Unit::kBytes, "(n-1)/n x S",
          fmt::format("({}-1)/{} x {} B", n, n, num(bytes))};
}

Estimate ring_allgather_bytes(double bytes, int n) {
  check_bytes(bytes, "bytes");
  check_group(n, "ranks");
  return {"ring_allgather_bytes_per_rank", share(n) * bytes, Unit::kBytes, "(n-1)/n x S",
          fmt::format("({}-1)/{} x {} B", n, n, num(bytes))};
}

Estimate ring_allreduce_bytes(double bytes, int n) {
  check_bytes(bytes, "bytes");
  check_group(n, "ranks");
  return {"ring_allreduce_bytes_per_rank", 2 * share(n) * bytes, Unit::kBytes, "2 (n-1)/n x S",
          fmt::format("2 x ({}-1)/{} x {} B", n, n, num(bytes))};
}

Estimate dp_allreduce_bytes(double params, double grad_bytes, int dp) {
  check_bytes(params, "params");
  check_group(dp, "dp");
  return {"dp_allreduce_bytes_per_rank", 2 * share(dp) * params * grad_bytes, Unit::kBytes,
          "2 (dp-1)/dp x Phi x b   (-> 2 Phi b as dp grows; 4 Phi for fp16)",
          fmt::format("2 x ({}-1)/{} x {} x {} B", dp, dp, num(params), num(grad_bytes))};
}

Estimates zero_bytes(int stage, double params, double bytes_per_param, int dp, int microbatches) {
  require_range("zero stage", stage, 0, 3, "ZeRO stages are 0 (off), 1, 2, 3");
  require_range("microbatches", microbatches, 1, 1e9);
  check_group(dp, "dp");
  check_bytes(params, "params");
  const double unit = share(dp) * params * bytes_per_param;  // one reduce-scatter or allgather
  const std::string unit_text = fmt::format("({}-1)/{} x {} x {} B", dp, dp, num(params), num(bytes_per_param));
  const double m = microbatches;
  switch (stage) {
    case 0:
      return {dp_allreduce_bytes(params, bytes_per_param, dp)};
    case 1:
      return {{"zero1_reduce_scatter_bytes", unit, Unit::kBytes, "(n-1)/n Phi b", unit_text},
              {"zero1_allgather_bytes", unit, Unit::kBytes, "(n-1)/n Phi b", unit_text},
              {"zero_bytes_per_rank", 2 * unit, Unit::kBytes, "2 (n-1)/n Phi b  (same as DP)",
               fmt::format("2 x {}", unit_text)}};
    case 2:
      return {{"zero2_reduce_scatter_bytes", m * unit, Unit::kBytes, "m (n-1)/n Phi b  (one per micro-batch)",
               fmt::format("{} x {}", num(m), unit_text)},
              {"zero2_allgather_bytes", unit, Unit::kBytes, "(n-1)/n Phi b", unit_text},
              {"zero_bytes_per_rank", (m + 1) * unit, Unit::kBytes, "(m+1) (n-1)/n Phi b  (2 Phi b for m = 1)",
               fmt::format("({}+1) x {}", num(m), unit_text)}};
    default:
      return {{"zero3_allgather_bytes", 2 * m * unit, Unit::kBytes, "2 m (n-1)/n Phi b  (forward and backward gathers)",
               fmt::format("2 x {} x {}", num(m), unit_text)},
              {"zero3_reduce_scatter_bytes", m * unit, Unit::kBytes, "m (n-1)/n Phi b",
               fmt::format("{} x {}", num(m), unit_text)},
              {"zero_bytes_per_rank", 3 * m * unit, Unit::kBytes, "3 m (n-1)/n Phi b  (1.5x DP for m = 1)",
               fmt::format("3 x {} x {}", num(m), unit_text)}};
  }
}

Estimates tp_layer_bytes(const ActivationShape& shape, int tp, bool sequence_parallel, bool full_recompute) {
  check_group(tp, "tp");
  const double message = shape.message_bytes();
  check_bytes(message, "activation bytes");
  const int allreduces = full_recompute ? 6 : 4;
  const std::string message_text =
      fmt::format("{} x {} x {} x {} B", num(shape.micro_batch), num(shape.seq), num(shape.hidden), num(shape.bytes));
  Estimates out;
  out.push_back({"tp_message_bytes", message, Unit::kBytes, "b x s x h x bytes  (seed: 2BSH for fp16)", message_text});
  if (sequence_parallel) {
    out.push_back({"tp_collectives_per_layer", 2.0 * allreduces, Unit::kCount,
                   "allgather + reduce-scatter for each allreduce", fmt::format("2 x {}", allreduces)});
  } else {
    out.push_back({"tp_collectives_per_layer", static_cast<double>(allreduces), Unit::kCount,
                   "2 forward + 2 backward allreduces (+2 with full recomputation)", num(allreduces)});
  }
  out.push_back({"tp_bytes_per_layer_per_rank", allreduces * 2 * share(tp) * message, Unit::kBytes,
                 "allreduces x 2 (t-1)/t x b s h bytes",
                 fmt::format("{} x 2 x ({}-1)/{} x {} B", allreduces, tp, tp, num(message))});
  return out;
}

Estimate tp_column_layer_bytes(const ActivationShape& shape, int tp) {
  Estimate e = ring_allreduce_bytes(shape.message_bytes(), tp);
  e.name = "tp_column_layer_bytes_per_rank";
  e.formula = "backward allreduce of the input gradient: 2 (t-1)/t x b s h bytes  (forward: none)";
  return e;
}

Estimate tp_row_layer_bytes(const ActivationShape& shape, int tp) {
  Estimate e = ring_allreduce_bytes(shape.message_bytes(), tp);
  e.name = "tp_row_layer_bytes_per_rank";
  e.formula = "forward allreduce of the output: 2 (t-1)/t x b s h bytes  (backward: none)";
  return e;
}

Estimates pp_bytes(const ActivationShape& shape, int microbatches, int chunks, int tp, bool sequence_parallel) {
  require_range("microbatches", microbatches, 1, 1e9);
  require_range("chunks", chunks, 1, 1e6, "virtual stages per pipeline stage");
  check_group(tp, "tp");
  const double divisor = sequence_parallel ? tp : 1;
  const double boundary = shape.message_bytes() / divisor;
  Estimates out;
  out.push_back({"pp_boundary_bytes", boundary, Unit::kBytes, sequence_parallel ? "b s h bytes / t" : "b s h bytes",
                 sequence_parallel ? fmt::format("{} / {} B", num(shape.message_bytes()), tp)
                                   : fmt::format("{} B", num(boundary))});
  out.push_back({"pp_bytes_per_rank", 2.0 * microbatches * chunks * boundary, Unit::kBytes,
                 "2 x m x v x boundary  (activation forward, gradient backward)",
                 fmt::format("2 x {} x {} x {} B", microbatches, chunks, num(boundary))});
  return out;
}

namespace {

// R: the routed copies kept per MoE layer on this rank.
Estimate moe_kept_rows(const MoeShape& s) {
  const double routed = s.tokens * s.top_k;
  if (s.capacity_factor == 0) return {"moe_kept_rows", routed, Unit::kCount, "R = T x k  (dropless)", fmt::format("{} x {}", num(s.tokens), num(s.top_k))};
  const double capacity = std::ceil(s.capacity_factor * s.tokens * s.top_k / s.experts);
  return {"moe_kept_rows", std::min(routed, s.experts * capacity), Unit::kCount,
          "R <= min(T x k, E x ceil(cf x T x k / E))  (at most; equal when no expert is under its capacity)",
          fmt::format("min({} x {}, {} x {})", num(s.tokens), num(s.top_k), num(s.experts), num(capacity))};
}

}  // namespace

Estimates moe_alltoall_bytes(const MoeShape& s) {
  require_range("tokens", s.tokens, 0, 1e15);
  require_range("capacity factor", s.capacity_factor, 0, 1e6, "0 is dropless");
  require_range("top-k", s.top_k, 1, s.experts, "a token goes to between 1 and all experts");
  require_range("experts", s.experts, 1, 1e9);
  check_group(s.ep, "ep");
  check_group(s.tp, "tp");
  const double one_way = s.tokens * s.top_k * s.hidden * s.bytes;
  const double row = s.hidden * s.bytes;
  const double kept = moe_kept_rows(s).value;
  const std::string text = fmt::format("{} x {} x {} x {} B", num(s.tokens), num(s.top_k), num(s.hidden), num(s.bytes));
  return {{"moe_one_way_bytes", one_way, Unit::kBytes, "T x k x H x b", text},
          {"moe_round_trip_bytes", 2 * one_way, Unit::kBytes, "2 x T x k x H x b  (dispatch + combine)",
           fmt::format("2 x {}", text)},
          {"moe_round_trip_wire_bytes", 2 * one_way * share(s.ep), Unit::kBytes,
           "2 T k H b x (ep-1)/ep  (the local share stays on the rank)",
           fmt::format("2 x {} x ({}-1)/{}", text, s.ep, s.ep)},
          {"moe_tokens_per_expert", s.tokens * s.top_k / s.experts, Unit::kCount, "T x k / E",
           fmt::format("{} x {} / {}", num(s.tokens), num(s.top_k), num(s.experts))},
          moe_kept_rows(s),
          {"moe_layer_forward_bytes", 2 * kept * row, Unit::kBytes, "2 x R x H x b  (dispatch + combine)",
           fmt::format("2 x {} x {} x {} B", num(kept), num(s.hidden), num(s.bytes))},
          {"moe_layer_backward_bytes", 2 * kept * row, Unit::kBytes,
           "2 x R x H x b  (the combine's gradient out, the dispatch's back)",
           fmt::format("2 x {} x {} x {} B", num(kept), num(s.hidden), num(s.bytes))},
          {"moe_layer_train_wire_bytes", 4 * kept * row * share(s.ep), Unit::kBytes,
           "4 x R x H x b x (ep-1)/ep  (forward + backward, off the rank)",
           fmt::format("4 x {} x {} x {} x ({}-1)/{} B", num(kept), num(s.hidden), num(s.bytes), s.ep, s.ep)},
          {"moe_layer_train_wire_bytes_per_tp_group", s.tp * 4 * kept * row * share(s.ep), Unit::kBytes,
           "tp x 4 x R x H x b x (ep-1)/ep  (each tp rank exchanges the same rows over its own EP group)",
           fmt::format("{} x 4 x {} x {} x {} x ({}-1)/{} B", s.tp, num(kept), num(s.hidden), num(s.bytes), s.ep, s.ep)}};
}

Estimate bucket_size_rule(double gradient_bytes, int ranks) {
  check_group(ranks, "ranks");
  constexpr double kFloor = 4.0 * 1024 * 1024;
  const double value = std::max(kFloor, gradient_bytes / (16.0 * ranks));
  return {"bucket_bytes", value, Unit::kBytes, "max(4 MiB, gradient bytes / (16 x ranks))",
          fmt::format("max(4194304, {} / (16 x {})) B", num(gradient_bytes), ranks)};
}

}  // namespace braid::plan
