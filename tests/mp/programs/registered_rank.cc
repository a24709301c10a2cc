// braid-registered-rank SCENARIO: the rank program of registered_memory_test.cc, for the
// zero-copy allreduce on registered memory (alloc_registered). Prints "JOBID <id>" first,
// then per scenario "OK <scenario> rank R" or "FAIL <scenario> rank R: why".
//
//   grid:     every dtype, counts 0 / uneven / several chunks, in place and not, all ranks
//             registered: the exact sum, bit for bit the rank-order f32 sum, and the
//             workspace must have mapped peer arenas (the zero-copy path ran).
//   others:   allgather, broadcast and reduce_scatter, registered (in place and not) and with
//             rank 0 unregistered, at counts 0 / small / several chunks.
//   mixed:    rank 0's buffers (or only every recv) registered, the rest not: right results;
//             the single-copy path where the workspace allows it (registered peers read through
//             their mapped arenas, the others out of their processes), else the staged path on
//             every rank and no peer arena mapped.
//   single-copy: allreduce single_copy on unregistered buffers: every dtype, counts from its
//             16 KiB threshold to several chunks, uneven, in place and not: the exact sum, bit
//             for bit the rank-order f32 sum; then allgather (in place and not), alltoall,
//             alltoallv, reduce_scatter (in place and not) and broadcast below and inside their
//             single-copy band; the paths must have run (bytes read from peers) unless Yama's ptrace_scope forbids it, and then the
//             staged path must have.
//   single-copy-refused: rank 0 sets BRAID_CROSS_MEMORY=0 for itself alone: every rank agrees
//             on the staged path (no byte read from a peer), right results, the other
//             operations too.
//   realloc:  every call frees and reallocates its buffers (other sizes, reused blocks).
//   mismatch: the last rank calls with one element more: Mismatch on every rank, no hang.
//   register: register_memory accepts alloc's memory and refuses the heap (InvalidArgument).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "braid/base/dtype.h"
#include "braid/base/env.h"
#include "braid/base/error.h"
#include "braid/base/half.h"
#include "braid/collectives/collectives.h"
#include "braid/collectives/shm_workspace.h"
#include "braid/comm/communicator.h"
#include "braid/comm/communicator_internal.h"
#include "braid/comm/registered_buffer.h"

