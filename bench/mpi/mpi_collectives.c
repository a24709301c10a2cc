/* braid-mpi-collectives: the OpenMPI peer for braid-bench's collective numbers.
 *
 * One program, the operation as first argument:
 *   allreduce       MPI_Allreduce               busbw = algbw * 2(n-1)/n
 *   allgather       MPI_Allgather               busbw = algbw * (n-1)/n
 *   reduce_scatter  MPI_Reduce_scatter_block    busbw = algbw * (n-1)/n
 *   alltoall        MPI_Alltoall                busbw = algbw * (n-1)/n
 *   alltoallv       MPI_Alltoallv               busbw = algbw * (n-1)/n, MoE-shaped counts
 *   broadcast       MPI_Bcast (root 0)          busbw = algbw
 * The busbw factors and the meaning of "size" are nccl-tests': allreduce and broadcast move
 * `size` bytes per rank; allgather's size is the whole output (each rank contributes size/n);
 * reduce_scatter's is the input per rank (each rank keeps size/n); alltoall's is what each rank
 * sends in all (size/n to every rank); alltoallv's is also what each rank sends in all, split
 * over the ranks by braid-bench's MoE routing draw (src/braid/tools/braid_bench/moe_counts.h,
 * the same integers here: 1024-float tokens, rank e chosen with probability ~ 1/(e+1), seed
 * 2026), whose digest both print. Sizes are rounded down to a whole number of elements
 * (allreduce, broadcast) or of n-element blocks (the others), as nccl-tests does.
 *
 * Timing is braid-bench's (docs/benchmarks.md): after a warm-up, a batch of `iters`
 * back-to-back calls is timed on every rank, the per-call time of the slowest rank
 * (MPI_Allreduce MAX) is the batch's time, and the row reports the median of --repeats
 * batches (default 5) because this machine is shared and noisy. algbw = size / time.
 * Default iteration counts are braid-bench's too: clamp(256 MiB / size, 5, 1000) timed calls
 * per batch and max(1, iters / 5) warm-up calls.
 *
 * #wrong: after the timed batches the outputs are overwritten with a sentinel, the operation
 * runs once more and every output element is compared with the exact expected value (inputs
 * are small integers, so float sums are exact); the count is summed over all ranks. A non-zero
 * #wrong makes the exit status 1.
 *
 * Buffers are allocated once at the largest size, asked for transparent huge pages and
 * touched before any timing (DESIGN.md, "Memory is allocated once and reused").
 *
 * Run (as root OpenMPI needs --allow-run-as-root; 4 ranks on 2 cores need --oversubscribe):
 *   mpirun --allow-run-as-root --oversubscribe -np 4 --mca btl self,vader \
 *       ./build/bin/braid-mpi-collectives allreduce -b 8 -e 64M -f 4
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_common.h"

/* braid-bench's defaults (src/braid/tools/braid_bench): iters = clamp(256 MiB / size, 5, 1000). */
static const size_t kBytesPerBatch = (size_t)256 << 20;
static const long kMinIters = 5;
static const long kMaxIters = 1000;
static const int kDefaultRepeats = 5;
static const float kSentinel = -1.0f; /* never an expected value: those are all positive */

typedef enum { kAllreduce, kAllgather, kReduceScatter, kAlltoall, kBroadcast, kAlltoallv } Op;

typedef struct {
  const char* name;
  const char* mpi_call;
  const char* redop; /* column value: "sum" for reductions, "none" otherwise */
  const char* busbw_formula;
  int blocks; /* 1: size is a multiple of the element; n: of n elements */
} OpInfo;

static const OpInfo kOps[] = {
    [kAllreduce] = {"allreduce", "MPI_Allreduce", "sum", "2(n-1)/n", 0},
    [kAllgather] = {"allgather", "MPI_Allgather", "none", "(n-1)/n", 1},
    [kReduceScatter] = {"reduce_scatter", "MPI_Reduce_scatter_block", "sum", "(n-1)/n", 1},
    [kAlltoall] = {"alltoall", "MPI_Alltoall", "none", "(n-1)/n", 1},
    [kBroadcast] = {"broadcast", "MPI_Bcast", "none", "1", 0},
    [kAlltoallv] = {"alltoallv", "MPI_Alltoallv", "none", "(n-1)/n", 0},
};
enum { kNumOps = sizeof(kOps) / sizeof(kOps[0]) };

