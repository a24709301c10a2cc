/* braid-mpi-pingpong: the OpenMPI peer for braid-bench's point-to-point numbers.
 *
 * Rank 0 sends `size` bytes to rank 1, which sends them straight back; one iteration is one
 * round trip, timed on rank 0. For each size it reports the median round trip / 2 as the
 * one-way time (the median because this machine is shared and noisy: one descheduled
 * iteration must not move the number) and algbw = size / one-way time, in the columns
 * nccl-tests and braid-bench print. Ranks other than 0 and 1 only join the barriers.
 *
 * Buffers are allocated once at the largest size, asked for transparent huge pages and
 * touched before any timing: first touch of fresh 4 KiB pages runs at ~0.4 GB/s on this VM
 * (DESIGN.md, "Memory is allocated once and reused"), and an MPI that received into fresh
 * pages would be measured against the page-fault handler instead of against braid.
 *
 * Run (OpenMPI refuses to start as root unless told; the shared-memory BTL is "vader"):
 *   mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader \
 *       ./build/bin/braid-mpi-pingpong -b 8 -e 64M -f 4
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

enum { kTag = 17 };
/* Default iteration count: large sizes are timed over ~1 GiB each way, clamped to
 * [kMinIters, kMaxIters]; the default sweep 8 B .. 256 MiB (factor 2) takes ~10 s here. */
static const size_t kBytesPerSize = (size_t)1 << 30;
static const long kMinIters = 10;
static const long kMaxIters = 1000;

typedef struct {
  size_t min_bytes;
  size_t max_bytes;
  size_t factor;
  long iters;  /* 0: derived from the size */
  long warmup; /* -1: derived from iters */
  const char* json_path;
} Options;

typedef struct {
  size_t size;
  long iters;
  double latency_us;
  double bandwidth_gbs;
} Result;

static void usage(FILE* out) {
  fprintf(out,
          "usage: braid-mpi-pingpong [options]   (run with mpirun -np 2)\n"
          "  -b, --minbytes SIZE   smallest message (default 8); suffixes K, M, G (x1024)\n"
          "  -e, --maxbytes SIZE   largest message (default 256M), at most 2G-1\n"
          "  -f, --stepfactor N    multiply the size by N each step (default 2)\n"
          "  -n, --iters N         timed round trips per size (default: max(%ld, min(%ld, "
          "1GiB / size)))\n"
          "  -w, --warmup N        untimed round trips per size (default: max(1, iters / 10))\n"
          "  -j, --json FILE       also write [{size, iters, latency_us, bandwidth_gbs}, ...]\n"
          "  -h, --help\n",
          kMinIters, kMaxIters);
}

/* Returns 0 to run, 1 to exit successfully (--help), -1 on a usage error (reported on stderr
 * when `report`: every rank parses the same arguments, one of them says what is wrong). */
static int parse_options(int argc, char** argv, int report, Options* opt) {
  *opt = (Options){.min_bytes = 8, .max_bytes = (size_t)256 << 20, .factor = 2, .iters = 0,
                   .warmup = -1, .json_path = NULL};
  for (int i = 1; i < argc; i++) {
    const char* arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) return 1;
    if (i + 1 >= argc) {
      if (report) fprintf(stderr, "braid-mpi-pingpong: unknown option or missing value: %s\n", arg);
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
    } else if (strcmp(arg, "-j") == 0 || strcmp(arg, "--json") == 0) {
      opt->json_path = value;
    } else {
      if (report) fprintf(stderr, "braid-mpi-pingpong: unknown option %s\n", arg);
      return -1;
    }
    if (bad) {
      if (report) fprintf(stderr, "braid-mpi-pingpong: bad value for %s: %s\n", arg, value);
      return -1;
    }
  }
  if (opt->min_bytes > opt->max_bytes) {
    if (report) {
      fprintf(stderr, "braid-mpi-pingpong: -b (%zu) is larger than -e (%zu)\n", opt->min_bytes,
              opt->max_bytes);
    }
    return -1;
  }
  return 0;
}

static long iters_for(const Options* opt, size_t size) {
  if (opt->iters > 0) return opt->iters;
  size_t iters = kBytesPerSize / size;
  if (iters > (size_t)kMaxIters) return kMaxIters;
  if (iters < (size_t)kMinIters) return kMinIters;
  return (long)iters;
}

static long warmup_for(const Options* opt, long iters) {
  if (opt->warmup >= 0) return opt->warmup;
  return iters / 10 > 1 ? iters / 10 : 1;
}

/* One size: warm-up, then `iters` timed round trips. Rank 0 fills *result and returns the
 * number of bytes that came back different from what it sent (0 expected). */