namespace {

using braid::Communicator;
using braid::DType;
using braid::RegisteredBuffer;
using braid::alloc_registered;
using braid::register_memory;
using braid::ReduceOp;

int g_failures = 0;

void fail(const Communicator& comm, const std::string& scenario, const std::string& why) {
  std::printf("FAIL %s rank %d: %s\n", scenario.c_str(), comm.rank(), why.c_str());
  ++g_failures;
}

braid::ShmWorkspace* workspace(Communicator& comm) {
  return braid::detail::CollectiveAccess(comm).find_attachment<braid::ShmWorkspace>();
}

std::size_t arenas_mapped(Communicator& comm) {
  auto* ws = workspace(comm);
  return ws == nullptr ? 0 : ws->registered_arenas_mapped();
}

std::uint64_t single_copy_bytes(Communicator& comm) {
  auto* ws = workspace(comm);
  return ws == nullptr ? 0 : ws->single_copy_bytes();
}

bool single_copy_agreed(Communicator& comm) {
  auto* ws = workspace(comm);
  return ws != nullptr && ws->single_copy();
}

// Whether this kernel lets a process read its siblings' memory: Yama's ptrace_scope 0 or no
// Yama at all (ptrace_scope 1 allows only descendants, 2 and 3 less).
bool kernel_allows_single_copy() {
  std::FILE* f = std::fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
  if (f == nullptr) return true;
  int scope = 0;
  const bool read = std::fscanf(f, "%d", &scope) == 1;
  std::fclose(f);
  return read && scope == 0;
}

// Small integers (exact in every dtype, u8 sums included): rank q's element i.
int small_value(int rank, std::int64_t i) { return static_cast<int>((i * 7 + rank * 3) % 4); }

void put(std::byte* p, DType dtype, std::int64_t i, int v) {
  switch (dtype) {
    case DType::kF32: reinterpret_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::kF64: reinterpret_cast<double*>(p)[i] = v; break;
    case DType::kF16: reinterpret_cast<std::uint16_t*>(p)[i] = braid::float_to_half(static_cast<float>(v)); break;
    case DType::kBF16: reinterpret_cast<std::uint16_t*>(p)[i] = braid::float_to_bf16(static_cast<float>(v)); break;
    case DType::kI32: reinterpret_cast<std::int32_t*>(p)[i] = v; break;
    case DType::kI64: reinterpret_cast<std::int64_t*>(p)[i] = v; break;
    case DType::kU8: reinterpret_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(v); break;
  }
}

// Fills `send` with rank `rank`'s inputs and `want` with the sum over ranks, in `dtype`.
void fill(int rank, int ranks, DType dtype, std::int64_t count, std::byte* send, std::byte* want) {
  for (std::int64_t i = 0; i < count; ++i) {
    int sum = 0;
    for (int q = 0; q < ranks; ++q) sum += small_value(q, i);
    put(send, dtype, i, small_value(rank, i));
    put(want, dtype, i, sum);
  }
}

// One allreduce on buffers that are registered or not (by `algorithm`, or the tuner's
// choice); checks the result.
void check_allreduce(Communicator& comm, const std::string& scenario, DType dtype, std::int64_t count, bool in_place,
                     bool register_send, bool register_recv, const std::string& algorithm = "") {
  const std::size_t bytes = static_cast<std::size_t>(count) * braid::dtype_size(dtype);
  RegisteredBuffer rs = alloc_registered(comm, bytes), rr = alloc_registered(comm, bytes);
  std::vector<std::byte> hs(bytes), hr(bytes), want(bytes);
  std::byte* send = register_send ? static_cast<std::byte*>(rs.data()) : hs.data();
  std::byte* recv = in_place ? send : register_recv ? static_cast<std::byte*>(rr.data()) : hr.data();
  fill(comm.rank(), comm.size(), dtype, count, send, want.data());
  braid::allreduce(comm, send, recv, count, dtype, ReduceOp::kSum, {.algorithm = algorithm});
  if (bytes > 0 && std::memcmp(recv, want.data(), bytes) != 0) {
    fail(comm, scenario, std::string("wrong sum for ") + std::string(braid::dtype_name(dtype)) + " count " + std::to_string(count) +
                             (in_place ? " in place" : ""));
  }
}

// Rank-order f32 sums that another order would change (a huge value on rank 0), on registered
// buffers or (`heap`) on ordinary ones.
void check_rank_order(Communicator& comm, std::int64_t count, bool in_place, bool heap = false,
                      const std::string& algorithm = "") {
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  RegisteredBuffer s = alloc_registered(comm, bytes), r = alloc_registered(comm, bytes);
  std::vector<float> hs(static_cast<std::size_t>(count)), hr(hs.size());
  auto* send = heap ? hs.data() : static_cast<float*>(s.data());
  float* recv = in_place ? send : heap ? hr.data() : static_cast<float*>(r.data());
  std::vector<float> want(static_cast<std::size_t>(count));
  auto input = [](int rank, std::int64_t i) {
    return rank == 0 ? 1.0e8f + static_cast<float>(i % 97) : 1.0f + static_cast<float>((i * 7 + rank * 13) % 31) / 8.0f;
  };
  for (std::int64_t i = 0; i < count; ++i) {
    send[i] = input(comm.rank(), i);
    float sum = input(0, i);
    for (int q = 1; q < comm.size(); ++q) sum += input(q, i);
    want[static_cast<std::size_t>(i)] = sum;
  }
  braid::allreduce(comm, send, recv, count, DType::kF32, ReduceOp::kSum, {.algorithm = algorithm});
  if (std::memcmp(recv, want.data(), bytes) != 0) fail(comm, "grid", "f32 result is not the rank-order sum");
}

void grid(Communicator& comm) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8}) {
    for (bool in_place : {false, true}) check_allreduce(comm, "grid", dtype, 100003, in_place, true, true);
  }
  for (std::int64_t count : {0LL, 5000LL, 65537LL, 1000003LL}) {
    for (bool in_place : {false, true}) check_allreduce(comm, "grid", DType::kF32, count, in_place, true, true);
  }
  for (bool in_place : {false, true}) check_rank_order(comm, 300007, in_place);
  if (arenas_mapped(comm) == 0) fail(comm, "grid", "no peer arena mapped: the zero-copy path never ran");
}