typedef struct {
  Op op;
  size_t min_bytes;
  size_t max_bytes;
  size_t factor;
  long iters;  /* 0: derived from the size */
  long warmup; /* -1: derived from iters */
  int repeats;
  int check;
  const char* json_path;
} Options;

typedef struct {
  long long size;
  long long count;
  double time_us;
  double algbw;
  double busbw;
  long long wrong;
} Row;

static void usage(FILE* out) {
  fprintf(out,
          "usage: braid-mpi-collectives OP [options]   (run with mpirun -np N)\n"
          "  OP: allreduce | allgather | reduce_scatter | alltoall | broadcast | alltoallv\n"
          "  -b, --minbytes SIZE   smallest size (default 8); suffixes K, M, G (x1024)\n"
          "  -e, --maxbytes SIZE   largest size (default 256M), at most 2G-1\n"
          "  -f, --stepfactor N    multiply the size by N each step (default 2)\n"
          "  -n, --iters N         timed calls per batch (default: clamp(256MiB / size, %ld, %ld))\n"
          "  -w, --warmup N        untimed calls per size (default: max(1, iters / 5))\n"
          "      --repeats N       timed batches per size; the median is reported (default %d)\n"
          "  -c, --check 0|1       check the results (#wrong column; default 1)\n"
          "  -d, --datatype f32    element type (only f32)\n"
          "  -o, --op sum          reduction (only sum; ignored by the non-reducing operations)\n"
          "  -j, --json FILE       also write the rows as JSON (braid-bench's layout)\n"
          "  -h, --help\n",
          kMinIters, kMaxIters, kDefaultRepeats);
}

/* Returns 0 to run, 1 to exit successfully (--help), -1 on a usage error (reported on stderr
 * when `report`: every rank parses the same arguments, one of them says what is wrong). */
static int parse_options(int argc, char** argv, int report, Options* opt) {
  *opt = (Options){.op = kAllreduce, .min_bytes = 8, .max_bytes = (size_t)256 << 20, .factor = 2,
                   .iters = 0, .warmup = -1, .repeats = kDefaultRepeats, .check = 1,
                   .json_path = NULL};
  if (argc < 2) {
    if (report) fprintf(stderr, "braid-mpi-collectives: missing operation\n");
    return -1;
  }
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) return 1;
  int found = 0;
  for (int k = 0; k < kNumOps; k++) {
    if (strcmp(argv[1], kOps[k].name) == 0) {
      opt->op = (Op)k;
      found = 1;
    }
  }
  if (!found) {
    if (report) fprintf(stderr, "braid-mpi-collectives: unknown operation %s\n", argv[1]);
    return -1;
  }
  for (int i = 2; i < argc; i++) {
    const char* arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) return 1;
    if (i + 1 >= argc) {
      if (report) fprintf(stderr, "braid-mpi-collectives: unknown option or missing value: %s\n", arg);
      return -1;
    }
    const char* value = argv[++i];
    size_t size = 0;
    long count = 0;
    int bad = 0;
    if (strcmp(arg, "-b") == 0 || strcmp(arg, "--minbytes") == 0) {
      bad = parse_size(value, &size) != 0 || size == 0;
      opt->min_bytes = size;
    } else if (strcmp(arg, "-e") == 0 || strcmp(arg, "--maxbytes") == 0) {
      bad = parse_size(value, &size) != 0 || size == 0 || size > (size_t)INT_MAX;
      opt->max_bytes = size;
    } else if (strcmp(arg, "-f") == 0 || strcmp(arg, "--stepfactor") == 0) {
      bad = parse_count(value, &count) != 0 || count < 2;
      opt->factor = (size_t)count;
    } else if (strcmp(arg, "-n") == 0 || strcmp(arg, "--iters") == 0) {
      bad = parse_count(value, &count) != 0 || count < 1;
      opt->iters = count;
    } else if (strcmp(arg, "-w") == 0 || strcmp(arg, "--warmup") == 0) {
      bad = parse_count(value, &count) != 0;
      opt->warmup = count;
    } else if (strcmp(arg, "--repeats") == 0) {
      bad = parse_count(value, &count) != 0 || count < 1 || count > 1000;
      opt->repeats = (int)count;
    } else if (strcmp(arg, "-c") == 0 || strcmp(arg, "--check") == 0) {
      bad = parse_count(value, &count) != 0 || count > 1;
      opt->check = (int)count;
    } else if (strcmp(arg, "-d") == 0 || strcmp(arg, "--datatype") == 0) {
      bad = strcmp(value, "f32") != 0 && strcmp(value, "float") != 0;
    } else if (strcmp(arg, "-o") == 0 || strcmp(arg, "--op") == 0) {
      bad = strcmp(value, "sum") != 0;
    } else if (strcmp(arg, "-j") == 0 || strcmp(arg, "--json") == 0) {
      opt->json_path = value;
    } else {
      if (report) fprintf(stderr, "braid-mpi-collectives: unknown option %s\n", arg);
      return -1;
    }
    if (bad) {
      if (report) fprintf(stderr, "braid-mpi-collectives: bad value for %s: %s\n", arg, value);
      return -1;
    }
  }
  if (opt->min_bytes > opt->max_bytes) {
    if (report) {
      fprintf(stderr, "braid-mpi-collectives: -b (%zu) is larger than -e (%zu)\n", opt->min_bytes,
              opt->max_bytes);
    }
    return -1;
  }
  return 0;
}

