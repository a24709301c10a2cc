#include "fault_matrix.h"

namespace braid::testing {

const std::vector<MatrixRow>& matrix_rows() {
  static const std::vector<MatrixRow> rows{
      {"shm_direct", "allreduce", "shm_direct"},     {"shm_direct", "allgather", "shm_direct"},
      {"shm_direct", "reduce_scatter", "shm_direct"}, {"shm_direct", "broadcast", "shm_direct"},
      {"shm_direct", "alltoall", "shm_direct"},    {"shm_direct", "allreduce", "single_copy"},
      {"shm_direct", "alltoallv", "shm_direct"},  // 4 ranks x 16 KiB blocks: its single-copy path
      {"ring", "allreduce", "ring"},                 {"ring", "allgather", "ring"},
      {"ring", "reduce_scatter", "ring"},            {"ring", "broadcast", "chain"},
      {"tree", "allreduce", "tree"},                 {"tree", "broadcast", "binomial"},
      {"tree", "reduce", "binomial"},                {"tree", "gather", "binomial"},
      {"tree", "scatter", "binomial"},
      {"recursive", "allreduce", "recursive_doubling"}, {"recursive", "allreduce", "rabenseifner"},
      {"recursive", "allgather", "recursive_doubling"}, {"recursive", "allgather", "bruck"},
      {"recursive", "reduce_scatter", "recursive_halving"},
      {"pairwise", "alltoall", "pairwise"},          {"pairwise", "alltoallv", "pairwise"},
      {"pairwise", "alltoall", "scattered"},
      {"pairwise", "gather", "linear"},              {"pairwise", "scatter", "linear"},
      {"hierarchical", "allreduce", "hierarchical", 2}, {"hierarchical", "allreduce", "host_striped", 2},
      // 9 MiB: host_striped in pieces, a stripe's allreduce in flight on its queue at the fault
      {"hierarchical", "allreduce", "host_striped", 2, 9 << 18},
      {"compressed", "compressed", "int8"},
  };
  return rows;
}

const std::vector<MatrixFault>& matrix_faults() {
  // BRAID_TIMEOUT is 1 s in the matrix: a stall of 2 s outlasts it.
  static const std::vector<MatrixFault> faults{
      {"kill", "kill", "PeerLost", false, false},   {"freeze", "freeze", "Timeout", false, true},
      {"stall", "stall:2", "Timeout", true, true},  {"flip", "flip", "Corrupt", true, false},
      {"close", "close", "PeerLost", true, false},
  };
  return faults;
}

const std::vector<std::string>& matrix_transports() {
  static const std::vector<std::string> transports{"shm", "tcp"};
  return transports;
}

std::string missing_reason(const MatrixRow& row, const MatrixFault& fault, const std::string& transport) {
  if (row.family == "shm_direct" && transport == "tcp") return "shm_direct needs every rank on one host over shm";
  if (row.family == "shm_direct" && fault.name == "flip") return "shm_direct sends no frame to flip";
  // Its alltoallv and allgather take shm_direct on one host (tuner.cc), so the armed flip
  // waited for the next frame, the scenario's closing barrier, where a dissemination barrier
  // lets the ranks that never wait on the corrupted frame finish without an error.
  if (row.family == "compressed" && fault.name == "flip" && transport == "shm") {
    return "the compressed allreduce sends no frame to flip on one host (shm_direct inside)";
  }
  if (fault.name == "close" && transport == "shm" && row.emulated_hosts == 1) return "no TCP connection to close";
  return "";
}

std::vector<MatrixCell> matrix_cells(bool full) {
  std::vector<MatrixCell> cells;
  const auto& rows = matrix_rows();
  const auto& faults = matrix_faults();
  const auto& transports = matrix_transports();
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    for (int f = 0; f < static_cast<int>(faults.size()); ++f) {
      std::vector<int> existing;
      for (int t = 0; t < static_cast<int>(transports.size()); ++t) {
        if (missing_reason(rows[r], faults[f], transports[t]).empty()) existing.push_back(t);
      }
      if (full) {
        for (int t : existing) cells.push_back({r, f, t});
      } else if (existing.size() == 1) {
        cells.push_back({r, f, existing[0]});
      } else if (existing.size() == 2) {
        cells.push_back({r, f, (r + f) % 2});
      }
    }
  }
  return cells;
}

}  // namespace braid::testing
