// braid-from-mpi-rank: an MPI program that builds braid communicators with braid::mpi::from_mpi
// (tests/mpi/mpirun_test.cc starts it under mpirun), in one job to pay mpirun's start-up once:
//   world   from_mpi(MPI_COMM_WORLD): same rank and size as MPI, braid's hosts as MPI's nodes
//           (MPI_COMM_TYPE_SHARED), and braid's allreduce equals MPI_Allreduce bit for bit on
//           integer data (i32, i64 x sum, min, max, prod x 1 and 4099 elements, not a multiple
//           of the size), for the tuner's choice and hierarchical (where the world allows).
//   split   from_mpi of MPI_Comm_split(parity of the rank, reversed key): a braid communicator
//           of exactly that group, in the split's order, whose allreduce equals MPI's there
//           (ring); MPI_COMM_NULL (MPI_UNDEFINED) and an uninitialised MPI
//           are clear InvalidArguments.
// With the argument "store-failure" (run with BRAID_MASTER_ADDR naming no host): rank 0 cannot
// start the store, and every rank raises an error at once, the others naming rank 0.
// Prints "PASS from_mpi rank R (N checks)" or "FAIL ..." lines; exit 0 when every rank passed.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "braid/base/error.h"
#include "braid/collectives/collectives.h"
#include "braid/mpi/from_mpi.h"

namespace {

int g_failures = 0;
int g_checks = 0;
int g_world_rank = 0;

void check(bool ok, const std::string& what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  std::printf("FAIL from_mpi rank %d: %s\n", g_world_rank, what.c_str());
}

MPI_Op mpi_op(braid::ReduceOp op) {
  switch (op) {
    case braid::ReduceOp::kSum: return MPI_SUM;
    case braid::ReduceOp::kMin: return MPI_MIN;
    case braid::ReduceOp::kMax: return MPI_MAX;
    default: return MPI_PROD;
  }
}

// Values that differ by rank, index and op; small for prod, so no signed overflow in MPI's sum
// or product (undefined in C), negative ones for min and max.
template <typename T>
std::vector<T> input(int rank, std::int64_t count, braid::ReduceOp op) {
  std::vector<T> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t mixed = (i * 2654435761LL + rank * 40503LL) % 200003 - 100001;
    v[static_cast<std::size_t>(i)] = static_cast<T>(op == braid::ReduceOp::kProd ? 1 + (mixed & 1) : mixed);
  }
  return v;
}

template <typename T>
void compare_allreduce(braid::Communicator& comm, MPI_Comm mpi, braid::DType dtype, MPI_Datatype mpi_type,
                       const std::string& algorithm) {
  for (braid::ReduceOp op : {braid::ReduceOp::kSum, braid::ReduceOp::kMin, braid::ReduceOp::kMax, braid::ReduceOp::kProd}) {
    for (std::int64_t count : {1, 4099}) {
      const std::vector<T> send = input<T>(comm.rank(), count, op);
      std::vector<T> braid_out(send.size());
      std::vector<T> mpi_out(send.size());
      braid::allreduce(comm, send.data(), braid_out.data(), count, dtype, op, {.algorithm = algorithm});
      MPI_Allreduce(send.data(), mpi_out.data(), static_cast<int>(count), mpi_type, mpi_op(op), mpi);
      check(std::memcmp(braid_out.data(), mpi_out.data(), send.size() * sizeof(T)) == 0,
            "allreduce " + std::string(braid::dtype_name(dtype)) + " " + std::string(braid::reduce_op_name(op)) +
                " count " + std::to_string(count) + " algorithm '" + algorithm + "' differs from MPI_Allreduce");
    }
  }
}

// Each comparison costs a round trip of both libraries across the emulated hosts on a loaded
// 2-core machine, so each communicator runs a few algorithms (the grid of every algorithm is
// braid-test-rank's, against its own reference).
void compare_all(braid::Communicator& comm, MPI_Comm mpi, const std::vector<std::string>& algorithms) {
  for (const std::string& algorithm : algorithms) {
    try {
      compare_allreduce<std::int32_t>(comm, mpi, braid::DType::kI32, MPI_INT32_T, algorithm);
      compare_allreduce<std::int64_t>(comm, mpi, braid::DType::kI64, MPI_INT64_T, algorithm);
    } catch (const braid::InvalidArgument& e) {  // an algorithm that refuses this world (hierarchical on one host)
      std::printf("from_mpi rank %d: algorithm %s skipped: %s\n", g_world_rank, algorithm.c_str(), e.what());
    }
  }
}