static long iters_for(const Options* opt, size_t size) {
  if (opt->iters > 0) return opt->iters;
  size_t iters = kBytesPerBatch / size;
  if (iters > (size_t)kMaxIters) return kMaxIters;
  if (iters < (size_t)kMinIters) return kMinIters;
  return (long)iters;
}

static long warmup_for(const Options* opt, long iters) {
  if (opt->warmup >= 0) return opt->warmup;
  return iters / 5 > 1 ? iters / 5 : 1;
}

/* The per-rank element counts of one call of `op` at `size` bytes (already rounded). */
/* alltoallv's layout at one size (moe_layout below), in floats. */
typedef struct {
  int* send_counts;
  int* send_displs;
  int* recv_counts;
  int* recv_displs;
  int* offset_at_sender; /* by sender: where its block for this rank starts in its send buffer */
} MoeLayout;

typedef struct {
  int send;  /* elements in the send buffer */
  int recv;  /* elements in the receive buffer */
  int block; /* per-rank block (allgather, reduce_scatter, alltoall) */
  const MoeLayout* moe; /* alltoallv only */
} Counts;

/* braid-bench's MoE routing draw (moe_counts.h there): integers only, so both draw the same. */
enum { kMoeTokenFloats = 1024 };
static const uint64_t kMoeSeed = 2026;

static uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* tokens[s * n + d]: how many of rank s's `tokens` tokens go to rank d. */
static void moe_token_matrix(long long tokens, int n, long long* matrix) {
  uint64_t cumulative[64], total = 0; /* n <= 64 (checked in main) */
  for (int e = 0; e < n; e++) cumulative[e] = total += 720720u / (uint64_t)(e + 1);
  for (int i = 0; i < n * n; i++) matrix[i] = 0;
  for (int s = 0; s < n; s++) {
    const uint64_t stream = splitmix64(kMoeSeed + (uint64_t)s);
    for (long long t = 0; t < tokens; t++) {
      const uint64_t pick = splitmix64(stream + (uint64_t)t) % total;
      int e = 0;
      while (pick >= cumulative[e]) e++;
      matrix[s * n + e]++;
    }
  }
}

static uint64_t moe_digest(const long long* matrix, int n) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (int i = 0; i < n * n; i++) {
    for (int b = 0; b < 8; b++) {
      hash ^= ((uint64_t)matrix[i] >> (8 * b)) & 0xFF;
      hash *= 0x100000001b3ull;
    }
  }
  return hash;
}

/* This rank's packed layout for the matrix; returns the floats it receives. */
static int moe_layout(const long long* tokens, int n, int rank, MoeLayout* l) {
  int sent = 0, received = 0;
  for (int p = 0; p < n; p++) {
    l->send_displs[p] = sent;
    l->send_counts[p] = (int)(tokens[rank * n + p] * kMoeTokenFloats);
    sent += l->send_counts[p];
    l->recv_displs[p] = received;
    l->recv_counts[p] = (int)(tokens[p * n + rank] * kMoeTokenFloats);
    received += l->recv_counts[p];
    int offset = 0;
    for (int d = 0; d < rank; d++) offset += (int)(tokens[p * n + d] * kMoeTokenFloats);
    l->offset_at_sender[p] = offset;
  }
  return received;
}

