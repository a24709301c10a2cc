// Every environment variable braid reads is declared here, once, with its default, its
// meaning and the values it accepts (NCCL_PARAM style); env.cc is the only file that calls
// getenv. docs/environment.md carries the same table, and a test checks the two agree.
//
// What a variable accepts is data (`Allowed`), checked in one place (env.cc): the code that
// reads a variable never re-validates it, and a value outside its declared set is refused
// with InvalidArgument naming the variable, the value and what is allowed, instead of being
// clamped or misread (BRAID_TIMEOUT=nan once meant "time out at once", BRAID_CHECKSUM=2 meant
// 1). Communicator::init checks every BRAID_* variable that is set before it does anything.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace braid::env {

enum class ValueKind : std::uint8_t {
  kText,     // anything (addresses, paths, names checked by their users)
  kName,     // 1..64 letters, digits or '_' (safe inside file and segment names)
  kInteger,  // a decimal integer in [min, max]; see multiple_of and power_of_two
  kNumber,   // a finite decimal number in [min, max]
  kChoice,   // one of `choices`
};

struct Allowed {
  ValueKind kind = ValueKind::kText;
  double min = 0;  // kInteger, kNumber: inclusive bounds (exact for integers below 2^53)
  double max = 0;
  // kChoice: the accepted values, '|'-separated. kInteger / kNumber: values accepted besides
  // the range, verbatim (BRAID_TIMEOUT's "-1").
  std::string_view choices = "";
  long long multiple_of = 0;  // kInteger: 0 means any integer
  bool power_of_two = false;  // kInteger
};

constexpr Allowed any_text() { return {}; }
constexpr Allowed a_name() { return {.kind = ValueKind::kName}; }
constexpr Allowed integer(double min, double max, long long multiple_of = 0) {
  return {.kind = ValueKind::kInteger, .min = min, .max = max, .multiple_of = multiple_of};
}
constexpr Allowed power_of_two(double min, double max) {
  return {.kind = ValueKind::kInteger, .min = min, .max = max, .power_of_two = true};
}
constexpr Allowed number(double min, double max, std::string_view also = "") {
  return {.kind = ValueKind::kNumber, .min = min, .max = max, .choices = also};
}
constexpr Allowed one_of(std::string_view choices) { return {.kind = ValueKind::kChoice, .choices = choices}; }

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kMaxInt = 2147483647.0;

struct Variable {
  std::string_view name;
  std::string_view default_value;  // "" when unset means "not given"
  std::string_view meaning;
  Allowed allowed = any_text();
};

// --- braid's own settings -------------------------------------------------------------
inline constexpr Variable kRank{"BRAID_RANK", "", "this process's rank in the job (set by braid-run)",
    integer(0, kMaxInt - 1)};
inline constexpr Variable kWorldSize{"BRAID_WORLD_SIZE", "", "number of ranks in the job (set by braid-run)",
    integer(1, kMaxInt)};
inline constexpr Variable kLocalRank{"BRAID_LOCAL_RANK", "", "rank among the processes on this host",
    integer(0, kMaxInt - 1)};
inline constexpr Variable kLocalWorldSize{"BRAID_LOCAL_WORLD_SIZE", "", "number of ranks on this host",
    integer(1, kMaxInt)};
inline constexpr Variable kMasterAddr{"BRAID_MASTER_ADDR", "127.0.0.1", "address of rank 0's rendezvous store"};
inline constexpr Variable kMasterPort{"BRAID_MASTER_PORT", "", "TCP port of rank 0's rendezvous store",
    integer(1, 65535)};
inline constexpr Variable kJobToken{"BRAID_JOB_TOKEN", "", "secret every connection must prove (braid-run makes a fresh one)"};
inline constexpr Variable kJobId{"BRAID_JOB_ID", "", "names this job's shared-memory segments (braid-run removes /dev/shm/braid-<id>-* at exit)",
    a_name()};
inline constexpr Variable kTimeout{"BRAID_TIMEOUT", "300", "seconds a blocking call waits before it throws braid::Timeout; -1 waits forever",
    number(1e-3, 1e9, "-1")};
inline constexpr Variable kPeerTimeout{"BRAID_PEER_TIMEOUT", "8", "seconds after which a TCP peer that stopped answering (unanswered keepalives, unacknowledged data: a cut or black-holed link) counts as lost; 0 leaves it to the kernel (hours)",
    number(0, 86400)};
inline constexpr Variable kTransport{"BRAID_TRANSPORT", "auto", "auto (shm within a host, tcp across), or tcp to force TCP everywhere",
    one_of("auto|shm|tcp")};
inline constexpr Variable kTls{"BRAID_TLS", "off", "on: every TCP connection between ranks runs TLS 1.3 keyed by the job token (encrypted and authenticated; every rank must agree); off: plain TCP",
    one_of("off|on")};
inline constexpr Variable kTcpStreams{"BRAID_TCP_STREAMS", "1", "TCP connections per pair of ranks; messages of at least 512 KiB are striped over them (1 under BRAID_TLS=on; every rank must agree)",
    integer(1, 16)};
