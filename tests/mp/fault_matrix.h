// The cells of the fault matrix (fault_matrix_test.cc): every collective x each algorithm
// family the tuner can pick x every injected fault (BRAID_FAULT) x shm and tcp, which cells
// exist and why not, the error each one must end in, and the deterministic subset CTest runs.
// Pure data and arithmetic, so the matrix can be printed and counted without running it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace braid::testing {

struct MatrixRow {
  std::string family;     // shm_direct, ring, tree, recursive, pairwise, hierarchical, compressed
  std::string op;         // BRAID_TEST_OP of the fault-matrix scenario ("compressed": int8 allreduce)
  std::string algorithm;  // BRAID_TEST_ALGO (compressed: the codec)
  int emulated_hosts = 1; // > 1: ranks claim r % hosts as host, so shm and tcp mix
  std::int64_t block = 0; // f32 elements per rank (per block); 0: the scenario's 4096
};

struct MatrixFault {
  std::string name;     // the column's name
  std::string kind;     // BRAID_FAULT's kind=
  std::string error;    // the error class every rank must report (error_kind_name)
  bool victim_survives; // stall, flip, close: the victim must report an error too
  bool waits_timeout;   // freeze, stall: the survivors learn of it at BRAID_TIMEOUT
};

struct MatrixCell {
  int row;
  int fault;
  int transport;  // index into matrix_transports()
};

const std::vector<MatrixRow>& matrix_rows();
const std::vector<MatrixFault>& matrix_faults();
// "shm" (BRAID_TRANSPORT=auto: shared memory within a host) and "tcp" (TCP everywhere).
const std::vector<std::string>& matrix_transports();

// Why the cell does not exist ("" when it does): shm_direct needs shared memory, a flip needs
// a frame (shm_direct, and the compressed allreduce on one host, move none), a close needs a
// TCP connection.
std::string missing_reason(const MatrixRow& row, const MatrixFault& fault, const std::string& transport);

// Every cell that exists, or the CTest subset: each (row, fault) once, on transport
// (row + fault) % 2 where both exist, so every row, fault and transport appears, every
// (row, fault) pair, and both transports for every row and every fault.
std::vector<MatrixCell> matrix_cells(bool full);

}  // namespace braid::testing
