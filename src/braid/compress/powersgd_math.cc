#include "braid/compress/powersgd_math.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "braid/base/splitmix64.h"

namespace braid::compress {

namespace {

// Columns are processed in chunks of this many (16 KiB of fp32), so that the r rows of the
// transposed factor a chunk touches stay in L1/L2 while every row of M streams past them,
// however wide M is. Chunks start at multiples of 8, so the 8-lane sums below are unchanged.
constexpr std::int64_t kColumnChunk = 4096;
constexpr int kLanes = 8;
// add_and_multiply works through this many rows at a time: 32 rows of a 4096-wide matrix are 512 KiB, so the addition leaves a block in L2
// for the product that reads it.
constexpr std::int64_t kRowBlock = 32;

// a^T as a new row-major matrix (cols x rows).
std::vector<float> transposed(ConstMatrixView a) {
  std::vector<float> t(static_cast<std::size_t>(a.rows * a.cols));
  for (std::int64_t i = 0; i < a.rows; ++i) {
    for (std::int64_t j = 0; j < a.cols; ++j) t[static_cast<std::size_t>(j * a.rows + i)] = a.data[i * a.cols + j];
  }
  return t;
}

// lane[c mod 8] += a[c] * b[c] for c < n (n counted from a multiple of 8). The fixed lanes let
// the compiler use SIMD registers without reassociating anything.
void accumulate_lanes(float* lane, const float* a, const float* b, std::int64_t n) {
  float acc[kLanes];
  std::copy_n(lane, kLanes, acc);
  std::int64_t c = 0;
  for (; c + kLanes <= n; c += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[c + l] * b[c + l];
  }
  for (int l = 0; c + l < n; ++l) acc[l] += a[c + l] * b[c + l];
  std::copy_n(acc, kLanes, lane);
}

float combine_lanes(const float* l) { return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])); }

// log(s) for 0 < s < 1 from +, *, / alone: s = m 2^e with m in [sqrt(1/2), sqrt(2)),
// log m = 2 atanh(z) = 2 (z + z^3/3 + z^5/5 + ...), z = (m-1)/(m+1), |z| <= 0.172; 12 terms
// reach double precision (z^24/25 < 1e-19).
double series_log(double s) {
  int e = 0;
  double m = std::frexp(s, &e);  // exact: m in [1/2, 1)
  if (m < 0.70710678118654752) {
    m *= 2.0;
    e -= 1;
  }
  double z = (m - 1.0) / (m + 1.0);
  double z2 = z * z;
  double poly = 1.0 / 23.0;
  for (int term = 21; term >= 1; term -= 2) poly = 1.0 / term + z2 * poly;
  return static_cast<double>(e) * 0.69314718055994531 + 2.0 * z * poly;
}

// Row i of p = m q for a rank R known at compile time: one pass over the row for all R
// columns of q (R x 8 independent lanes, where the loop over j per column would re-read the
// row R times with one dependent chain of additions per lane). Each lane adds the same terms
// in the same order as accumulate_lanes, so the bits are those of the generic loop below.
template <int R>
void multiply_row_fixed(const float* __restrict row, std::int64_t cols, const float* __restrict qt, float* p_row) {
  float acc[R][kLanes] = {};
  std::int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes) {
    for (int j = 0; j < R; ++j) {
      for (int l = 0; l < kLanes; ++l) acc[j][l] += row[c + l] * qt[j * cols + c + l];
    }
  }
  for (int l = 0; c + l < cols; ++l) {
    for (int j = 0; j < R; ++j) acc[j][l] += row[c + l] * qt[j * cols + c + l];
  }
  for (int j = 0; j < R; ++j) p_row[j] = combine_lanes(acc[j]);
}

// Rows [i0, i1) of p = m q, from qt = q^T (r x cols); `lanes` holds r x kLanes floats.
void multiply_rows(ConstMatrixView m, const std::vector<float>& qt, std::int64_t r, MatrixView p, std::int64_t i0,
                   std::int64_t i1, std::vector<float>& lanes) {
  void (*fixed)(const float*, std::int64_t, const float*, float*) = nullptr;
  switch (r) {
    case 1: fixed = multiply_row_fixed<1>; break;
    case 2: fixed = multiply_row_fixed<2>; break;
    case 3: fixed = multiply_row_fixed<3>; break;
    case 4: fixed = multiply_row_fixed<4>; break;
    default: break;
  }
  for (std::int64_t i = i0; i < i1; ++i) {
    const float* row = m.data + i * m.cols;
    if (fixed != nullptr) {
      fixed(row, m.cols, qt.data(), p.data + i * r);
      continue;
    }
    std::fill(lanes.begin(), lanes.end(), 0.0f);
    for (std::int64_t c0 = 0; c0 < m.cols; c0 += kColumnChunk) {
      std::int64_t width = std::min(kColumnChunk, m.cols - c0);
      for (std::int64_t j = 0; j < r; ++j) {
        accumulate_lanes(&lanes[static_cast<std::size_t>(j * kLanes)], row + c0, &qt[static_cast<std::size_t>(j * m.cols + c0)],
                         width);
      }
    }
    for (std::int64_t j = 0; j < r; ++j) p.data[i * r + j] = combine_lanes(&lanes[static_cast<std::size_t>(j * kLanes)]);
  }
}