// allgather, broadcast and reduce_scatter on registered buffers (in place and not) and, for
// each, one call with rank 0's buffers unregistered (the staged path on every rank).
void others(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  for (std::int64_t count : {0LL, 3001LL, 100003LL}) {
    for (int variant = 0; variant < 3; ++variant) {  // 0: registered, 1: in place, 2: rank 0 unregistered
      const bool reg = !(variant == 2 && r == 0), in_place = variant == 1;
      const std::size_t block = static_cast<std::size_t>(count) * sizeof(float), all = block * static_cast<std::size_t>(n);
      RegisteredBuffer rs = alloc_registered(comm, all), rr = alloc_registered(comm, all);
      std::vector<float> hs(static_cast<std::size_t>(count) * n + 1), hr(hs.size());
      auto* send = reg ? static_cast<float*>(rs.data()) : hs.data();
      auto* recv = reg ? static_cast<float*>(rr.data()) : hr.data();
      const std::string what = " count " + std::to_string(count) + " variant " + std::to_string(variant);
      // allgather: block q of recv is rank q's input, q * 1000 + i.
      float* ag_send = in_place ? recv + static_cast<std::size_t>(count) * r : send;
      for (std::int64_t i = 0; i < count; ++i) ag_send[i] = static_cast<float>(r * 1000 + i % 1000);
      braid::allgather(comm, ag_send, recv, count, DType::kF32);
      for (int q = 0; q < n; ++q) {
        for (std::int64_t i = 0; i < count; ++i) {
          if (recv[q * count + i] != static_cast<float>(q * 1000 + i % 1000)) {
            fail(comm, "others", "allgather" + what);
            q = n;
            break;
          }
        }
      }
      // broadcast from the last rank.
      for (std::int64_t i = 0; i < count; ++i) recv[i] = r == n - 1 ? static_cast<float>(i % 777) : -1.0f;
      braid::broadcast(comm, recv, count, DType::kF32, n - 1);
      for (std::int64_t i = 0; i < count; ++i) {
        if (recv[i] != static_cast<float>(i % 777)) {
          fail(comm, "others", "broadcast" + what);
          break;
        }
      }
      // reduce_scatter: element i of block b on rank q is q + b + i % 5.
      for (int b = 0; b < n; ++b) {
        for (std::int64_t i = 0; i < count; ++i) send[b * count + i] = static_cast<float>(r + b + i % 5);
      }
      float* rs_recv = in_place ? send : recv;
      braid::reduce_scatter(comm, send, rs_recv, count, DType::kF32, ReduceOp::kSum);
      for (std::int64_t i = 0; i < count; ++i) {
        const float want = static_cast<float>(n * (n - 1) / 2 + n * (r + i % 5));
        if (rs_recv[i] != want) {
          fail(comm, "others", "reduce_scatter" + what);
          break;
        }
      }
    }
  }
  if (arenas_mapped(comm) == 0) fail(comm, "others", "no peer arena mapped: no zero-copy path ran");
}

void mixed(Communicator& comm) {
  const bool first = comm.rank() == 0;
  check_allreduce(comm, "mixed", DType::kF32, 100003, false, first, first);     // rank 0 only
  check_allreduce(comm, "mixed", DType::kF32, 100003, false, !first, !first);   // all but rank 0
  check_allreduce(comm, "mixed", DType::kF32, 100003, false, false, true);      // every recv, no send
  check_allreduce(comm, "mixed", DType::kI32, 100003, true, first, first);      // in place
  if (single_copy_agreed(comm)) {
    if (single_copy_bytes(comm) == 0) fail(comm, "mixed", "single copy agreed, but no byte was read from a peer");
  } else if (arenas_mapped(comm) != 0) {
    fail(comm, "mixed", "a peer arena was mapped: some rank took the zero-copy path");
  }
}

