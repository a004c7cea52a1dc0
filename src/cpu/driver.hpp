#pragma once

// The blocked product (BLIS's loops): C is cut into tasks of MB x NB elements
// (per product of a batch), spread over the pool; a task walks k in blocks of
// KC, packs its op(B) panel (KC x NB, in L2) once per block, then for each MC
// rows packs the op(A) block (MC x KC) and runs the register-tiled microkernel
// over every mr x nr tile, the B sliver staying in L1 while the A slivers
// stream from L2. A task owns its C tile for
// all of k, so partial results may live in C (or, with alpha/beta, in a scratch
// tile: C's old value is needed at the end) and no two threads share a write.

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>

#include "kernel.hpp"
#include "pack.hpp"
#include "pool.hpp"
#include "tropical/reference.hpp"

namespace tropical::cpu::detail {

/// One product call as the blocked driver walks it: tropical::Product flattened (made by job_of in gemm.cpp).
template <class T>
struct Job {
  Trans ta, tb;
  std::int64_t m, n, k;
  const T* a;
  std::int64_t lda;
  const T* b;
  std::int64_t ldb;
  T* c;
  std::int64_t ldc;
  std::int32_t* argmax = nullptr;  // gemm_argmax when not null
  std::int64_t ldargmax = 0;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_argmax = 0, batch = 1;
  T alpha{}, beta{};
  bool scale = false, read_c = false, scale_c = false;  // the reference's alpha/beta flags
};

/// A 64-byte aligned buffer of a thread, grown on demand and kept for its next task.
class Scratch {
 public:
  template <class T>
  T* get(std::size_t count) {
    const std::size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
    if (bytes > size_) {
      void* p = std::aligned_alloc(64, bytes);
      if (p == nullptr) throw std::bad_alloc();
      data_.reset(p);
      size_ = bytes;
    }
    return static_cast<T*>(data_.get());
  }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  std::size_t size_ = 0;
};

/// The calling thread's buffers: packed A, packed B, a tile, the epilogue's scratch.
struct ThreadBuffers {
  Scratch a, b, tile, tile_idx, acc;
};
ThreadBuffers& thread_buffers();

/// True if every product of the integer sum semiring S over the operands is
/// an ordinary sum: no operand is the zero (absorbing) and no sum can
/// saturate, judged from the extremes of op(A) and op(B). Then the vector
/// kernels' wrapping additions are exact.
template <class S, class T>
bool sums_are_exact(const Job<T>& p) {
  if (p.k == 0 || p.m == 0 || p.n == 0) return true;
  T amin = std::numeric_limits<T>::max(), amax = std::numeric_limits<T>::lowest();
  T bmin = amin, bmax = amax;
  auto scan = [](const T* x, std::int64_t ld, std::int64_t rows, std::int64_t cols, T& lo, T& hi) {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        const T v = x[r * ld + c];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
    }
  };
  const std::int64_t batch_a = p.stride_a == 0 ? 1 : p.batch, batch_b = p.stride_b == 0 ? 1 : p.batch;
  for (std::int64_t q = 0; q < batch_a; ++q) {
    scan(p.a + q * p.stride_a, p.lda, p.ta == Trans::kNo ? p.m : p.k, p.ta == Trans::kNo ? p.k : p.m, amin, amax);
  }
  for (std::int64_t q = 0; q < batch_b; ++q) {
    scan(p.b + q * p.stride_b, p.ldb, p.tb == Trans::kNo ? p.k : p.n, p.tb == Trans::kNo ? p.n : p.k, bmin, bmax);
  }
  constexpr T z = reference::zero<S, T>();
  if (amin == z || amax == z || bmin == z || bmax == z) return false;
  T sum;
  return !__builtin_add_overflow(amax, bmax, &sum) && !__builtin_add_overflow(amin, bmin, &sum);
}

/// The kernels a call uses: the vector ones where they exist and are exact for these operands.
template <class S, class T>
const KernelSet<T>& kernels_for(const Job<T>& p) {
  const KernelSet<T>& v = vector_kernels<S, T>();
  const bool want_argmax = p.argmax != nullptr;
  if (want_argmax ? v.argmax == nullptr : v.gemm == nullptr) return scalar_kernels<S, T>();
  if constexpr (std::is_integral_v<T> && S::kMul == MulKind::kAdd) {
    if (!sums_are_exact<S, T>(p)) return scalar_kernels<S, T>();
  }
  return v;
}