/* The most any rank receives at `tokens` tokens per rank (sizes the receive buffer). */
static size_t moe_largest_receive(long long tokens, int n, long long* matrix) {
  moe_token_matrix(tokens, n, matrix);
  long long most = 0;
  for (int d = 0; d < n; d++) {
    long long received = 0;
    for (int s = 0; s < n; s++) received += matrix[s * n + d];
    if (received > most) most = received;
  }
  return (size_t)most * kMoeTokenFloats * sizeof(float);
}

static Counts counts_for(Op op, size_t size, int n) {
  const int total = (int)(size / sizeof(float));
  switch (op) {
    case kAlltoallv: return (Counts){total, 0, 0, NULL}; /* recv and moe: filled by the caller */
    case kAllreduce: return (Counts){total, total, total, NULL};
    case kAllgather: return (Counts){total / n, total, total / n, NULL};
    case kReduceScatter: return (Counts){total, total / n, total / n, NULL};
    case kAlltoall: return (Counts){total, total, total / n, NULL};
    case kBroadcast: return (Counts){total, total, total, NULL};
  }
  return (Counts){0, 0, 0, NULL};
}

/* Small integers: every sum of n of them is exact in f32. */
static float base_value(long long i) { return (float)(i % 7 + 1); }

static void fill_input(Op op, float* send, Counts c, int rank, int n) {
  switch (op) {
    case kAllreduce:
    case kReduceScatter:
    case kAllgather:
      for (int i = 0; i < c.send; i++) send[i] = (float)(rank + 1) * base_value(i);
      break;
    case kAlltoallv: /* element i of the send buffer; receivers locate it by offset_at_sender */
      for (int i = 0; i < c.send; i++) send[i] = (float)((long long)i * n % 1009 + rank * 1009 + 1);
      break;
    case kAlltoall: /* the block for rank p: tells source, destination and position apart */
      for (int p = 0; p < n; p++) {
        for (int j = 0; j < c.block; j++) {
          send[(size_t)p * (size_t)c.block + (size_t)j] =
              (float)((j % 7) * n * n + rank * n + p + 1);
        }
      }
      break;
    case kBroadcast:
      for (int i = 0; i < c.send; i++) send[i] = rank == 0 ? base_value(i) + 0.5f : kSentinel;
      break;
  }
}

static float expected(Op op, Counts c, int rank, int n, long long i) {
  const float ranks_sum = (float)(n * (n + 1) / 2);
  switch (op) {
    case kAllreduce: return ranks_sum * base_value(i);
    case kReduceScatter: return ranks_sum * base_value((long long)rank * c.block + i);
    case kAllgather: {
      long long src = i / c.block, j = i % c.block;
      return (float)(src + 1) * base_value(j);
    }
    case kAlltoall: {
      long long src = i / c.block, j = i % c.block;
      return (float)((j % 7) * n * n + src * n + rank + 1);
    }
    case kBroadcast: return base_value(i) + 0.5f;
    case kAlltoallv: {
      int src = n - 1; /* packed blocks: the last sender whose block starts at or before i */
      while (src > 0 && (long long)c.moe->recv_displs[src] > i) src--;
      while (src > 0 && c.moe->recv_counts[src] == 0) src--;
      const long long at = c.moe->offset_at_sender[src] + i - c.moe->recv_displs[src];
      return (float)(at * n % 1009 + src * 1009 + 1);
    }
  }
  return 0;
}

