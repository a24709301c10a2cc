// The table of collective operations (collective_ops.h). A row says which local checks a call
// needs beyond the common ones (count >= 0, non-null buffers, a valid dtype, and a valid
// reduction op / root where the operation has them, envelope.h), and which steps run around
// the chosen algorithm.
#include "braid/collectives/collective_ops.h"

#include <array>
#include <cstring>
#include <string>

#include "braid/base/error.h"
#include "braid/collectives/alltoallv_args.h"
#include "braid/collectives/collective_checks.h"
#include "braid/collectives/collective_observer.h"
#include "braid/collectives/tuner.h"
#include "braid/comm/communicator_internal.h"

namespace braid {

namespace {

using collective_checks::check_common;
using collective_checks::check_reduce_op;
using collective_checks::check_root;
using collective_checks::check_total;

// Which ranks must pass a non-null buffer (when count > 0).
enum class Needed : std::uint8_t { kEverywhere, kOnRoot };

using Steps = void (*)(const CollectiveArgs& args, const AlgorithmEntry& algorithm);

struct CollectiveOp {
  OpKind op;
  Steps steps;
  Needed send = Needed::kEverywhere;
  Needed recv = Needed::kEverywhere;
  bool blocks = false;  // the buffers hold one block of `count` per rank: count * size must fit
  // Replaces the common checks where the call's shape is not one count (alltoallv's layout).
  void (*check)(const CollectiveArgs& args) = nullptr;
};

// The chosen algorithm on `args`, reported to the communicator's observer (if any).
void run_chosen(const AlgorithmEntry& algorithm, const CollectiveArgs& args) {
  run_observed(args, algorithm.name, args.bytes(args.count), [&] { algorithm.run(args); });
}

// On a world of one the result is the input: the algorithm runs only with peers.
void run_or_copy(const CollectiveArgs& args, const AlgorithmEntry& algorithm) {
  if (args.comm.size() > 1) {
    run_chosen(algorithm, args);
  } else if (args.send != args.recv) {
    std::memcpy(args.recv, args.send, args.bytes(args.count));
  }
}

// avg divides once, at the end, on the ranks that hold a result.
void divide_average(const CollectiveArgs& args) {
  if (args.reduce_op == ReduceOp::kAvg) {
    divide_by(args.recv, static_cast<std::size_t>(args.count), args.dtype, args.comm.size());
  }
}

// This rank's block, copied to where the algorithm expects it unless already there (in place).
void place_own_block(std::byte* to, const std::byte* from, const CollectiveArgs& args) {
  if (to != from) std::memcpy(to, from, args.bytes(args.count));
}

std::size_t block_offset(const CollectiveArgs& args, int index) {
  return static_cast<std::size_t>(index) * args.bytes(args.count);
}

void allreduce_steps(const CollectiveArgs& args, const AlgorithmEntry& algorithm) {
  if (args.count == 0) return;
  const bool copies_itself = algorithm.reads_send && args.comm.size() > 1;
  if (!copies_itself) place_own_block(args.recv, args.send, args);
  if (args.comm.size() > 1) run_chosen(algorithm, args);
  divide_average(args);
}

void allgather_steps(const CollectiveArgs& args, const AlgorithmEntry& algorithm) {
  if (args.count == 0) return;
  // Every algorithm starts from this rank's block in place (MPI_IN_PLACE when already there).
  place_own_block(args.recv + block_offset(args, args.comm.rank()), args.send, args);
  if (args.comm.size() > 1) run_chosen(algorithm, args);
}

void reduce_scatter_steps(const CollectiveArgs& args, const AlgorithmEntry& algorithm) {
  if (args.count == 0) return;
  run_or_copy(args, algorithm);
  divide_average(args);
}

void broadcast_steps(const CollectiveArgs& args, const AlgorithmEntry& algorithm) {
  if (args.comm.size() > 1 && args.count > 0) run_chosen(algorithm, args);
}

void reduce_steps(const CollectiveArgs& args, const AlgorithmEntry& algorithm) {
  if (args.count == 0) return;
  run_or_copy(args, algorithm);
  if (args.comm.rank() == args.root) divide_average(args);
}

void gather_steps(const CollectiveArgs& args, const AlgorithmEntry& algorithm) {
  if (args.count == 0) return;
  if (args.comm.rank() == args.root) place_own_block(args.recv + block_offset(args, args.root), args.send, args);
  if (args.comm.size() > 1) run_chosen(algorithm, args);
}

void scatter_steps(const CollectiveArgs& args, const AlgorithmEntry& algorithm) {
  if (args.count == 0) return;
  if (args.comm.rank() == args.root) place_own_block(args.recv, args.send + block_offset(args, args.root), args);
  if (args.comm.size() > 1) run_chosen(algorithm, args);
}

void alltoall_steps(const CollectiveArgs& args, const AlgorithmEntry& algorithm) {
  if (args.count == 0) return;
  if (args.send != args.recv) {
    run_chosen(algorithm, args);
    return;
  }
  // In place: every block is read after others have landed, so stage the send buffer.
  CollectiveArgs staged = args;
  const std::size_t bytes = block_offset(args, args.comm.size());
  std::byte* copy = detail::CollectiveAccess(args.comm).scratch(bytes);
  std::memcpy(copy, args.send, bytes);
  staged.send = copy;
  run_chosen(algorithm, staged);
}

// Every message is sent, zero-length ones and a world of one included (alltoallv_pairwise.cc).
void alltoallv_steps(const CollectiveArgs& args, const AlgorithmEntry& algorithm) {
  run_observed(args, algorithm.name, alltoallv_send_bytes(args), [&] { algorithm.run(args); });
}

void check_layout(const CollectiveArgs& args) {
  check_alltoallv_layout(args.comm, args.send, args.recv, *args.layout, args.dtype);
}

// The collectives' OpKinds run from kAllreduce to kScatter without a gap (base/op_kind.h), so
// a call finds its row by index, not by a search: it does twice per call (checked() and
// run_collective()). Rows therefore stand in OpKind order, as the static_assert below checks.
constexpr OpKind kFirstCollective = OpKind::kAllreduce;

constexpr std::size_t row_index(OpKind op) {
  return static_cast<std::size_t>(op) - static_cast<std::size_t>(kFirstCollective);
}

constexpr std::array kOps{
    CollectiveOp{.op = OpKind::kAllreduce, .steps = allreduce_steps},
    CollectiveOp{.op = OpKind::kReduceScatter, .steps = reduce_scatter_steps, .blocks = true},
    CollectiveOp{.op = OpKind::kAllgather, .steps = allgather_steps, .blocks = true},
    CollectiveOp{.op = OpKind::kBroadcast, .steps = broadcast_steps},
    CollectiveOp{.op = OpKind::kReduce, .steps = reduce_steps, .recv = Needed::kOnRoot},
    CollectiveOp{.op = OpKind::kAlltoall, .steps = alltoall_steps, .blocks = true},
    CollectiveOp{.op = OpKind::kAlltoallv, .steps = alltoallv_steps, .check = check_layout},
    CollectiveOp{.op = OpKind::kGather, .steps = gather_steps, .recv = Needed::kOnRoot, .blocks = true},
    CollectiveOp{.op = OpKind::kScatter, .steps = scatter_steps, .send = Needed::kOnRoot, .blocks = true},
};

constexpr bool each_row_at_its_index() {
  for (std::size_t i = 0; i < kOps.size(); ++i) {
    if (row_index(kOps[i].op) != i) return false;
  }
  return true;
}
static_assert(each_row_at_its_index(), "kOps[row_index(op)] must be op's row: keep kOps in OpKind order, no gaps");

const CollectiveOp& collective_op(OpKind op) {
  // Below kFirstCollective the index wraps around to a huge value, so one comparison refuses
  // both ends (send/recv, barrier, split, and values past the last collective).
  const std::size_t index = row_index(op);
  if (index >= kOps.size()) {
    throw InvalidArgument({.op = std::string(op_kind_name(op))}, "not a collective with an entry point");
  }
  return kOps[index];
}

// The buffer this rank must not leave null: `buffer`, except where only the root needs it and
// this rank is not the root; then `otherwise` (the one it does use) stands in for it.
const void* needed(Needed who, const void* buffer, const void* otherwise, const CollectiveArgs& args) {
  return who == Needed::kOnRoot && args.comm.rank() != args.root ? otherwise : buffer;
}

void check_counted(const CollectiveArgs& args, const CollectiveOp& rule) {
  // The root first: it decides which buffers this rank needs.
  if (is_rooted(args.op)) check_root(args.comm, args.op, args.root);
  const void* send = needed(rule.send, args.send, args.recv, args);
  const void* recv = needed(rule.recv, args.recv, args.send, args);
  check_common(args.comm, args.op, send, recv, args.count, args.dtype);
  if (is_reducing(args.op)) check_reduce_op(args.comm, args.op, args.reduce_op);
  if (rule.blocks) check_total(args.comm, args.op, args.count, args.dtype);
}

}  // namespace

CollectiveArgs checked(Communicator& comm, const CollectiveCall& call) {
  const CollectiveOp& rule = collective_op(call.op);
  const CollectiveArgs args{.comm = comm, .op = call.op, .seq = -1, .send = static_cast<const std::byte*>(call.send),
                            .recv = static_cast<std::byte*>(call.recv), .count = call.count, .dtype = call.dtype,
                            .reduce_op = call.reduce_op, .root = call.root, .layout = call.layout};
  if (rule.check != nullptr) {
    rule.check(args);
  } else {
    check_counted(args, rule);
  }
  return args;
}

void run_collective(CollectiveArgs args, std::string_view requested) {
  if (args.layout != nullptr) check_alltoallv_self(args.comm, *args.layout);
  args.seq = detail::CollectiveAccess(args.comm).begin_collective();
  const AlgorithmEntry& algorithm = choose_algorithm(args, requested);
  args.algorithm = algorithm_id(algorithm);
  collective_op(args.op).steps(args, algorithm);
}

}  // namespace braid