static long pingpong(int rank, size_t size, long iters, long warmup, unsigned char* send_buf,
                     unsigned char* recv_buf, double* round_trips, Result* result) {
  const int count = (int)size;
  MPI_Barrier(MPI_COMM_WORLD);
  for (long i = -warmup; i < iters; i++) {
    if (rank == 0) {
      double start = MPI_Wtime();
      MPI_Send(send_buf, count, MPI_BYTE, 1, kTag, MPI_COMM_WORLD);
      MPI_Recv(recv_buf, count, MPI_BYTE, 1, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (i >= 0) round_trips[i] = MPI_Wtime() - start;
    } else if (rank == 1) {
      /* Echo what arrived, so rank 0 can check the bytes made the whole trip. */
      MPI_Recv(recv_buf, count, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(recv_buf, count, MPI_BYTE, 0, kTag, MPI_COMM_WORLD);
    }
  }
  if (rank != 0) return 0;

  long wrong = 0;
  if (memcmp(send_buf, recv_buf, size) != 0) {
    for (size_t i = 0; i < size; i++) wrong += send_buf[i] != recv_buf[i];
  }
  memset(recv_buf, 0, size); /* the next size must not pass on stale bytes */

  qsort(round_trips, (size_t)iters, sizeof(double), compare_double);
  double median = iters % 2 ? round_trips[iters / 2]
                            : 0.5 * (round_trips[iters / 2 - 1] + round_trips[iters / 2]);
  double one_way_s = median / 2;
  *result = (Result){.size = size, .iters = iters, .latency_us = one_way_s * 1e6,
                     .bandwidth_gbs = (double)size / one_way_s / 1e9};
  return wrong;
}

static int write_json(const char* path, const Result* results, size_t n) {
  FILE* f = fopen(path, "w");
  if (f == NULL) return -1;
  fprintf(f, "[\n");
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "  {\"size\": %zu, \"iters\": %ld, \"latency_us\": %.3f, \"bandwidth_gbs\": %.4f}%s\n",
            results[i].size, results[i].iters, results[i].latency_us, results[i].bandwidth_gbs,
            i + 1 < n ? "," : "");
  }
  fprintf(f, "]\n");
  return fclose(f);
}

static void print_header(const Options* opt, size_t last_size, int world) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  char* newline = strchr(version, '\n');
  if (newline != NULL) *newline = '\0';
  printf("# braid-mpi-pingpong: MPI_Send/MPI_Recv ping-pong between ranks 0 and 1 (%d ranks)\n",
         world);
  printf("# %s\n", version);
  printf("# sizes %zu .. %zu bytes, factor %zu; time = median round trip / 2; "
         "algbw = size / time\n#\n", opt->min_bytes, last_size, opt->factor);
  printf("# %12s %8s %12s %12s %7s\n", "size(B)", "iters", "time(us)", "algbw(GB/s)", "#wrong");
  fflush(stdout);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);

  Options opt;
  int parsed = parse_options(argc, argv, rank == 0, &opt);
  if (parsed == 0 && world < 2) {
    if (rank == 0) fprintf(stderr, "braid-mpi-pingpong: needs 2 ranks (mpirun -np 2 ...)\n");
    parsed = -1;
  }
  if (parsed != 0) {
    if (rank == 0) usage(parsed == 1 ? stdout : stderr);
    MPI_Finalize();
    return parsed == 1 ? 0 : 2;
  }

  /* As in nccl-tests: min, min*f, min*f^2, ... up to and including max if it is hit. */
  size_t n_sizes = 0, last_size = 0;
  for (size_t s = opt.min_bytes; s <= opt.max_bytes; s *= opt.factor) {
    n_sizes++;
    last_size = s;
    if (s > opt.max_bytes / opt.factor) break;
  }
  unsigned char* send_buf = alloc_touched(opt.max_bytes);
  unsigned char* recv_buf = alloc_touched(opt.max_bytes);
  double* round_trips = malloc(sizeof(double) * (size_t)(opt.iters > kMaxIters ? opt.iters : kMaxIters));
  Result* results = calloc(n_sizes, sizeof(Result));
  if (send_buf == NULL || recv_buf == NULL || round_trips == NULL || results == NULL) {
    fprintf(stderr, "braid-mpi-pingpong: rank %d: out of memory for %zu-byte buffers\n", rank,
            opt.max_bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < opt.max_bytes; i++) send_buf[i] = (unsigned char)(i * 131 + 7);

  if (rank == 0) print_header(&opt, last_size, world);
  long total_wrong = 0;
  size_t size = opt.min_bytes;
  for (size_t k = 0; k < n_sizes; k++, size *= opt.factor) {
    long iters = iters_for(&opt, size);
    long wrong = pingpong(rank, size, iters, warmup_for(&opt, iters), send_buf, recv_buf,
                          round_trips, &results[k]);
    if (rank == 0) {
      printf("  %12zu %8ld %12.2f %12.3f %7ld\n", size, iters, results[k].latency_us,
             results[k].bandwidth_gbs, wrong);
      fflush(stdout);
    }
    total_wrong += wrong;
  }

  int status = total_wrong == 0 ? 0 : 1;
  if (rank == 0 && opt.json_path != NULL && write_json(opt.json_path, results, n_sizes) != 0) {
    fprintf(stderr, "braid-mpi-pingpong: cannot write %s: %s\n", opt.json_path, strerror(errno));
    status = 1;
  }
  if (rank == 0 && total_wrong != 0) {
    fprintf(stderr, "braid-mpi-pingpong: %ld bytes came back wrong\n", total_wrong);
  }
  free(results);
  free(round_trips);
  free(recv_buf);
  free(send_buf);
  MPI_Finalize();
  return status;
}