/// C = alpha (x) acc (+) beta (x) C as the reference writes it.
template <class S, class T>
T epilogue(const Job<T>& p, T acc, T old) {
  if (p.scale) acc = reference::mul<S, T>(p.alpha, acc);
  if (p.read_c) acc = reference::add<S, T>(acc, p.scale_c ? reference::mul<S, T>(p.beta, old) : old);
  return acc;
}

/// Trans::kYes for kNo and back: the storage of an operand read as its transpose.
inline Trans flipped(Trans t) { return t == Trans::kNo ? Trans::kYes : Trans::kNo; }

/// True if p (n = 1, C and the argmax contiguous) runs as its transpose, the one-row product
/// C^T = op(B)^T (x) op(A)^T. Every semiring's product commutes (its operands trade places), but for
/// the sign of a zero that min or max picks from -0 and +0, which is unspecified anyway (reference.hpp).
template <class T>
bool runs_transposed(const Job<T>& p) {
  return p.n == 1 && p.m > 1 && p.ldc == 1 && (p.argmax == nullptr || p.ldargmax == 1);
}

/// C^T = op(B)^T (x) op(A)^T of a product with n = 1 (runs_transposed): one row of m elements.
template <class T>
Job<T> transposed(const Job<T>& p) {
  Job<T> t = p;
  t.m = 1;
  t.n = p.m;
  t.a = p.b;
  t.lda = p.ldb;
  t.ta = flipped(p.tb);
  t.b = p.a;
  t.ldb = p.lda;
  t.tb = flipped(p.ta);
  t.stride_a = p.stride_b;
  t.stride_b = p.stride_a;
  t.ldc = p.m;
  t.ldargmax = p.m;
  return t;
}

/// A product with one row on the row kernels (RowArgs): each element of B is used once, so B is read where
/// it lies, not packed, by rows (tb = kNo) or as dot products with a's values (dot: tb = kYes); tasks take
/// blocks of C's columns for all of k.
template <class S, class T>
void run_row(const Job<T>& p, RowFn<T> kernel, bool dot, int threads) {
  const bool with_argmax = p.argmax != nullptr;
  const bool with_epilogue = p.scale || p.read_c;
  if (static_cast<double>(p.n) * static_cast<double>(p.k) * static_cast<double>(p.batch) < 262144.0) threads = 1;
  // Rows of B read whole, in order (B streams from memory at the prefetchers' rate; blocks of 512 columns,
  // 16 KiB apart, read 3x slower at 4096 x 4096 f32), C's running row in L2: up to 8192 columns a task,
  // narrower only for one task a thread.
  std::int64_t nb = p.n < 8192 ? p.n : 8192;
  const auto tasks = [&] { return p.batch * ((p.n + nb - 1) / nb); };
  while (threads > 1 && tasks() < threads && nb > 512) nb = (nb + 1) / 2;
  const std::int64_t per_product = (p.n + nb - 1) / nb;
  parallel_for(p.batch * per_product, threads, [&](std::int64_t task) {
    const std::int64_t q = task / per_product, j0 = task % per_product * nb;
    const std::int64_t cols = p.n - j0 < nb ? p.n - j0 : nb;
    ThreadBuffers& buf = thread_buffers();
    const T* a = p.a + q * p.stride_a;
    T* row = buf.a.get<T>(static_cast<std::size_t>(p.k > 0 ? p.k : 1));
    for (std::int64_t k = 0; k < p.k; ++k) row[k] = pack_value<S, T>(p.ta == Trans::kNo ? a[k] : a[k * p.lda]);
    T* c = p.c + q * p.stride_c + j0;
    std::int32_t* x = with_argmax ? p.argmax + q * p.stride_argmax + j0 : nullptr;
    T* out = with_epilogue ? buf.acc.get<T>(static_cast<std::size_t>(cols)) : c;
    for (std::int64_t j = 0; j < cols; ++j) {
      out[j] = reference::zero<S, T>();
      if (with_argmax) x[j] = -1;
    }
    const T* b = p.b + q * p.stride_b + (dot ? j0 * p.ldb : j0);
    if (p.k > 0) kernel(RowArgs<T>{p.k, cols, row, b, p.ldb, out, x, 0});
    if (with_epilogue) {
      for (std::int64_t j = 0; j < cols; ++j) c[j] = epilogue<S, T>(p, out[j], c[j]);
    }
  });
}