inline constexpr Variable kTcpBufferBytes{"BRAID_TCP_BUFFER_BYTES", "0", "SO_SNDBUF and SO_RCVBUF of every TCP connection between ranks; 0 leaves them to the kernel's autotuning",
    integer(0, kGiB)};
inline constexpr Variable kHostId{"BRAID_HOST_ID", "", "host identity; ranks with equal ids use shared memory (default: hostname + boot id)"};
inline constexpr Variable kBindAddr{"BRAID_BIND_ADDR", "", "address transport listeners bind to and advertise (default: loopback, or the local address that reaches the master when it is not local)"};
inline constexpr Variable kOwnCpu{"BRAID_OWN_CPU", "", "the CPU braid-run pinned this rank to when no other rank of the host shares it (set by braid-run); a rank alone on its CPU spins without yielding",
    integer(0, kMaxInt - 1)};
inline constexpr Variable kSpinUs{"BRAID_SPIN_US", "50", "microseconds a waiting rank polls before it sleeps on a futex / poll",
    integer(0, 1e6)};
inline constexpr Variable kShmRingBytes{"BRAID_SHM_RING_BYTES", "524288", "bytes of each shared-memory ring (one per ordered pair of ranks on a host); every rank of a host must agree",
    power_of_two(4096, kGiB)};
inline constexpr Variable kShmChunkBytes{"BRAID_SHM_CHUNK_BYTES", "32768", "largest piece a shared-memory send publishes at once (pipelining grain; at most half a ring is used)",
    integer(4096, kGiB)};
inline constexpr Variable kShmSliceBytes{"BRAID_SHM_SLICE_BYTES", "", "per-rank slice of one round of the shared-memory staged collectives (unset: 131072, or 1048576 where the host's ranks outnumber its CPUs)",
    integer(64, kGiB, 64)};
inline constexpr Variable kCrossMemory{"BRAID_CROSS_MEMORY", "1", "1: shared-memory collectives on unregistered buffers read peers' memory with one copy (process_vm_readv) where the kernel allows it on every rank; 0: they stage through shared memory",
    one_of("0|1")};
inline constexpr Variable kKernels{"BRAID_KERNELS", "auto", "reduction kernels: auto (widest the CPU supports), scalar, avx2 or avx512",
    one_of("auto|scalar|avx2|avx512")};
inline constexpr Variable kLogLevel{"BRAID_LOG_LEVEL", "warn", "error, warn, info or debug",
    one_of("error|warn|info|debug")};
// Algorithm selection (collectives/tuner.h); must be equal on every rank of a job.
inline constexpr Variable kAlgoAllreduce{"BRAID_ALGO_ALLREDUCE", "", "force this allreduce algorithm where it supports the call"};
inline constexpr Variable kAlgoAllgather{"BRAID_ALGO_ALLGATHER", "", "force this allgather algorithm where it supports the call"};
inline constexpr Variable kAlgoReduceScatter{"BRAID_ALGO_REDUCE_SCATTER", "", "force this reduce_scatter algorithm where it supports the call"};
inline constexpr Variable kAlgoBroadcast{"BRAID_ALGO_BROADCAST", "", "force this broadcast algorithm where it supports the call"};
inline constexpr Variable kAlgoReduce{"BRAID_ALGO_REDUCE", "", "force this reduce algorithm where it supports the call"};
inline constexpr Variable kAlgoGather{"BRAID_ALGO_GATHER", "", "force this gather algorithm where it supports the call"};
inline constexpr Variable kAlgoScatter{"BRAID_ALGO_SCATTER", "", "force this scatter algorithm where it supports the call"};
inline constexpr Variable kAlgoAlltoall{"BRAID_ALGO_ALLTOALL", "", "force this alltoall algorithm where it supports the call"};
inline constexpr Variable kAlgoAlltoallv{"BRAID_ALGO_ALLTOALLV", "", "force this alltoallv algorithm where it supports the call"};
inline constexpr Variable kCompressHostStriped{"BRAID_COMPRESS_HOST_STRIPED", "auto", "across hosts of equal rank counts, compress only between hosts (fp32 inside): auto (fp16, bf16, int8), 1 (sign too) or 0 (never)",
    one_of("auto|0|1")};
inline constexpr Variable kChecksum{"BRAID_CHECKSUM", "0", "1: compressed payloads carry a CRC32C that every receiver checks (braid::Corrupt on mismatch)",
    one_of("0|1")};
inline constexpr Variable kFault{"BRAID_FAULT", "", "fault injection for tests and benchmarks: rank=R,op=OP,nth=N,kind=kill|freeze|stall:T|flip|close (fault_spec.h); unset: none"};
inline constexpr Variable kElastic{"BRAID_ELASTIC", "", "set by braid-run --elastic: the least ranks the job continues with after a loss (--min-ranks); the store is braid-run's, not rank 0's",
    integer(1, kMaxInt)};
inline constexpr Variable kElasticSettle{"BRAID_ELASTIC_SETTLE", "3", "elastic recovery: seconds the first survivor to notice a loss waits for the others to report before the membership is decided",
    number(0, 3600)};