// alltoallv with MoE-skewed counts in layouts with gaps and blocks in reverse rank order, so
// that a wrong posted displacement shows. Dispatch-shaped (`combine` false): rank 0 receives
// 3 base from every rank, rank d > 0 base / (d + 1), rank 1 nothing from rank 0, so the
// single-copy path pushes (every rank writes its blocks into its peers); combine-shaped: the
// transpose, which pulls. Element j of the block from s to d is s * 100 + d + j % 7. Every
// block between two ranks must be copied once, by one of them, on the single-copy path, and
// by neither on the staged one.
void alltoallv_on_heap(Communicator& comm, std::int64_t base, bool combine) {
  const int n = comm.size(), r = comm.rank();
  auto dispatch = [&](int s, int d) -> std::int64_t { return d == 0 ? 3 * base : (s == 0 && d == 1 ? 0 : base / (d + 1)); };
  auto count = [&](int s, int d) { return combine ? dispatch(d, s) : dispatch(s, d); };
  auto place = [&](auto count_of, std::vector<std::int64_t>& counts, std::vector<std::int64_t>& displs) {
    std::int64_t next = 0;
    for (int p = n - 1; p >= 0; --p) {
      counts[static_cast<std::size_t>(p)] = count_of(p);
      displs[static_cast<std::size_t>(p)] = next + 3;
      next += 3 + count_of(p);
    }
    return next;
  };
  std::vector<std::int64_t> sc(n), sd(n), rc(n), rd(n);
  std::vector<float> send(static_cast<std::size_t>(place([&](int p) { return count(r, p); }, sc, sd)), -1.0f);
  std::vector<float> recv(static_cast<std::size_t>(place([&](int p) { return count(p, r); }, rc, rd)), -2.0f);
  for (int p = 0; p < n; ++p) {
    for (std::int64_t j = 0; j < sc[p]; ++j) send[sd[p] + j] = static_cast<float>(r * 100 + p + j % 7);
  }
  const std::uint64_t before = single_copy_bytes(comm);
  braid::alltoallv(comm, send.data(), sc.data(), sd.data(), recv.data(), rc.data(), rd.data(), DType::kF32);
  const std::string what = std::string("alltoallv ") + (combine ? "combine" : "dispatch") + " base " + std::to_string(base);
  // Single copy runs from a mean of 64 KiB received per rank, where the kernel allows it.
  std::int64_t moved = 0, between_ranks = 0;
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      moved += count(s, d);
      between_ranks += s == d ? 0 : count(s, d);
    }
  }
  const bool single = single_copy_agreed(comm) && moved * 4 / n >= (64 << 10);
  auto copied = static_cast<std::int64_t>(single_copy_bytes(comm) - before);
  braid::allreduce(comm, &copied, &copied, 1, DType::kI64, ReduceOp::kSum);
  if (copied != (single ? between_ranks * 4 : 0)) {
    fail(comm, "single-copy", what + ": " + std::to_string(copied) + " bytes copied between ranks, not " +
                                  std::to_string(single ? between_ranks * 4 : 0));
  }
  for (int p = 0; p < n; ++p) {
    for (std::int64_t j = 0; j < rc[p]; ++j) {
      if (recv[rd[p] + j] != static_cast<float>(p * 100 + r + j % 7)) {
        fail(comm, "single-copy", what + " from rank " + std::to_string(p));
        return;
      }
    }
    if (recv[rd[p] - 1] != -2.0f) fail(comm, "single-copy", what + " wrote into a gap");
  }
}