int node_size(MPI_Comm comm) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int size = 0;
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return size;
}

void scenario_world() {
  braid::Communicator comm = braid::mpi::from_mpi(MPI_COMM_WORLD);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  check(comm.rank() == g_world_rank && comm.size() == size, "rank or size differ from MPI_COMM_WORLD's");
  const int local = node_size(MPI_COMM_WORLD);
  check(comm.local_size() == local && comm.topology().num_hosts() == size / local,
        "braid sees " + std::to_string(comm.topology().num_hosts()) + " hosts of " + std::to_string(comm.local_size()) +
            " ranks; MPI " + std::to_string(size / local) + " of " + std::to_string(local));
  std::printf("from_mpi rank %d: %d hosts, local rank %d of %d\n", g_world_rank, comm.topology().num_hosts(),
              comm.local_rank(), comm.local_size());
  compare_all(comm, MPI_COMM_WORLD, {"", "hierarchical"});
}

template <typename Call>
void expect_invalid_argument(const Call& call, const std::string& needle, const std::string& what) {
  try {
    call();
    check(false, what + ": no error");
  } catch (const braid::InvalidArgument& e) {
    check(std::string(e.what()).find(needle) != std::string::npos, what + ": unclear message: " + e.what());
  }
}

void scenario_split() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, g_world_rank % 2, -g_world_rank, &half);
  int half_rank = 0;
  int half_size = 0;
  MPI_Comm_rank(half, &half_rank);
  MPI_Comm_size(half, &half_size);
  braid::Communicator comm = braid::mpi::from_mpi(half);
  check(comm.rank() == half_rank && comm.size() == half_size, "rank or size differ from the split's");
  // Who is in the group, in braid's rank order: every member's world rank, gathered by braid.
  std::vector<std::int32_t> members(static_cast<std::size_t>(comm.size()));
  const std::int32_t mine = g_world_rank;
  braid::allgather(comm, &mine, members.data(), 1, braid::DType::kI32);
  for (int r = 0; r < comm.size(); ++r) {
    // The split's key reverses the order: its rank r is the r-th largest world rank of this parity.
    const int expected = (size - 1 - (size - 1 - g_world_rank % 2) % 2) - 2 * r;
    check(members[static_cast<std::size_t>(r)] == expected,
          "braid rank " + std::to_string(r) + " is world rank " + std::to_string(members[static_cast<std::size_t>(r)]) +
              ", expected " + std::to_string(expected));
  }
  compare_all(comm, half, {"ring"});
  MPI_Comm_free(&half);

  MPI_Comm none = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, g_world_rank == 0 ? MPI_UNDEFINED : 0, 0, &none);
  if (g_world_rank == 0) {
    expect_invalid_argument([&] { braid::mpi::from_mpi(none); }, "MPI_COMM_NULL", "from_mpi(MPI_COMM_NULL)");
  } else {
    braid::Communicator rest = braid::mpi::from_mpi(none);
    check(rest.size() == size - 1, "the group without rank 0 has size " + std::to_string(rest.size()));
    MPI_Comm_free(&none);
  }
}

}  // namespace

// Rank 0 fails to start its store: everyone must fail (not wait), and the others say why.
void scenario_store_failure() {
  try {
    braid::mpi::from_mpi(MPI_COMM_WORLD);
    check(false, "from_mpi succeeded although rank 0 cannot start its store");
  } catch (const braid::Error& e) {
    const bool named = g_world_rank == 0 || std::string(e.what()).find("rank 0 could not start the rendezvous store") !=
                                                std::string::npos;
    check(named, std::string("rank 0's failure is not named: ") + e.what());
    std::printf("from_mpi rank %d: %s\n", g_world_rank, e.what());
  }
}

int main(int argc, char** argv) {
  const bool store_failure = argc > 1 && std::string(argv[1]) == "store-failure";
  // Before MPI_Init: from_mpi must refuse, not crash inside MPI.
  expect_invalid_argument([] { braid::mpi::from_mpi(MPI_COMM_WORLD); }, "MPI is not initialised",
                          "from_mpi before MPI_Init");
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
  try {
    if (store_failure) {
      scenario_store_failure();
    } else {
      scenario_world();
      scenario_split();
    }
  } catch (const braid::Error& e) {
    check(false, std::string("braid error: ") + e.what());
  }
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_failures == 0) std::printf("PASS from_mpi rank %d (%d checks)\n", g_world_rank, g_checks);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
