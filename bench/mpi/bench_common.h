/* What the MPI peer benchmarks share: option values in nccl-tests spellings, pre-faulted
 * buffers and the comparison qsort needs for medians. */
#ifndef BRAID_BENCH_MPI_BENCH_COMMON_H
#define BRAID_BENCH_MPI_BENCH_COMMON_H

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* 2 MiB-aligned, THP-advised and written once, so no timed call takes a page fault. */
static inline void* alloc_touched(size_t bytes) {
  const size_t huge_page = (size_t)2 << 20;
  size_t rounded = (bytes + huge_page - 1) / huge_page * huge_page;
  if (rounded == 0) rounded = huge_page;
  void* p = NULL;
  if (posix_memalign(&p, huge_page, rounded) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, rounded, MADV_HUGEPAGE); /* a hint: fine to be refused */
#endif
  memset(p, 0, rounded);
  return p;
}

static inline int compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

#endif
