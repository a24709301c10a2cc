/* Command-line value parsing shared by the MPI peer benchmarks (nccl-tests spellings). */
#ifndef BRAID_BENCH_MPI_BENCH_ARGS_H
#define BRAID_BENCH_MPI_BENCH_ARGS_H

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

/* "64M" -> 67108864. Returns 0 on success. */
static inline int parse_size(const char* text, size_t* out) {
  char* end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') return -1;
  unsigned shift = 0;
  switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
  }
  if (shift != 0 && *end == 'i') end++; /* KiB, MiB, GiB */
  if (*end == 'b' || *end == 'B') end++;
  if (*end != '\0') return -1;
  if (value > (ULLONG_MAX >> shift)) return -1;
  *out = (size_t)(value << shift);
  return 0;
}

static inline int parse_count(const char* text, long* out) {
  char* end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < 0) return -1;
  *out = value;
  return 0;
}

#endif
