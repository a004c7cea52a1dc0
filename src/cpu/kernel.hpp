#pragma once

// What the blocked driver asks of a microkernel: the packed layout, the tile
// arguments, the table of one (semiring, element) pair, and the scalar kernels
// used where no vector kernel exists (or an integer product could saturate).

#include <cstddef>
#include <cstdint>

#include "tropical/reference.hpp"

namespace tropical::cpu::detail {

/// One register tile: C(mr x nr) (+)= packed A sliver (x) packed B sliver over kc.
/// A sliver: a[p * mr + r]; B sliver: b[p * nr + c] (64-byte aligned); C: c[r * ldc + c].
template <class T>
struct TileArgs {
  std::int64_t kc;
  const T* a;
  const T* b;
  T* c;
  std::int64_t ldc;
  std::int32_t* idx;   // argmax kernels: the winning k
  std::int64_t ldidx;
  std::int64_t k0;     // the global k of packed column 0
  bool load;           // continue from c (and idx); else start from the zero (and -1)
};

template <class T>
using TileFn = void (*)(const TileArgs<T>&);

/// One row of C updated in place, B read where it lies: c[j] (+)= a[p] (x) b[p * ldb + j] for p < kc and
/// j < cols, a's values packed (pack_value); argmax kernels also set idx[j] = k0 + p where c[j] strictly
/// improved. c (and idx) hold the running values between calls.
template <class T>
struct RowArgs {
  std::int64_t kc, cols;
  const T* a;
  const T* b;
  std::int64_t ldb;
  T* c;
  std::int32_t* idx;
  std::int64_t k0;
};

template <class T>
using RowFn = void (*)(const RowArgs<T>&);

/// The kernels of one (semiring, element) pair on one instruction set: the
/// plain product's tile (mr x nr) and the argmax's (mra x nra), the one-row
/// tiles (1 x nr1, 1 x nra1) of products with one row, and the row kernels of
/// those whose B is read in place, null where none: `row` for B stored as is,
/// `dot` for B stored transposed (b[j * ldb + p]; these start from the zero and
/// -1: c and idx are overwritten).
template <class T>
struct KernelSet {
  int mr = 0, nr = 0;
  TileFn<T> gemm = nullptr;
  int mra = 0, nra = 0;
  TileFn<T> argmax = nullptr;
  int nr1 = 0;
  TileFn<T> gemm1 = nullptr;
  int nra1 = 0;
  TileFn<T> argmax1 = nullptr;
  RowFn<T> row = nullptr;
  RowFn<T> row_argmax = nullptr;
  RowFn<T> dot = nullptr;
  RowFn<T> dot_argmax = nullptr;
};

/// The vector kernels of (S, T) for the chosen instruction set (null members where none).
template <class S, class T>
const KernelSet<T>& vector_kernels();

/// Name of the instruction set vector_kernels() use.
const char* isa_name();

/// Index of that instruction set in the HWY_EXPORT tables of files built with microkernel.cpp's target list.
std::size_t chosen_target_index();

/// Scalar tile kernels with the reference's operations: exact for every pair.
template <class S, class T, int MR, int NR>
void scalar_gemm_tile(const TileArgs<T>& t) {
  T acc[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int c = 0; c < NR; ++c) acc[r][c] = t.load ? t.c[r * t.ldc + c] : reference::zero<S, T>();
  }
  for (std::int64_t p = 0; p < t.kc; ++p) {
    const T* a = t.a + p * MR;
    const T* b = t.b + p * NR;
    for (int r = 0; r < MR; ++r) {
      for (int c = 0; c < NR; ++c) acc[r][c] = reference::add<S, T>(acc[r][c], reference::mul<S, T>(a[r], b[c]));
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int c = 0; c < NR; ++c) t.c[r * t.ldc + c] = acc[r][c];
  }
}

template <class S, class T, int MR, int NR>
void scalar_argmax_tile(const TileArgs<T>& t) {
  T acc[MR][NR];
  std::int32_t best[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int c = 0; c < NR; ++c) {
      acc[r][c] = t.load ? t.c[r * t.ldc + c] : reference::zero<S, T>();
      best[r][c] = t.load ? t.idx[r * t.ldidx + c] : -1;
    }
  }
  for (std::int64_t p = 0; p < t.kc; ++p) {
    const T* a = t.a + p * MR;
    const T* b = t.b + p * NR;
    const auto kp = static_cast<std::int32_t>(t.k0 + p);
    for (int r = 0; r < MR; ++r) {
      for (int c = 0; c < NR; ++c) {
        const T prod = reference::mul<S, T>(a[r], b[c]);
        if (reference::better<S, T>(prod, acc[r][c])) {
          acc[r][c] = prod;
          best[r][c] = kp;
        }
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int c = 0; c < NR; ++c) {
      t.c[r * t.ldc + c] = acc[r][c];
      t.idx[r * t.ldidx + c] = best[r][c];
    }
  }
}

/// The scalar kernel set of (S, T).
template <class S, class T>
const KernelSet<T>& scalar_kernels() {
  constexpr int kMr = 4, kNr = 8;
  static const KernelSet<T> set{kMr, kNr, &scalar_gemm_tile<S, T, kMr, kNr>,
                                kMr, kNr, &scalar_argmax_tile<S, T, kMr, kNr>,
                                kNr, &scalar_gemm_tile<S, T, 1, kNr>,
                                kNr, &scalar_argmax_tile<S, T, 1, kNr>};
  return set;
}

}  // namespace tropical::cpu::detail
