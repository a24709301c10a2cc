// Every environment variable braid reads is declared here, once, with its default and its
// meaning (NCCL_PARAM style); env.cc is the only file that calls getenv. docs/environment.md
// carries the same table, and a test checks the two agree.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace braid::env {

struct Variable {
  std::string_view name;
  std::string_view default_value;  // "" when unset means "not given"
  std::string_view meaning;
};

// --- braid's own settings -------------------------------------------------------------
inline constexpr Variable kRank{"BRAID_RANK", "", "this process's rank in the job (set by braid-run)"};
inline constexpr Variable kWorldSize{"BRAID_WORLD_SIZE", "", "number of ranks in the job (set by braid-run)"};
inline constexpr Variable kLocalRank{"BRAID_LOCAL_RANK", "", "rank among the processes on this host"};
inline constexpr Variable kLocalWorldSize{"BRAID_LOCAL_WORLD_SIZE", "", "number of ranks on this host"};
inline constexpr Variable kMasterAddr{"BRAID_MASTER_ADDR", "127.0.0.1", "address of rank 0's rendezvous store"};
inline constexpr Variable kMasterPort{"BRAID_MASTER_PORT", "", "TCP port of rank 0's rendezvous store"};
inline constexpr Variable kJobToken{"BRAID_JOB_TOKEN", "", "secret every connection must prove (braid-run makes a fresh one)"};
inline constexpr Variable kJobId{"BRAID_JOB_ID", "", "names this job's shared-memory segments (braid-run removes /dev/shm/braid-<id>-* at exit)"};
inline constexpr Variable kTimeout{"BRAID_TIMEOUT", "300", "seconds a blocking call waits before it throws braid::Timeout"};
inline constexpr Variable kPeerTimeout{"BRAID_PEER_TIMEOUT", "8", "seconds after which a TCP peer that stopped answering (unanswered keepalives, unacknowledged data: a cut or black-holed link) counts as lost; 0 leaves it to the kernel (hours)"};
inline constexpr Variable kTransport{"BRAID_TRANSPORT", "auto", "auto (shm within a host, tcp across), or tcp to force TCP everywhere"};
inline constexpr Variable kHostId{"BRAID_HOST_ID", "", "host identity; ranks with equal ids use shared memory (default: hostname + boot id)"};
inline constexpr Variable kBindAddr{"BRAID_BIND_ADDR", "", "address transport listeners bind to and advertise (default: loopback, or the local address that reaches the master when it is not local)"};
inline constexpr Variable kSpinUs{"BRAID_SPIN_US", "50", "microseconds a waiting rank polls before it sleeps on a futex / poll"};
inline constexpr Variable kShmRingBytes{"BRAID_SHM_RING_BYTES", "524288", "bytes of each shared-memory ring (one per ordered pair of ranks on a host)"};
inline constexpr Variable kShmChunkBytes{"BRAID_SHM_CHUNK_BYTES", "32768", "largest piece a shared-memory send publishes at once (pipelining grain)"};
inline constexpr Variable kShmSliceBytes{"BRAID_SHM_SLICE_BYTES", "131072", "per-rank slice of one round of the shared-memory direct allreduce"};
inline constexpr Variable kKernels{"BRAID_KERNELS", "auto", "reduction kernels: auto (widest the CPU supports), scalar, avx2 or avx512"};
inline constexpr Variable kLogLevel{"BRAID_LOG_LEVEL", "warn", "error, warn, info or debug"};
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
inline constexpr Variable kCompressHostStriped{"BRAID_COMPRESS_HOST_STRIPED", "auto", "across hosts of equal rank counts, compress only between hosts (fp32 inside): auto (fp16, bf16, int8), 1 (sign too) or 0 (never)"};
inline constexpr Variable kChecksum{"BRAID_CHECKSUM", "0", "1: compressed payloads carry a CRC32C that every receiver checks (braid::Corrupt on mismatch)"};
inline constexpr Variable kTuningFile{"BRAID_TUNING_FILE", "", "JSON tuning file (braid-bench --tune) consulted before the built-in table"};
inline constexpr Variable kTrace{"BRAID_TRACE", "", "directory every rank writes its trace file into (unset: no tracing)"};

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

// All braid-owned (BRAID_*) variables, in documentation order.
std::span<const Variable> braid_variables();
// The foreign launchers' variables braid understands.
std::span<const Variable> foreign_variables();

// The variable's value if set and non-empty.
std::optional<std::string> get(const Variable& var);
// The variable's value, or its default when unset.
std::string get_or_default(const Variable& var);

// Typed accessors; a malformed value throws braid::InvalidArgument naming the variable.
double get_double(const Variable& var);
long long get_int(const Variable& var);
std::optional<long long> get_int_if_set(const Variable& var);

}  // namespace braid::env