inline constexpr Variable kElasticJoin{"BRAID_ELASTIC_JOIN", "", "a newcomer to a running elastic job: 'new' (take a fresh member id from the store; a process started by hand) or the id braid-run --max-restarts took for it; it joins at the next step boundary"};
inline constexpr Variable kTuningFile{"BRAID_TUNING_FILE", "", "JSON tuning file (braid-bench --tune) consulted before the built-in table"};
inline constexpr Variable kTrace{"BRAID_TRACE", "", "directory every rank writes its trace file into (unset: no tracing)"};
inline constexpr Variable kBlasRestarted{"BRAID_BLAS_RESTARTED", "", "set by braid-train when it restarted itself with OPENBLAS_CORETYPE: the core OpenBLAS had picked (also prevents a second restart)"};

// --- other libraries' variables braid reads ----------------------------------------------
inline constexpr Variable kOpenblasCoretype{"OPENBLAS_CORETYPE", "", "OpenBLAS's kernel set, read by OpenBLAS at load; braid-train respects it, and sets it when OpenBLAS picked a core far below the CPU's"};

// --- other launchers' variables, read when braid's own are absent -----------------------
inline constexpr Variable kTorchRank{"RANK", "", "torchrun: rank"};
inline constexpr Variable kTorchWorldSize{"WORLD_SIZE", "", "torchrun: world size"};
inline constexpr Variable kTorchLocalRank{"LOCAL_RANK", "", "torchrun: local rank"};
inline constexpr Variable kTorchLocalWorldSize{"LOCAL_WORLD_SIZE", "", "torchrun: local world size"};
inline constexpr Variable kTorchMasterAddr{"MASTER_ADDR", "", "torchrun: store address"};
inline constexpr Variable kTorchMasterPort{"MASTER_PORT", "", "torchrun: store port"};
inline constexpr Variable kOmpiRank{"OMPI_COMM_WORLD_RANK", "", "Open MPI: rank"};
inline constexpr Variable kOmpiSize{"OMPI_COMM_WORLD_SIZE", "", "Open MPI: world size"};
inline constexpr Variable kOmpiLocalRank{"OMPI_COMM_WORLD_LOCAL_RANK", "", "Open MPI: local rank"};
inline constexpr Variable kOmpiLocalSize{"OMPI_COMM_WORLD_LOCAL_SIZE", "", "Open MPI: local size"};
inline constexpr Variable kSlurmProcId{"SLURM_PROCID", "", "Slurm: rank"};
inline constexpr Variable kSlurmNtasks{"SLURM_NTASKS", "", "Slurm: world size"};
inline constexpr Variable kSlurmLocalId{"SLURM_LOCALID", "", "Slurm: local rank"};
inline constexpr Variable kSlurmTasksPerNode{"SLURM_NTASKS_PER_NODE", "", "Slurm: local world size"};
inline constexpr Variable kSlurmStepTasksPerNode{"SLURM_STEP_TASKS_PER_NODE", "", "Slurm: tasks on each node of the step (2(x3),1); the local world size when SLURM_NTASKS_PER_NODE is unset"};
inline constexpr Variable kSlurmNodeId{"SLURM_NODEID", "", "Slurm: this node's index in the step"};
inline constexpr Variable kSlurmStepNodelist{"SLURM_STEP_NODELIST", "", "Slurm: the step's hosts; the first is the default store address"};
inline constexpr Variable kSlurmJobNodelist{"SLURM_JOB_NODELIST", "", "Slurm: the job's hosts (read when SLURM_STEP_NODELIST is unset)"};
inline constexpr Variable kSlurmJobId{"SLURM_JOB_ID", "", "Slurm: job id (with SLURM_STEP_ID, the default store port)"};
inline constexpr Variable kSlurmStepId{"SLURM_STEP_ID", "", "Slurm: step id"};

// All braid-owned (BRAID_*) variables, in documentation order.
std::span<const Variable> braid_variables();
// The foreign launchers' variables braid understands.
std::span<const Variable> foreign_variables();

// The variable's value if set and non-empty (unchecked: for kText variables).
std::optional<std::string> get(const Variable& var);
// The variable's value, or its default when unset (unchecked).
std::string get_or_default(const Variable& var);

// Why `value` is not allowed for `var` ("" when it is): pure, for tests and for check().
std::string problem(const Variable& var, std::string_view value);
// What `allowed` accepts, in words ("an integer in [0, 1000000]"); docs/environment.md
// quotes it verbatim.
std::string describe(const Allowed& allowed);
// Throws InvalidArgument naming the variable, its value and what is allowed, if `var` is set
// to a value outside its declared set.
void check(const Variable& var);
// check() for every BRAID_* variable (Communicator::init calls it first).
void check_all();

// Typed accessors of the value or the default, checked as check() does.
double get_double(const Variable& var);
long long get_int(const Variable& var);
std::optional<long long> get_int_if_set(const Variable& var);
std::string get_choice(const Variable& var);  // kChoice variables

}  // namespace braid::env
