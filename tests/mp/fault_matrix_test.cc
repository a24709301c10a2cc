// The fault matrix (issue 21): every collective x algorithm family x injected fault
// (BRAID_FAULT: kill, freeze, stall, flip, close) x shm and tcp, 4 real ranks through
// braid-run. Each cell must end with the right named error on every rank that is still alive,
// within 5 s (freeze and stall: BRAID_TIMEOUT, 1 s here, plus the same slack), braid-run
// exiting non-zero with the victim named, no rank process left and nothing in /dev/shm.
//
// CTest runs the subset of fault_matrix.h (every (row, fault) pair once, transports
// alternating); BRAID_FAULT_MATRIX=full runs every cell (scripts/fault_matrix.sh). The test
// prints the matrix with each cell's time to error, and the counts docs/reliability.md keeps.
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fault_matrix.h"
#include "launch.h"

namespace braid::testing {
namespace {

constexpr int kRanks = 4;
constexpr int kVictim = 1;             // host 1's first rank when hosts are emulated: it sends across
constexpr double kErrorWithin = 5.0;   // seconds from the start of the failing call

struct CellResult {
  std::vector<std::string> failures;
  double slowest = 0;  // the slowest rank's time to error
};

LaunchOptions cell_options(const MatrixRow& row, const MatrixFault& fault, const std::string& transport) {
  LaunchOptions o;
  o.ranks = kRanks;
  o.program = test_program_path("braid-test-rank");
  o.args = {"fault-matrix"};
  const std::string op = row.op == "compressed" ? "allreduce" : row.op;
  o.env = {{"BRAID_TRANSPORT", transport == "shm" ? "auto" : "tcp"},
           {"BRAID_TIMEOUT", "1"},
           {"BRAID_FAULT", "rank=" + std::to_string(kVictim) + ",op=" + op + ",nth=3,kind=" + fault.kind},
           {"BRAID_TEST_OP", row.op},
           {"BRAID_TEST_ALGO", row.algorithm}};
  if (row.emulated_hosts > 1) o.env["BRAID_TEST_EMULATED_HOSTS"] = std::to_string(row.emulated_hosts);
  if (row.block > 0) o.env["BRAID_TEST_BLOCK"] = std::to_string(row.block);
  // Ranks ignore SIGTERM (main.cc) and report on their own; a frozen victim is SIGKILLed 1 s
  // after the first report. A stalled one must outlive its stall (2 s, the first report comes
  // at 1 s) to report, so it gets 3.
  o.braid_run_flags = {"--grace", fault.name == "stall" ? "3" : "1"};
  o.timeout_seconds = 40;
  return o;
}

// The "FAULT-ERROR rank R Kind after S s" line of rank r, or "".
std::string report_of(const LaunchResult& r, int rank) {
  auto lines = r.lines_with("FAULT-ERROR rank " + std::to_string(rank) + " ");
  return lines.empty() ? "" : lines.front();
}

void check_rank_reports(const LaunchResult& r, const MatrixFault& fault, CellResult& out) {
  static const std::regex report(R"(FAULT-ERROR rank (\d+) (\w+) after ([0-9.]+) s)");
  for (int rank = 0; rank < kRanks; ++rank) {
    const bool victim = rank == kVictim;
    if (victim && !fault.victim_survives) continue;
    std::string line = report_of(r, rank);
    std::smatch m;
    if (!std::regex_search(line, m, report)) {
      out.failures.push_back("rank " + std::to_string(rank) + " reported no error");
      continue;
    }
    if (m[2] != fault.error) out.failures.push_back("rank " + std::to_string(rank) + " raised " + m[2].str() + ": " + line);
    // The stalled victim's own call includes its stall; it only has to report.
    if (victim && fault.name == "stall") continue;
    const double seconds = std::stod(m[3]);
    out.slowest = std::max(out.slowest, seconds);
    if (seconds > kErrorWithin) out.failures.push_back("rank " + std::to_string(rank) + " took " + m[3].str() + " s");
  }
}

void check_victim_named(const LaunchResult& r, const MatrixFault& fault, CellResult& out) {
  const std::string victim = "rank " + std::to_string(kVictim);
  if (fault.name == "kill") {
    bool named = false;
    for (const auto& line : r.lines_with("braid-run: " + victim + " (pid")) named |= line.find("signal 9") != std::string::npos;
    if (!named) out.failures.push_back("braid-run did not report " + victim + " killed by signal 9");
  }
  // The injector says which rank it made fail before it acts (the log line survives a SIGKILL).
  if (r.lines_with(victim + ": injected fault").empty()) out.failures.push_back("no line names the victim");
}

void check_nothing_left(const LaunchResult& r, CellResult& out) {
  static const std::regex pid_line(R"(FAULT-PID rank \d+ pid (\d+))");
  for (const auto& line : r.lines_with("FAULT-PID")) {
    std::smatch m;
    if (!std::regex_search(line, m, pid_line)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(m[1]));
    if (::kill(pid, 0) == 0 || errno != ESRCH) out.failures.push_back("rank process " + m[1].str() + " outlived the job");
  }
  if (r.count("FAULT-PID") != kRanks) out.failures.push_back("not every rank started");
  for (const auto& id : job_ids_in(r)) {
    if (!shm_leftovers(id).empty()) out.failures.push_back("/dev/shm holds segments of job " + id);
  }
}

CellResult run_cell(const MatrixRow& row, const MatrixFault& fault, const std::string& transport) {
  LaunchResult r = launch(cell_options(row, fault, transport));
  CellResult out;
  if (r.timed_out) out.failures.push_back("the job hung (killed at the launch limit)");
  if (r.exit_code == 0) out.failures.push_back("braid-run exited 0");
  if (r.count("NO-ERROR") > 0) out.failures.push_back("a rank finished without an error");
  check_rank_reports(r, fault, out);
  check_victim_named(r, fault, out);
  check_nothing_left(r, out);
  if (!out.failures.empty()) out.failures.push_back("output:\n" + r.output);
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One line per row: each fault x transport cell is "ok 0.12" (passed, slowest time to error),
// "FAIL", "--" (the cell does not exist) or "." (exists, not in this run's subset).
void print_matrix(const std::vector<MatrixCell>& cells, const std::vector<CellResult>& results) {
  const auto& rows = matrix_rows();
  const auto& faults = matrix_faults();
  const auto& transports = matrix_transports();
  std::printf("%-34s", "family / op / algorithm");
  for (const auto& f : faults) {
    for (const auto& t : transports) std::printf(" %-9s", (f.name + "/" + t).c_str());
  }
  std::printf("\n");
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    std::printf("%-34s", (rows[r].family + " " + rows[r].op + " " + rows[r].algorithm +
                          (rows[r].block > 0 ? " x" + std::to_string(rows[r].block) : ""))
                             .c_str());
    for (int f = 0; f < static_cast<int>(faults.size()); ++f) {
      for (int t = 0; t < static_cast<int>(transports.size()); ++t) {
        std::string mark = missing_reason(rows[r], faults[f], transports[t]).empty() ? "." : "--";
        for (std::size_t i = 0; i < cells.size(); ++i) {
          if (cells[i].row != r || cells[i].fault != f || cells[i].transport != t) continue;
          char text[32];
          std::snprintf(text, sizeof text, "ok %.2f", results[i].slowest);
          mark = results[i].failures.empty() ? text : "FAIL";
        }
        std::printf(" %-9s", mark.c_str());
      }
    }
    std::printf("\n");
  }
}

void print_counts(const std::vector<MatrixCell>& cells, const std::vector<CellResult>& results) {
  std::vector<double> immediate, at_timeout;
  int passed = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (!results[i].failures.empty()) continue;
    ++passed;
    (matrix_faults()[cells[i].fault].waits_timeout ? at_timeout : immediate).push_back(results[i].slowest);
  }
  auto max_of = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
  std::printf("fault matrix: %zu cells exist, %zu run, %d passed; time to error (slowest rank per cell): "
              "kill/flip/close median %.3f s max %.3f s, freeze/stall (BRAID_TIMEOUT=1) median %.3f s max %.3f s\n",
              matrix_cells(true).size(), cells.size(), passed, median(immediate), max_of(immediate),
              median(at_timeout), max_of(at_timeout));
  std::printf("-- : the cell does not exist (");
  std::set<std::string> reasons;
  for (const auto& row : matrix_rows()) {
    for (const auto& f : matrix_faults()) {
      for (const auto& t : matrix_transports()) {
        if (std::string why = missing_reason(row, f, t); !why.empty()) reasons.insert(why);
      }
    }
  }
  for (const auto& why : reasons) std::printf("%s; ", why.c_str());
  std::printf("), . : not in this run's subset\n");
}

TEST(FaultMatrixTest, EveryCellEndsInTheRightErrorOnEveryRank) {
  const char* which = std::getenv("BRAID_FAULT_MATRIX");
  const bool full = which != nullptr && std::string(which) == "full";
  const std::vector<MatrixCell> cells = matrix_cells(full);
  std::vector<CellResult> results;
  for (const auto& cell : cells) {
    const MatrixRow& row = matrix_rows()[cell.row];
    const MatrixFault& fault = matrix_faults()[cell.fault];
    const std::string& transport = matrix_transports()[cell.transport];
    results.push_back(run_cell(row, fault, transport));
    for (const auto& failure : results.back().failures) {
      ADD_FAILURE() << row.family << " " << row.op << " " << row.algorithm << " x " << fault.name << " x " << transport
                    << ": " << failure;
    }
  }
  print_matrix(cells, results);
  print_counts(cells, results);
}

// A malformed BRAID_FAULT, or one aimed at a rank outside the job, fails every rank at init
// with InvalidArgument naming what is wrong, before any rendezvous wait.
TEST(FaultInjectionTest, BadSpecificationFailsEveryRankAtInit) {
  const std::pair<std::string, std::string> cases[] = {
      {"rank=1,op=allreduce,nth=0,kind=kill", "nth must be an integer >= 1, got '0'"},
      {"rank=5,op=allreduce,kind=kill", "rank 5 is not in this job of 2 ranks"},
  };
  for (const auto& [spec, phrase] : cases) {
    LaunchOptions o;
    o.ranks = 2;
    o.program = test_program_path("braid-test-rank");
    o.args = {"barrier"};
    o.env = {{"BRAID_FAULT", spec}, {"BRAID_TIMEOUT", "20"}};
    o.timeout_seconds = 30;
    LaunchResult r = launch(o);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_NE(r.exit_code, 0) << r.output;
    auto refusals = r.lines_with("braid::InvalidArgument");
    EXPECT_FALSE(refusals.empty()) << r.output;
    for (const auto& line : refusals) {
      EXPECT_NE(line.find("BRAID_FAULT='" + spec + "'"), std::string::npos) << line;
      EXPECT_NE(line.find(phrase), std::string::npos) << line;
    }
    EXPECT_LT(r.seconds, 15.0) << "refused at init, not after a timeout";
  }
}

// op=send aims at point-to-point sends: rank 1's second send goes out with a flipped header
// bit, and its receiver raises Corrupt naming the TCP stream from rank 1.
TEST(FaultInjectionTest, SendFaultHitsPointToPointSends) {
  LaunchOptions o;
  o.ranks = 3;
  o.program = test_program_path("braid-test-rank");
  o.args = {"pairs", "1000"};
  o.env = {{"BRAID_TRANSPORT", "tcp"}, {"BRAID_TIMEOUT", "20"}, {"BRAID_FAULT", "rank=1,op=send,nth=2,kind=flip"}};
  o.timeout_seconds = 30;
  LaunchResult r = launch(o);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.lines_with("rank 1: injected fault flip").empty()) << r.output;
  EXPECT_FALSE(r.lines_with("TCP stream from rank 1: header checksum mismatch").empty()) << r.output;
  EXPECT_EQ(r.count("PASS"), 0) << r.output;
}

// The subset CTest runs still covers every row, fault and transport, every (row, fault) pair,
// both transports for every fault, and both for every row that has cells on both.
TEST(FaultMatrixTest, SubsetCoversEveryRowFaultAndTransport) {
  const auto subset = matrix_cells(false);
  const auto full = matrix_cells(true);
  std::set<std::pair<int, int>> row_fault, row_transport, fault_transport, full_row_transport;
  for (const auto& c : subset) {
    row_fault.insert({c.row, c.fault});
    row_transport.insert({c.row, c.transport});
    fault_transport.insert({c.fault, c.transport});
  }
  std::set<std::pair<int, int>> full_row_fault;
  for (const auto& c : full) {
    full_row_fault.insert({c.row, c.fault});
    full_row_transport.insert({c.row, c.transport});
  }
  EXPECT_EQ(row_fault, full_row_fault);
  EXPECT_EQ(row_transport, full_row_transport);
  EXPECT_EQ(fault_transport.size(), matrix_faults().size() * matrix_transports().size());
  EXPECT_LT(subset.size(), full.size());
}

}  // namespace
}  // namespace braid::testing