/* One call. Broadcast is in place in `send` (root 0 sends it, the others receive into it). */
static void run_op(Op op, const float* send, float* recv, Counts c) {
  switch (op) {
    case kAllreduce:
      MPI_Allreduce(send, recv, c.send, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case kAllgather:
      MPI_Allgather(send, c.block, MPI_FLOAT, recv, c.block, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case kReduceScatter:
      MPI_Reduce_scatter_block(send, recv, c.block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case kAlltoall:
      MPI_Alltoall(send, c.block, MPI_FLOAT, recv, c.block, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case kBroadcast:
      MPI_Bcast((void*)send, c.send, MPI_FLOAT, 0, MPI_COMM_WORLD);
      break;
    case kAlltoallv:
      MPI_Alltoallv(send, c.moe->send_counts, c.moe->send_displs, MPI_FLOAT, recv, c.moe->recv_counts,
                    c.moe->recv_displs, MPI_FLOAT, MPI_COMM_WORLD);
      break;
  }
}

/* Seconds per call of the slowest rank for `iters` back-to-back calls. */
static double timed_batch(Op op, const float* send, float* recv, Counts c, long iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (long i = 0; i < iters; i++) run_op(op, send, recv, c);
  double mine = (MPI_Wtime() - start) / (double)iters;
  double slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* Runs the operation once more into sentinel-filled outputs and counts, over all ranks, the
 * output elements that differ from the exact expected value. */
static long long count_wrong(Op op, float* send, float* recv, Counts c, int rank, int n) {
  float* out = recv;
  int out_count = c.recv;
  if (op == kBroadcast) {
    out = send;
    if (rank != 0) for (int i = 0; i < c.send; i++) send[i] = kSentinel;
  } else {
    for (int i = 0; i < c.recv; i++) recv[i] = kSentinel;
  }
  run_op(op, send, recv, c);
  long long wrong = 0;
  for (int i = 0; i < out_count; i++) wrong += out[i] != expected(op, c, rank, n, i);
  long long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

static int write_json(const char* path, const Options* opt, int n, const char* library,
                      const Row* rows, size_t count) {
  FILE* f = fopen(path, "w");
  if (f == NULL) return -1;
  const OpInfo* info = &kOps[opt->op];
  fprintf(f, "{\n  \"benchmark\": \"%s\",\n  \"meta\": {\"ranks\": %d, \"peer\": \"openmpi\", "
             "\"call\": \"%s\", \"library\": \"", info->name, n, info->mpi_call);
  for (const char* p = library; *p != '\0'; p++) {
    if (*p == '"' || *p == '\\') fputc('\\', f);
    if ((unsigned char)*p >= 0x20) fputc(*p, f);
  }
  fprintf(f, "\", \"repeats\": %d},\n  \"rows\": [\n", opt->repeats);
  for (size_t i = 0; i < count; i++) {
    const Row* r = &rows[i];
    fprintf(f, "    {\"size\": %lld, \"count\": %lld, \"type\": \"f32\", \"redop\": \"%s\", "
               "\"time(us)\": %.3f, \"algbw(GB/s)\": %.4f, \"busbw(GB/s)\": %.4f, "
               "\"#wrong\": %lld}%s\n",
            r->size, r->count, info->redop, r->time_us, r->algbw, r->busbw, r->wrong,
            i + 1 < count ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  return fclose(f);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  Options opt;
  int parsed = parse_options(argc, argv, rank == 0, &opt);
  if (parsed != 0) {
    if (rank == 0) usage(parsed == 1 ? stdout : stderr);
    MPI_Finalize();
    return parsed == 1 ? 0 : 2;
  }
  const OpInfo* info = &kOps[opt.op];
  const int moe = opt.op == kAlltoallv;
  /* alltoallv: whole tokens. */
  const size_t unit = moe ? kMoeTokenFloats * sizeof(float) : sizeof(float) * (size_t)(info->blocks ? n : 1);
  if (moe && n > 64) {
    if (rank == 0) fprintf(stderr, "braid-mpi-collectives: alltoallv supports at most 64 ranks\n");
    MPI_Finalize();
    return 2;
  }

  /* As in nccl-tests: min, min*f, min*f^2, ... up to and including max if it is hit; each
   * rounded down to whole elements (blocks), dropping zeros and repeats. */
  enum { kMaxSizes = 64 }; /* factor >= 2 and max < 2^31: at most 32 sizes */
  size_t n_sizes = 0;
  size_t sizes[kMaxSizes];
  for (size_t s = opt.min_bytes; s <= opt.max_bytes; s *= opt.factor) {
    size_t rounded = s / unit * unit;
    if (rounded != 0 && (n_sizes == 0 || sizes[n_sizes - 1] != rounded) && n_sizes < kMaxSizes) {
      sizes[n_sizes++] = rounded;
    }
    if (s > opt.max_bytes / opt.factor) break;
  }
  const size_t largest = n_sizes > 0 ? sizes[n_sizes - 1] : unit;
  long long* matrix = malloc(sizeof(long long) * (size_t)n * (size_t)n);
  int* moe_arrays = malloc(sizeof(int) * 5 * (size_t)n);
  MoeLayout layout = {0};
  if (moe_arrays != NULL) {
    layout = (MoeLayout){moe_arrays, moe_arrays + n, moe_arrays + 2 * n, moe_arrays + 3 * n, moe_arrays + 4 * n};
  }
  const size_t recv_bytes =
      moe && matrix != NULL ? moe_largest_receive((long long)(largest / unit), n, matrix) : largest;
  const uint64_t digest = moe && matrix != NULL ? moe_digest(matrix, n) : 0; /* of the largest size */
  float* send = alloc_touched(largest);
  float* recv = alloc_touched(recv_bytes > 0 ? recv_bytes : unit);
  double* batches = malloc(sizeof(double) * (size_t)opt.repeats);
  Row* rows = calloc(n_sizes > 0 ? n_sizes : 1, sizeof(Row));
  if (send == NULL || recv == NULL || batches == NULL || rows == NULL || matrix == NULL || moe_arrays == NULL) {
    fprintf(stderr, "braid-mpi-collectives: rank %d: out of memory for %zu-byte buffers\n", rank,
            largest);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  char library[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(library, &length);
  char* newline = strchr(library, '\n');
  if (newline != NULL) *newline = '\0';
  if (rank == 0) {
    printf("# braid-mpi-collectives %s: %d ranks, %s, %s\n", info->name, n, info->mpi_call,
           opt.op == kBroadcast ? "in-place, root 0" : "out-of-place");
    printf("# %s\n", library);
    if (moe) {
      printf("# counts: MoE routing, %d-element tokens to rank e with probability ~ 1/(e+1), seed %llu; "
             "token matrix digest at the largest size %016llx\n",
             kMoeTokenFloats, (unsigned long long)kMoeSeed, (unsigned long long)digest);
    }
    printf("# time = slowest rank, median of %d batches; busbw = algbw * %s\n", opt.repeats,
           info->busbw_formula);
    printf("# %12s %11s %5s %6s %11s %12s %12s %7s\n", "size", "count", "type", "redop",
           "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
    fflush(stdout);
  }

  const double factor = opt.op == kAllreduce ? 2.0 * (n - 1) / n
                        : opt.op == kBroadcast ? 1.0
                                               : (double)(n - 1) / n;
  long long total_wrong = 0;
  for (size_t k = 0; k < n_sizes; k++) {
    const size_t size = sizes[k];
    Counts c = counts_for(opt.op, size, n);
    if (moe) {
      moe_token_matrix((long long)(size / unit), n, matrix);
      c.recv = moe_layout(matrix, n, rank, &layout);
      c.moe = &layout;
    }
    fill_input(opt.op, send, c, rank, n);
    const long iters = iters_for(&opt, size);
    const long warmup = warmup_for(&opt, iters);
    for (long i = 0; i < warmup; i++) run_op(opt.op, send, recv, c);
    for (int r = 0; r < opt.repeats; r++) batches[r] = timed_batch(opt.op, send, recv, c, iters);
    qsort(batches, (size_t)opt.repeats, sizeof(double), compare_double);
    const double seconds = batches[opt.repeats / 2];
    const long long wrong = opt.check ? count_wrong(opt.op, send, recv, c, rank, n) : 0;
    total_wrong += wrong;
    const double algbw = (double)size / seconds / 1e9;
    rows[k] = (Row){.size = (long long)size, .count = (long long)(size / sizeof(float)),
                    .time_us = seconds * 1e6, .algbw = algbw, .busbw = algbw * factor,
                    .wrong = wrong};
    if (rank == 0) {
      printf("  %12lld %11lld %5s %6s %11.2f %12.2f %12.2f %7lld\n", rows[k].size, rows[k].count,
             "f32", info->redop, rows[k].time_us, rows[k].algbw, rows[k].busbw, wrong);
      fflush(stdout);
    }
  }

  int status = total_wrong == 0 ? 0 : 1;
  if (rank == 0) {
    printf("# Out of bounds values : %lld %s\n", total_wrong, total_wrong == 0 ? "OK" : "FAILED");
    if (opt.json_path != NULL && write_json(opt.json_path, &opt, n, library, rows, n_sizes) != 0) {
      fprintf(stderr, "braid-mpi-collectives: cannot write %s: %s\n", opt.json_path,
              strerror(errno));
      status = 1;
    }
  }
  free(rows);
  free(moe_arrays);
  free(matrix);
  free(batches);
  free(recv);
  free(send);
  MPI_Finalize();
  return status;
}