/// Runs a checked, non-empty product (every op but the backward passes) on `threads` threads.
template <class S, class T>
void run_product(const Job<T>& p, int threads) {
  // Matrix-vector products: one row of C, on the one-row tiles (n = 1 as its transpose). The full tiles
  // would compute mr rows (nr columns) to keep one.
  if (runs_transposed(p)) return run_product<S, T>(transposed(p), threads);
  const KernelSet<T>& ks = kernels_for<S, T>(p);
  const bool with_argmax = p.argmax != nullptr;
  if (p.m == 1) {
    const bool dot = p.tb == Trans::kYes;
    const RowFn<T> row = dot ? (with_argmax ? ks.dot_argmax : ks.dot) : (with_argmax ? ks.row_argmax : ks.row);
    if (row != nullptr) return run_row<S, T>(p, row, dot, threads);
  }
  const bool with_epilogue = p.scale || p.read_c;
  const bool one_row = p.m == 1 && (with_argmax ? ks.argmax1 : ks.gemm1) != nullptr;
  const int mr = one_row ? 1 : (with_argmax ? ks.mra : ks.mr);
  const int nr = one_row ? (with_argmax ? ks.nra1 : ks.nr1) : (with_argmax ? ks.nra : ks.nr);
  const TileFn<T> kernel = one_row ? (with_argmax ? ks.argmax1 : ks.gemm1) : (with_argmax ? ks.argmax : ks.gemm);
  // KC: the B sliver (KC x nr) in about half of L1; the argmax takes all of it (fewer blocks, fewer group
  // resolutions: measured 0.57 -> 0.60 of the plain rate on AVX-512).
  std::int64_t kc_max = ((with_argmax ? 48 : 24) * 1024) / (static_cast<std::int64_t>(nr) * static_cast<std::int64_t>(sizeof(T)));
  kc_max = kc_max < 64 ? 64 : (kc_max > 1024 ? 1024 : kc_max);
  const std::int64_t mc = mr * (96 / mr > 0 ? 96 / mr : 1);
  std::int64_t nb = nr * (512 / nr > 0 ? 512 / nr : 1);
  const double macs = static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) *
                      static_cast<double>(p.batch);
  if (macs < 262144.0) threads = 1;
  // A task takes mb rows (a multiple of mc) of one column block and packs its B
  // panel once per k block for all of them: packing costs a copy per element
  // per mb multiply-adds, which is 1/6 of the kernel's time at mb = mc = 96 on
  // AVX-512. With alpha/beta, mb = mc bounds the scratch tile. Enough tasks for
  // the threads to share evenly (3 each): fewer rows per task first, then
  // narrower column blocks.
  std::int64_t mb = with_epilogue ? mc : (p.m + mc - 1) / mc * mc;
  const auto tasks = [&] { return p.batch * ((p.m + mb - 1) / mb) * ((p.n + nb - 1) / nb); };
  while (threads > 1 && tasks() < 3 * threads && mb > mc) mb = (mb / 2 + mc - 1) / mc * mc;
  while (threads > 1 && tasks() < 3 * threads && nb > 2 * nr) nb = (nb / 2 + nr - 1) / nr * nr;
  const std::int64_t tiles_m = (p.m + mb - 1) / mb, tiles_n = (p.n + nb - 1) / nb;
  const std::int64_t per_product = tiles_m * tiles_n;

  parallel_for(p.batch * per_product, threads, [&](std::int64_t task) {
    const std::int64_t q = task / per_product, rem = task % per_product;
    const std::int64_t i0 = rem / tiles_n * mb, j0 = rem % tiles_n * nb;
    const std::int64_t rows = p.m - i0 < mb ? p.m - i0 : mb, cols = p.n - j0 < nb ? p.n - j0 : nb;
    const T* a = p.a + q * p.stride_a;
    const T* b = p.b + q * p.stride_b;
    T* c = p.c + q * p.stride_c + i0 * p.ldc + j0;
    std::int32_t* x = with_argmax ? p.argmax + q * p.stride_argmax + i0 * p.ldargmax + j0 : nullptr;
    const std::int64_t rows_pad = (rows + mr - 1) / mr * mr, cols_pad = (cols + nr - 1) / nr * nr;
    ThreadBuffers& buf = thread_buffers();
    T* tile = buf.tile.get<T>(static_cast<std::size_t>(mr) * nr);
    std::int32_t* tile_idx = buf.tile_idx.get<std::int32_t>(static_cast<std::size_t>(mr) * nr);
    // With alpha/beta the partial products go to a scratch tile: C's old value is read at the end.
    T* acc = with_epilogue ? buf.acc.get<T>(static_cast<std::size_t>(rows_pad * cols_pad)) : nullptr;
    if (p.k == 0) {
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t col = 0; col < cols; ++col) {
          T& out = c[r * p.ldc + col];
          out = with_epilogue ? epilogue<S, T>(p, reference::zero<S, T>(), out) : reference::zero<S, T>();
          if (with_argmax) x[r * p.ldargmax + col] = -1;
        }
      }
      return;
    }
    const std::int64_t kc_cap = p.k < kc_max ? p.k : kc_max;
    const std::int64_t mc_pad = (rows < mc ? rows_pad : mc);
    T* apack = buf.a.get<T>(static_cast<std::size_t>(mc_pad * kc_cap));
    T* bpack = buf.b.get<T>(static_cast<std::size_t>(cols_pad * kc_cap));
    for (std::int64_t pc = 0; pc < p.k; pc += kc_max) {
      const std::int64_t kc = p.k - pc < kc_max ? p.k - pc : kc_max;
      pack_b<S, T>(p.tb, b, p.ldb, pc, kc, j0, cols, nr, bpack);
      for (std::int64_t ic = 0; ic < rows; ic += mc) {
        const std::int64_t rows_ic = rows - ic < mc ? rows - ic : mc;
        pack_a<S, T>(p.ta, a, p.lda, i0 + ic, rows_ic, pc, kc, mr, apack);
        for (std::int64_t js = 0; js * nr < cols; ++js) {
          const int vc = static_cast<int>(cols - js * nr < nr ? cols - js * nr : nr);
          const T* bs = bpack + js * kc * nr;
          for (std::int64_t is = 0; is * mr < rows_ic; ++is) {
            const int vr = static_cast<int>(rows_ic - is * mr < mr ? rows_ic - is * mr : mr);
            const T* as = apack + is * kc * mr;
            const std::int64_t r0 = ic + is * mr;
            TileArgs<T> t{kc, as, bs, nullptr, 0, nullptr, 0, pc, pc > 0};
            const bool direct = with_epilogue || (vr == mr && vc == nr);
            T* c_tile = c + r0 * p.ldc + js * nr;
            std::int32_t* x_tile = with_argmax ? x + r0 * p.ldargmax + js * nr : nullptr;
            if (with_epilogue) {
              t.c = acc + r0 * cols_pad + js * nr;
              t.ldc = cols_pad;
            } else if (direct) {
              t.c = c_tile;
              t.ldc = p.ldc;
              t.idx = x_tile;
              t.ldidx = p.ldargmax;
            } else {
              t.c = tile;
              t.ldc = nr;
              t.idx = tile_idx;
              t.ldidx = nr;
              if (pc > 0) {
                for (int r = 0; r < vr; ++r) {
                  for (int col = 0; col < vc; ++col) {
                    tile[r * nr + col] = c_tile[r * p.ldc + col];
                    if (with_argmax) tile_idx[r * nr + col] = x_tile[r * p.ldargmax + col];
                  }
                }
              }
            }
            kernel(t);
            if (!direct) {
              for (int r = 0; r < vr; ++r) {
                for (int col = 0; col < vc; ++col) {
                  c_tile[r * p.ldc + col] = tile[r * nr + col];
                  if (with_argmax) x_tile[r * p.ldargmax + col] = tile_idx[r * nr + col];
                }
              }
            }
          }
        }
      }
    }
    if (with_epilogue) {
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t col = 0; col < cols; ++col) {
          T& out = c[r * p.ldc + col];
          out = epilogue<S, T>(p, acc[r * cols_pad + col], out);
        }
      }
    }
  });
}

}  // namespace tropical::cpu::detail