// Row i of out = p q^T (and residual -= the product, when given) for a rank R known at compile
// time: each element's sum of R products is formed in registers, 8 columns at a time (a block
// the compiler keeps in vector registers), in the order of the generic loop below (p(i, 0)
// q(c, 0) first, then increasing j), and stored once, where the generic loop makes R passes
// over a scratch row and one more to copy it out.
template <int R>
void apply_row_fixed(const float* weights, const float* __restrict qt, std::int64_t cols, float* __restrict dst,
                     float* __restrict residual) {
  float w[R];
  std::copy_n(weights, R, w);
  std::int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes) {
    float sum[kLanes];
    for (int l = 0; l < kLanes; ++l) sum[l] = w[0] * qt[c + l];
    for (int j = 1; j < R; ++j) {
      for (int l = 0; l < kLanes; ++l) sum[l] += w[j] * qt[j * cols + c + l];
    }
    for (int l = 0; l < kLanes; ++l) dst[c + l] = sum[l];
    if (residual != nullptr) {
      for (int l = 0; l < kLanes; ++l) residual[c + l] -= sum[l];
    }
  }
  for (; c < cols; ++c) {
    float sum = w[0] * qt[c];
    for (int j = 1; j < R; ++j) sum += w[j] * qt[j * cols + c];
    dst[c] = sum;
    if (residual != nullptr) residual[c] -= sum;
  }
}

// Rows [i0, i1) of out (op)= p q^T, from qt = q^T (r x cols), and residual -= p q^T where
// residual (shaped as out) is not null; `sum` holds min(kColumnChunk, cols) floats.
void apply_low_rank_rows(ConstMatrixView p, const std::vector<float>& qt, std::int64_t cols, MatrixView out,
                         Combine combine, std::int64_t i0, std::int64_t i1, std::vector<float>& sum, float* residual) {
  const std::int64_t r = p.cols;
  void (*fixed)(const float*, const float*, std::int64_t, float*, float*) = nullptr;
  switch (combine == Combine::kOverwrite ? r : 0) {
    case 1: fixed = apply_row_fixed<1>; break;
    case 2: fixed = apply_row_fixed<2>; break;
    case 3: fixed = apply_row_fixed<3>; break;
    case 4: fixed = apply_row_fixed<4>; break;
    default: break;
  }
  if (fixed != nullptr) {
    for (std::int64_t i = i0; i < i1; ++i) {
      fixed(p.data + i * r, qt.data(), cols, out.data + i * cols, residual ? residual + i * cols : nullptr);
    }
    return;
  }
  for (std::int64_t c0 = 0; c0 < cols; c0 += kColumnChunk) {
    std::int64_t width = std::min(kColumnChunk, cols - c0);
    for (std::int64_t i = i0; i < i1; ++i) {
      const float* weights = p.data + i * r;
      for (std::int64_t c = 0; c < width; ++c) sum[c] = weights[0] * qt[c0 + c];
      for (std::int64_t j = 1; j < r; ++j) {
        const float* qrow = &qt[static_cast<std::size_t>(j * cols + c0)];
        for (std::int64_t c = 0; c < width; ++c) sum[c] += weights[j] * qrow[c];
      }
      float* dst = out.data + i * cols + c0;
      switch (combine) {
        case Combine::kOverwrite: std::copy_n(sum.begin(), width, dst); break;
        case Combine::kAdd: for (std::int64_t c = 0; c < width; ++c) dst[c] += sum[c]; break;
        case Combine::kSubtract: for (std::int64_t c = 0; c < width; ++c) dst[c] -= sum[c]; break;
      }
      if (residual != nullptr) {
        float* left = residual + i * cols + c0;
        for (std::int64_t c = 0; c < width; ++c) left[c] -= sum[c];
      }
    }
  }
}

}  // namespace

void multiply(ConstMatrixView m, ConstMatrixView q, MatrixView p) {
  const std::vector<float> qt = transposed(q);  // r x cols: each column of q becomes a contiguous row
  std::vector<float> lanes(static_cast<std::size_t>(q.cols * kLanes));
  multiply_rows(m, qt, q.cols, p, 0, m.rows, lanes);
}