// allgather (in place and not), alltoall, alltoallv and broadcast on ordinary memory, at block counts below,
// inside and (4 ranks' alltoall) near the top of the single-copy band; checks every result.
void movement_on_heap(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  for (std::int64_t count : {3001LL, 100003LL, 1000003LL}) {
    const std::string what = " count " + std::to_string(count);
    const std::size_t all = static_cast<std::size_t>(count) * static_cast<std::size_t>(n);
    std::vector<float> send(all), recv(all);
    // 0: separate buffers; 1: in place (MPI_IN_PLACE: the send at its own block); 2: every
    // send at the start of its recv (host_striped's allgather), which must stage.
    for (int layout : {0, 1, 2}) {
      float* ag_send = layout == 0 ? send.data() : layout == 1 ? recv.data() + static_cast<std::size_t>(count) * r : recv.data();
      for (std::int64_t i = 0; i < count; ++i) ag_send[i] = static_cast<float>(r * 1000 + i % 1000);
      braid::allgather(comm, ag_send, recv.data(), count, DType::kF32);
      for (std::size_t i = 0; i < all; ++i) {
        const auto q = static_cast<std::int64_t>(i) / count, j = static_cast<std::int64_t>(i) % count;
        if (recv[i] != static_cast<float>(q * 1000 + j % 1000)) {
          fail(comm, "single-copy", "allgather" + what + " layout " + std::to_string(layout));
          break;
        }
      }
    }
    // alltoall: element j of the block rank r sends to rank q is r * 100 + q + j % 7.
    for (std::size_t i = 0; i < all; ++i) {
      const auto q = static_cast<std::int64_t>(i) / count, j = static_cast<std::int64_t>(i) % count;
      send[i] = static_cast<float>(r * 100 + q + j % 7);
    }
    braid::alltoall(comm, send.data(), recv.data(), count, DType::kF32);
    for (std::size_t i = 0; i < all; ++i) {
      const auto q = static_cast<std::int64_t>(i) / count, j = static_cast<std::int64_t>(i) % count;
      if (recv[i] != static_cast<float>(q * 100 + r + j % 7)) {
        fail(comm, "single-copy", "alltoall" + what);
        break;
      }
    }
    for (bool combine : {false, true}) alltoallv_on_heap(comm, count / n, combine);
    // reduce_scatter, out of place (single copy inside its band) and in place (send == recv:
    // the result on block 0; every rank stages): element j of rank q's block b is
    // q * 10 + b + j % 5, so block r's sum is exact in f32.
    for (bool in_place : {false, true}) {
      for (std::size_t i = 0; i < all; ++i) {
        send[i] = static_cast<float>(r * 10 + static_cast<std::int64_t>(i) / count + static_cast<std::int64_t>(i) % count % 5);
      }
      float* out = in_place ? send.data() : recv.data();
      braid::reduce_scatter(comm, send.data(), out, count, DType::kF32, ReduceOp::kSum);
      for (std::int64_t j = 0; j < count; ++j) {
        const float want = static_cast<float>(10 * n * (n - 1) / 2 + n * (r + j % 5));
        if (out[j] != want) {
          fail(comm, "single-copy", "reduce_scatter" + what + (in_place ? " in place" : ""));
          break;
        }
      }
    }
    for (std::int64_t i = 0; i < count; ++i) recv[i] = r == n - 1 ? static_cast<float>(i % 777) : -1.0f;
    braid::broadcast(comm, recv.data(), count, DType::kF32, n - 1);
    for (std::int64_t i = 0; i < count; ++i) {
      if (recv[i] != static_cast<float>(i % 777)) {
        fail(comm, "single-copy", "broadcast" + what);
        break;
      }
    }
  }
}

void single_copy(Communicator& comm) {
  const std::string algo = "single_copy";
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8}) {
    for (bool in_place : {false, true}) check_allreduce(comm, "single-copy", dtype, 100003, in_place, false, false, algo);
  }
  // 4096 f32: the tuner's 16 KiB threshold; 32768 + 7: one slice and a ragged rest per rank.
  for (std::int64_t count : {4096LL, 32775LL, 65537LL, 1000003LL}) {
    for (bool in_place : {false, true}) check_allreduce(comm, "single-copy", DType::kF32, count, in_place, false, false);
  }
  for (bool in_place : {false, true}) check_rank_order(comm, 300007, in_place, /*heap=*/true, algo);
  const std::uint64_t after_allreduce = single_copy_bytes(comm);
  movement_on_heap(comm);
  const bool allowed = kernel_allows_single_copy();
  if (allowed && single_copy_bytes(comm) == after_allreduce) {
    fail(comm, "single-copy", "allgather, alltoall, alltoallv, reduce_scatter and broadcast read no byte from a peer");
  }
  if (single_copy_agreed(comm) != allowed) {
    fail(comm, "single-copy", std::string("the workspace ") + (allowed ? "refused" : "agreed to") +
                                  " single copy where Yama's ptrace_scope " + (allowed ? "allows" : "forbids") + " it");
  }
  if (allowed && single_copy_bytes(comm) == 0) fail(comm, "single-copy", "no byte was read from a peer");
  if (!allowed && single_copy_bytes(comm) != 0) fail(comm, "single-copy", "bytes read from a peer on the staged path");
}

