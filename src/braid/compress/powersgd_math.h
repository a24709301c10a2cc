// PowerSGD's linear algebra (Vogels, Karimireddy, Jaggi, "PowerSGD: Practical Low-Rank Gradient
// Compression for Distributed Optimization", NeurIPS 2019), as pure functions on row-major
// fp32 matrices, shared by the powersgd codec and the compressed allreduce:
//
//   P = M Q            (rows x cols) (cols x r)  -> rows x r     multiply
//   P = orthonormal(P)  modified Gram-Schmidt on P's r columns    orthonormalize_columns
//   Q = M^T P          (cols x rows) (rows x r)  -> cols x r     multiply_transposed
//   M ~ P Q^T                                                    apply_low_rank
//
// Determinism: every function has one fixed order of operations (no threads, no run-time ISA
// choice, no libm transcendental), so the same inputs give the same bits on every rank. The
// sums whose order would otherwise be left to the compiler are written with explicit lanes.
// This holds as long as the file is compiled without -ffast-math and without FMA contraction
// (braid's default flags: baseline x86-64, where no FMA exists to contract into).
#pragma once

#include <cstdint>
#include <span>

namespace braid::compress {

// A row-major fp32 matrix view: element (i, j) is data[i * cols + j].
struct MatrixView {
  float* data;
  std::int64_t rows;
  std::int64_t cols;
};
struct ConstMatrixView {
  const float* data;
  std::int64_t rows;
  std::int64_t cols;
  ConstMatrixView(const float* d, std::int64_t r, std::int64_t c) : data(d), rows(r), cols(c) {}
  ConstMatrixView(MatrixView m) : data(m.data), rows(m.rows), cols(m.cols) {}  // NOLINT: a view converts like a pointer
};

// p = m q. REQUIRES: q.rows == m.cols, p is m.rows x q.cols, no aliasing.
// p(i, j) = sum over c of m(i, c) q(c, j), summed in 8 interleaved lanes (lane c mod 8, each
// from +0 in increasing c) combined as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)).
void multiply(ConstMatrixView m, ConstMatrixView q, MatrixView p);

// m += addend (elementwise; addend holds m.rows x m.cols floats), then p = m q: the same bits
// as that addition followed by multiply(), a block of rows at a time so that the product reads
// each block while it is still in cache (error feedback's M = gradient + residual, fused).
void add_and_multiply(MatrixView m, const float* addend, ConstMatrixView q, MatrixView p);

// q = m^T p. REQUIRES: p.rows == m.rows, q is m.cols x p.cols, no aliasing.
// q(c, j) = sum over i of m(i, c) p(i, j), added in increasing i starting from +0.
void multiply_transposed(ConstMatrixView m, ConstMatrixView p, MatrixView q);

// How apply_low_rank combines the product with what `out` holds.
enum class Combine : std::uint8_t { kOverwrite, kAdd, kSubtract };

// out (op)= p q^T, i.e. out(i, c) = s, out(i, c) + s or out(i, c) - s with s = sum over j of
// p(i, j) q(c, j), added in increasing j starting from p(i, 0) q(c, 0).
// REQUIRES: p.cols == q.cols >= 1, out is p.rows x q.rows, no aliasing. kSubtract computes
// the residual m - p q^T in place (error feedback).
void apply_low_rank(ConstMatrixView p, ConstMatrixView q, MatrixView out, Combine combine);
// out = p q^T, then residual -= out (elementwise, residual shaped as out): the same bits as
// apply_low_rank(kOverwrite) followed by that subtraction, a block of rows at a time (error
// feedback's residual = M - P Q^T, fused). REQUIRES: out and residual do not overlap.
void apply_low_rank_and_subtract(ConstMatrixView p, ConstMatrixView q, MatrixView out, MatrixView residual);

// Orthonormalises p's columns in place, in order, with modified Gram-Schmidt (dot products and
// norms accumulated in double, in increasing row order). A column whose norm after removing
// the earlier columns is zero, or at most kDependentColumn times its norm before, is linearly
// dependent on them up to float rounding: it is set to exactly zero rather than normalised
// (normalising rounding noise would invent a direction; dividing 0 by 0 would invent NaN).
// PowerSGD loses nothing by it: M^T 0 = 0 adds nothing to P Q^T.
// Non-finite entries propagate: a NaN or Inf anywhere makes the affected columns NaN.
inline constexpr double kDependentColumn = 1e-5;
void orthonormalize_columns(MatrixView p);

// Fills out with independent standard normal values, a pure function of seed: Marsaglia's
// polar method over SplitMix64 (base/splitmix64.h) uniforms, with the logarithm computed by
// braid's own fixed series (libm's log may differ in the last bit between glibc builds and
// its FMA/non-FMA variants, and every rank must draw the same Q).
void fill_standard_normal(std::uint64_t seed, std::span<float> out);

}  // namespace braid::compress
