// bits_wgmma_check: the operands and the reference of tools/bits_wgmma_lab.cu: random and diagonal packed
// rows, witness counts on CUDA cores, and the element-by-element comparison of a product's C with them.
#pragma once

__device__ __host__ inline unsigned long long mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// Rows x ld words of random bits, each 1 with probability p, bits past k zero.
__global__ void fill_bits(unsigned* w, int rows, int ld, int k, unsigned long long seed, double p) {
  const unsigned long long cut = (unsigned long long)(p * (double)(1ull << 24));
  const long long words = (long long)rows * ld;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < words; i += (long long)gridDim.x * blockDim.x) {
    const int col = (int)(i % ld);
    unsigned v = 0;
    for (int b = 0; b < 32; ++b)
      if (32 * col + b < k) v |= (unsigned)((mix(seed ^ (unsigned long long)(32 * i + b)) >> 40) < cut) << b;
    w[i] = v;
  }
}

// Row i of a rows x ld-word matrix holds bit (i * stride) % k alone: with A's stride 1 and B's 1, C = I; a
// wrong row or k order in shared memory shows as where the ones land.
__global__ void fill_diagonal(unsigned* w, int rows, int ld, int k, int stride) {
  for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < (long long)rows * ld;
       q += (long long)gridDim.x * blockDim.x) {
    const int i = (int)(q / ld), col = (int)(q % ld), bit = (int)(((long long)i * stride) % k);
    w[q] = bit / 32 == col ? 1u << (bit % 32) : 0u;
  }
}

// The reference: witness counts on CUDA cores, 64 x 64 outputs a block of 16 x 16 threads.
__global__ void __launch_bounds__(256) reference_counts(const unsigned* a, const unsigned* bt, int* c, int m, int n,
                                                        int kw, int lda, int ldb, int ldc) {
  __shared__ unsigned sa[64][33], sb[64][33];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const int i0 = blockIdx.y * 64, j0 = blockIdx.x * 64;
  int cnt[4][4] = {};
  for (int w0 = 0; w0 < kw; w0 += 32) {
    for (int q = tid; q < 64 * 32; q += 256) {
      const int r = q / 32, w = q % 32;
      sa[r][w] = i0 + r < m && w0 + w < kw ? a[(size_t)(i0 + r) * lda + w0 + w] : 0u;
      sb[r][w] = j0 + r < n && w0 + w < kw ? bt[(size_t)(j0 + r) * ldb + w0 + w] : 0u;
    }
    __syncthreads();
    for (int w = 0; w < 32; ++w)
      for (int x = 0; x < 4; ++x)
        for (int y = 0; y < 4; ++y) cnt[x][y] += __popc(sa[ty + 16 * x][w] & sb[tx + 16 * y][w]);
    __syncthreads();
  }
  for (int x = 0; x < 4; ++x)
    for (int y = 0; y < 4; ++y)
      if (i0 + ty + 16 * x < m && j0 + tx + 16 * y < n) c[(size_t)(i0 + ty + 16 * x) * ldc + j0 + tx + 16 * y] = cnt[x][y];
}

// Mismatches of C against the reference counts: out[0] += their number, out[1] = min(i * cols + j) of them,
// out[2 ..] the first 8 found (in no order). Packed bits: every bit of the row's words, those past n expected zero.
__global__ void compare(const void* got, const int* ref, int m, int n, int ldc, int ldr, int output,
                        unsigned long long* out) {
  const int cols = output == 0 ? 32 * ldc : n;
  for (long long q = blockIdx.x * (long long)blockDim.x + threadIdx.x; q < (long long)m * cols;
       q += (long long)gridDim.x * blockDim.x) {
    const int i = (int)(q / cols), j = (int)(q % cols);
    bool bad;
    if (output == 0) {
      const unsigned bit = (static_cast<const unsigned*>(got)[(size_t)i * ldc + j / 32] >> (j % 32)) & 1u;
      bad = bit != (j < n && ref[(size_t)i * ldr + j] != 0 ? 1u : 0u);
    } else {
      bad = static_cast<const int*>(got)[(size_t)i * ldc + j] != ref[(size_t)i * ldr + j];
    }
    if (bad) {
      const unsigned long long at = atomicAdd(&out[0], 1ull);
      atomicMin(&out[1], (unsigned long long)q);
      if (at < 8) out[2 + at] = (unsigned long long)q;
    }
  }
}