void single_copy_refused(Communicator& comm) {
  for (std::int64_t count : {4096LL, 100003LL}) {
    for (bool in_place : {false, true}) check_allreduce(comm, "single-copy-refused", DType::kF32, count, in_place, false, false);
  }
  movement_on_heap(comm);
  if (single_copy_agreed(comm)) fail(comm, "single-copy-refused", "the workspace agreed to single copy");
  if (single_copy_bytes(comm) != 0) fail(comm, "single-copy-refused", "bytes read from a peer");
}

void realloc_between_calls(Communicator& comm) {
  for (int i = 0; i < 6; ++i) {
    const std::int64_t count = 40000 + 30000 * (i % 3); // sizes come back: blocks reused
    check_allreduce(comm, "realloc", DType::kF32, count, i % 2 == 1, true, true);
  }
  if (arenas_mapped(comm) == 0) fail(comm, "realloc", "no peer arena mapped");
}

void mismatch(Communicator& comm) {
  const std::int64_t count = 100000 + (comm.rank() == comm.size() - 1 ? 1 : 0);
  RegisteredBuffer s = alloc_registered(comm, static_cast<std::size_t>(count) * 4), r = alloc_registered(comm, s.size());
  try {
    braid::allreduce(comm, s.data(), r.data(), count, DType::kF32, ReduceOp::kSum);
    fail(comm, "mismatch", "no error");
  } catch (const braid::Mismatch& e) {
    std::printf("MISMATCH rank %d: %s\n", comm.rank(), e.what());
  }
}

void register_scenario(Communicator& comm) {
  RegisteredBuffer b = alloc_registered(comm, 10000);
  register_memory(comm, static_cast<std::byte*>(b.data()) + 100, 5000);
  std::vector<char> heap(1000);
  try {
    register_memory(comm, heap.data(), heap.size());
    fail(comm, "register", "heap memory accepted");
  } catch (const braid::InvalidArgument& e) {
    if (std::string(e.what()).find("not registered memory") == std::string::npos) fail(comm, "register", e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: braid-registered-rank grid|others|mixed|realloc|mismatch|register|single-copy|single-copy-refused\n");
    return 2;
  }
  const std::string scenario = argv[1];
  // Refused by rank 0 alone: its own environment, set before anything reads it.
  const auto rank = braid::env::get(braid::env::kRank);
  if (scenario == "single-copy-refused" && rank && *rank == "0") ::setenv("BRAID_CROSS_MEMORY", "0", 1);
  try {
    Communicator comm = Communicator::init();
    if (auto job = braid::env::get(braid::env::kJobId)) std::printf("JOBID %s\n", job->c_str());
    if (scenario == "grid") grid(comm);
    else if (scenario == "mixed") mixed(comm);
    else if (scenario == "others") others(comm);
    else if (scenario == "realloc") realloc_between_calls(comm);
    else if (scenario == "mismatch") mismatch(comm);
    else if (scenario == "register") register_scenario(comm);
    else if (scenario == "single-copy") single_copy(comm);
    else if (scenario == "single-copy-refused") single_copy_refused(comm);
    else return 2;
  } catch (const braid::Error& e) {
    std::printf("FAIL %s: %s\n", scenario.c_str(), e.what());
    return 3;
  }
  if (g_failures == 0) std::printf("OK %s\n", scenario.c_str());
  std::fflush(stdout);
  return g_failures == 0 ? 0 : 1;
}