void add_and_multiply(MatrixView m, const float* addend, ConstMatrixView q, MatrixView p) {
  const std::vector<float> qt = transposed(q);
  std::vector<float> lanes(static_cast<std::size_t>(q.cols * kLanes));
  for (std::int64_t i0 = 0; i0 < m.rows; i0 += kRowBlock) {
    const std::int64_t i1 = std::min(m.rows, i0 + kRowBlock);
    float* __restrict block = m.data + i0 * m.cols;
    const float* __restrict extra = addend + i0 * m.cols;
    const std::int64_t n = (i1 - i0) * m.cols;
    for (std::int64_t k = 0; k < n; ++k) block[k] += extra[k];
    multiply_rows(m, qt, q.cols, p, i0, i1, lanes);
  }
}

void multiply_transposed(ConstMatrixView m, ConstMatrixView p, MatrixView q) {
  const std::int64_t r = p.cols;
  std::vector<float> qt(static_cast<std::size_t>(r * m.cols), 0.0f);  // r x cols, transposed into q at the end
  for (std::int64_t c0 = 0; c0 < m.cols; c0 += kColumnChunk) {
    std::int64_t width = std::min(kColumnChunk, m.cols - c0);
    for (std::int64_t i = 0; i < m.rows; ++i) {
      const float* row = m.data + i * m.cols + c0;
      for (std::int64_t j = 0; j < r; ++j) {
        float weight = p.data[i * r + j];
        float* acc = &qt[static_cast<std::size_t>(j * m.cols + c0)];
        for (std::int64_t c = 0; c < width; ++c) acc[c] += weight * row[c];
      }
    }
  }
  for (std::int64_t j = 0; j < r; ++j) {
    for (std::int64_t c = 0; c < m.cols; ++c) q.data[c * r + j] = qt[static_cast<std::size_t>(j * m.cols + c)];
  }
}

void apply_low_rank(ConstMatrixView p, ConstMatrixView q, MatrixView out, Combine combine) {
  const std::vector<float> qt = transposed(q);  // r x cols
  std::vector<float> sum(static_cast<std::size_t>(std::min(kColumnChunk, q.rows)));
  apply_low_rank_rows(p, qt, q.rows, out, combine, 0, p.rows, sum, nullptr);
}

void apply_low_rank_and_subtract(ConstMatrixView p, ConstMatrixView q, MatrixView out, MatrixView residual) {
  const std::vector<float> qt = transposed(q);
  std::vector<float> sum(static_cast<std::size_t>(std::min(kColumnChunk, q.rows)));
  apply_low_rank_rows(p, qt, q.rows, out, Combine::kOverwrite, 0, p.rows, sum, residual.data);
}

void orthonormalize_columns(MatrixView p) {
  const std::int64_t rows = p.rows;
  const std::int64_t r = p.cols;
  auto at = [&](std::int64_t i, std::int64_t j) -> float& { return p.data[i * r + j]; };
  auto norm = [&](std::int64_t j) {
    double squares = 0.0;
    for (std::int64_t i = 0; i < rows; ++i) squares += static_cast<double>(at(i, j)) * at(i, j);
    return std::sqrt(squares);
  };
  for (std::int64_t j = 0; j < r; ++j) {
    double before = norm(j);
    for (std::int64_t prev = 0; prev < j; ++prev) {
      double dot = 0.0;
      for (std::int64_t i = 0; i < rows; ++i) dot += static_cast<double>(at(i, prev)) * at(i, j);
      for (std::int64_t i = 0; i < rows; ++i) at(i, j) = static_cast<float>(at(i, j) - dot * at(i, prev));
    }
    double after = norm(j);
    // A NaN `after` or non-finite `before` fails this test and is divided through, so NaN spreads.
    bool dependent = std::isfinite(before) && after <= kDependentColumn * before;
    for (std::int64_t i = 0; i < rows; ++i) at(i, j) = dependent ? 0.0f : static_cast<float>(at(i, j) / after);
  }
}

void fill_standard_normal(std::uint64_t seed, std::span<float> out) {
  SplitMix64 rng(seed);
  std::size_t i = 0;
  while (i < out.size()) {
    double u = 2.0 * rng.next_unit() - 1.0;
    double v = 2.0 * rng.next_unit() - 1.0;
    double s = u * u + v * v;
    if (s >= 1.0 || s == 0.0) continue;  // outside the unit disc: draw again
    double factor = std::sqrt(-2.0 * series_log(s) / s);
    out[i++] = static_cast<float>(u * factor);
    if (i < out.size()) out[i++] = static_cast<float>(v * factor);
  }
}

}  // namespace braid::compress
