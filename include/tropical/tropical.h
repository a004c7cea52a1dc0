/* The C ABI of tropical: every product of the catalog, on device memory (a CUDA
 * GPU) or host memory (the CPU), callable from C99, C++, Python (ctypes),
 * Julia (ccall) and Rust (extern "C").
 *
 * Conventions (the same as the C++ API, include/tropical/gemm.hpp; the
 * semantics of infinities, integer saturation, NaN, argmax ties and alpha/beta
 * are documented once, in include/tropical/reference.hpp):
 * - Matrices are row-major. op(X) is X, or X stored transposed when its
 *   tropical_trans is TROPICAL_TRANS: op(A) is m x k, so A itself is m x k
 *   with lda >= k, or k x m with lda >= m when transposed (CBLAS RowMajor).
 *   Sizes, leading dimensions and strides count elements, not bytes.
 * - tropical_* functions take device pointers and queue the work on `stream`
 *   (a CUstream, or a cudaStream_t, which is the same handle; NULL: the
 *   device's default stream) and return without waiting. tropical_cpu_*
 *   functions take host pointers and return when the result is written.
 * - alpha and beta point to one element of the operands' type; NULL alpha is
 *   the semiring one (no scaling), NULL beta the semiring zero (C is
 *   overwritten, not read).
 * - Every pointer is aligned for its element type: operands, alpha and beta
 *   to their dtype's size (tropical_dtype_size), argmax to 4 bytes. A pointer
 *   that is not gets TROPICAL_ERROR_INVALID_ARGUMENT, never an unaligned read.
 * - An enum argument outside its enum gets TROPICAL_ERROR_INVALID_ARGUMENT
 *   (queries: 0), whatever int a caller passes.
 * - Every function returns a tropical_status; TROPICAL_OK is 0. On failure
 *   nothing was queued or written, and tropical_last_error() gives the
 *   library's message on the failing thread. No C++ exception ever crosses
 *   this boundary.
 * - Thread-safe: any thread may call any function at any time.
 */
#ifndef TROPICAL_TROPICAL_H
#define TROPICAL_TROPICAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TROPICAL_API __attribute__((visibility("default")))
#else
#define TROPICAL_API
#endif

/** The version of this header's ABI: raised when a signature or an enum value changes. */
#define TROPICAL_ABI_VERSION 1

/** What a call returned: TROPICAL_OK, or the kind of failure (tropical::Errc's, plus three). */
typedef enum tropical_status {
  TROPICAL_OK = 0,
  TROPICAL_ERROR_INVALID_ARGUMENT = 1, /**< bad shape, null or wrong-device pointer, bad enum value */
  TROPICAL_ERROR_UNAVAILABLE = 2,      /**< no driver, no GPU, no NVRTC */
  TROPICAL_ERROR_COMPILE = 3,          /**< NVRTC rejected a fragment (the message holds its log) */
  TROPICAL_ERROR_CUDA = 4,             /**< a CUDA driver call failed */
  TROPICAL_ERROR_NOT_IN_CATALOG = 5,   /**< this semiring x type x operation is not generated */
  TROPICAL_ERROR_OUT_OF_MEMORY = 6,    /**< a host allocation failed */
  TROPICAL_ERROR_INTERNAL = 7          /**< anything else (a bug: please report the message) */
} tropical_status;

/** The semirings of the catalog: (add, multiply). */
typedef enum tropical_semiring {
  TROPICAL_MAXPLUS = 0, /**< (max, +) */
  TROPICAL_MINPLUS = 1, /**< (min, +) */
  TROPICAL_MAXMUL = 2,  /**< (max, x), non-negative values */
  TROPICAL_MAXMIN = 3,  /**< (max, min): bottleneck paths */
  TROPICAL_MINMAX = 4,  /**< (min, max) */
  TROPICAL_ANDOR = 5,   /**< (or, and) over bytes: reachability */
  TROPICAL_COUNTING = 6 /**< CountingTropical: (value, count) pairs, f32 or f64; its own calls (tropical_counting_*) */
} tropical_semiring;

/** Element types: MaxPlus, MinPlus, MaxMul, MaxMin and MinMax have f32, f64, i32, i64, i16; AndOr has u8
 * only; CountingTropical f32 and f64 (values and counts of that type). */
typedef enum tropical_dtype {
  TROPICAL_F32 = 0,
  TROPICAL_F64 = 1,
  TROPICAL_I32 = 2,
  TROPICAL_I64 = 3,
  TROPICAL_U8 = 4,
  TROPICAL_I16 = 5
} tropical_dtype;

/** The operations of the catalog (backward passes: MaxPlus, MinPlus, MaxMul over f32 and f64). */
typedef enum tropical_op {
  TROPICAL_OP_GEMM = 0,
  TROPICAL_OP_GEMM_ARGMAX = 1,
  TROPICAL_OP_BACKWARD_A = 2,
  TROPICAL_OP_BACKWARD_B = 3,
  TROPICAL_OP_GEMM_BATCHED = 4,
  TROPICAL_OP_GEMM_BATCHED_ARGMAX = 5,
  TROPICAL_OP_BACKWARD_A_BATCHED = 6,
  TROPICAL_OP_BACKWARD_B_BATCHED = 7
} tropical_op;

/** Storage of an operand: as is, or transposed (row-major either way). */
typedef enum tropical_trans { TROPICAL_NO_TRANS = 0, TROPICAL_TRANS = 1 } tropical_trans;

/** The message of the last failing call on this thread ("" if none); valid until the thread's next call. */
TROPICAL_API const char* tropical_last_error(void);

/** The library's version ("0.1.0"). */
TROPICAL_API const char* tropical_version(void);

/** TROPICAL_ABI_VERSION of the library the program runs with. */
TROPICAL_API int tropical_abi_version(void);

/** Number of CUDA devices the process can use: 0 without a driver or a GPU. Never fails. */
TROPICAL_API int tropical_device_count(void);

/** Compute capability of `device` as 10 * major + minor (90 for an H100) into *arch. */
TROPICAL_API tropical_status tropical_device_arch(int device, int* arch);

/** Size in bytes of one element of `dtype` (0 for a value outside the enum). */
TROPICAL_API size_t tropical_dtype_size(tropical_dtype dtype);

/** 1 if the catalog has (semiring, dtype, op), else 0 (also for values outside the enums). */
TROPICAL_API int tropical_has_kernel(tropical_semiring semiring, tropical_dtype dtype, tropical_op op);

/** 1 if the CPU backend has (semiring, dtype, op), the same set as the catalog's, else 0. */
TROPICAL_API int tropical_cpu_has_kernel(tropical_semiring semiring, tropical_dtype dtype, tropical_op op);

/** Number of kernels in the catalog (ids are 0 .. count - 1). */
TROPICAL_API uint32_t tropical_kernel_count(void);

/** The name of kernel `id` ("tropical_gemm_maxplus_f32"; small tiles end in "_<m>x<n>"), or NULL. */
TROPICAL_API const char* tropical_kernel_name(uint32_t id);

/** The id of the kernel named `name` into *id (TROPICAL_ERROR_NOT_IN_CATALOG if none). */
TROPICAL_API tropical_status tropical_kernel_id(const char* name, uint32_t* id);

/** The id of (semiring, dtype, op)'s default kernel into *id. */
TROPICAL_API tropical_status tropical_find_kernel(tropical_semiring semiring, tropical_dtype dtype, tropical_op op,
                                                  uint32_t* id);

/** Compiles kernels `ids` (count of them; the whole catalog, small tiles included, if count is 0)
 * for sm_<arch> (0: device 0's) into memory and the disk cache on `threads` workers (0: every core);
 * needs NVRTC, not a GPU (unless arch is 0). *compiled receives how many NVRTC compiled in this call,
 * *ready how many were already in memory or a cache store (either pointer may be NULL). If any kernel
 * failed, returns its status (TROPICAL_ERROR_UNAVAILABLE without NVRTC, else
 * TROPICAL_ERROR_COMPILE) with the first failure's message; the others were still warmed. */
TROPICAL_API tropical_status tropical_warm(const uint32_t* ids, size_t count, int arch, unsigned threads,
                                           size_t* compiled, size_t* ready);

/** Publishes to the fleet cache kernels `ids` (count of them; the whole catalog if count is 0) that the
 * disk cache holds for sm_<arch> (0: device 0's), that this process did not compile and the fleet lacks:
 * each is compiled again and that compile signed and published, never the cached entry. *published (may
 * be NULL) receives how many: 0 where this node may not publish (no TROPICAL_REMOTE_CACHE or no signing
 * key). A kernel that fails to compile is skipped with a message on stderr. Needs NVRTC, not a GPU. */
TROPICAL_API tropical_status tropical_publish_cached(const uint32_t* ids, size_t count, int arch,
                                                     size_t* published);

/* ---- GPU: device pointers, queued on a stream ------------------------------------------------ */

/** C (m x n, ldc) = alpha (x) (op(A) (x) op(B)) (+) beta (x) C. */
TROPICAL_API tropical_status tropical_gemm(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                           tropical_trans tb, int64_t m, int64_t n, int64_t k, const void* alpha,
                                           const void* a, int64_t lda, const void* b, int64_t ldb,
                                           const void* beta, void* c, int64_t ldc, void* stream);

/** C = op(A) (x) op(B) and argmax (int32, m x n, ldargmax): the winning k, ties to the smallest, -1 if none. */
TROPICAL_API tropical_status tropical_gemm_argmax(tropical_semiring semiring, tropical_dtype dtype,
                                                  tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
                                                  int64_t k, const void* a, int64_t lda, const void* b,
                                                  int64_t ldb, void* c, int64_t ldc, int32_t* argmax,
                                                  int64_t ldargmax, void* stream);

/** dA (laid out like A) from dC (m x n) and the forward argmax; overwrites dA. `b` is read for MaxMul only. */
TROPICAL_API tropical_status tropical_backward_a(tropical_semiring semiring, tropical_dtype dtype,
                                                 tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
                                                 int64_t k, const void* grad_c, int64_t ldgc,
                                                 const int32_t* argmax, int64_t ldargmax, const void* b,
                                                 int64_t ldb, void* grad_a, int64_t ldga, void* stream);

/** dB (laid out like B) from dC (m x n) and the forward argmax; overwrites dB. `a` is read for MaxMul only. */
TROPICAL_API tropical_status tropical_backward_b(tropical_semiring semiring, tropical_dtype dtype,
                                                 tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
                                                 int64_t k, const void* grad_c, int64_t ldgc,
                                                 const int32_t* argmax, int64_t ldargmax, const void* a,
                                                 int64_t lda, void* grad_b, int64_t ldgb, void* stream);

/** C[p] = alpha (x) (op(A[p]) (x) op(B[p])) (+) beta (x) C[p] for p < batch; X[p] = x + p * stride_x
 * (a stride of 0 shares one operand across the batch). */
TROPICAL_API tropical_status tropical_gemm_batched(tropical_semiring semiring, tropical_dtype dtype,
                                                   tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
                                                   int64_t k, const void* alpha, const void* a, int64_t lda,
                                                   int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
                                                   const void* beta, void* c, int64_t ldc, int64_t stride_c,
                                                   int64_t batch, void* stream);

/** gemm_argmax of every product of a batch, strided like tropical_gemm_batched. */
TROPICAL_API tropical_status tropical_gemm_batched_argmax(
    tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
    int64_t k, const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, void* c,
    int64_t ldc, int64_t stride_c, int32_t* argmax, int64_t ldargmax, int64_t stride_argmax, int64_t batch,
    void* stream);

/** backward_a of every product of a batch (deterministic: terms added in increasing j). */
TROPICAL_API tropical_status tropical_backward_a_batched(
    tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
    int64_t k, const void* grad_c, int64_t ldgc, int64_t stride_gc, const int32_t* argmax, int64_t ldargmax,
    int64_t stride_argmax, const void* b, int64_t ldb, int64_t stride_b, void* grad_a, int64_t ldga,
    int64_t stride_ga, int64_t batch, void* stream);

/** backward_b of every product of a batch (deterministic: terms added in increasing i). */
TROPICAL_API tropical_status tropical_backward_b_batched(
    tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
    int64_t k, const void* grad_c, int64_t ldgc, int64_t stride_gc, const int32_t* argmax, int64_t ldargmax,
    int64_t stride_argmax, const void* a, int64_t lda, int64_t stride_a, void* grad_b, int64_t ldgb,
    int64_t stride_gb, int64_t batch, void* stream);

/** CountingTropical (tropical/counting.hpp; semantics in tropical/reference.hpp): C = op(A) (x) op(B) where
 * each matrix is two arrays of `dtype` (TROPICAL_F32 or TROPICAL_F64), values and counts, each with its own
 * leading dimension; ta (tb) applies to both of A's (B's) arrays. C's values and counts are overwritten (no
 * alpha/beta). */
TROPICAL_API tropical_status tropical_counting_gemm(tropical_dtype dtype, tropical_trans ta, tropical_trans tb,
                                                    int64_t m, int64_t n, int64_t k, const void* a_values,
                                                    int64_t lda_values, const void* a_counts, int64_t lda_counts,
                                                    const void* b_values, int64_t ldb_values, const void* b_counts,
                                                    int64_t ldb_counts, void* c_values, int64_t ldc_values,
                                                    void* c_counts, int64_t ldc_counts, void* stream);

/** tropical_counting_gemm of every product of a batch; each array's matrix p starts p * its stride after its base. */
TROPICAL_API tropical_status tropical_counting_gemm_batched(
    tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m, int64_t n, int64_t k,
    const void* a_values, int64_t lda_values, int64_t stride_a_values, const void* a_counts, int64_t lda_counts,
    int64_t stride_a_counts, const void* b_values, int64_t ldb_values, int64_t stride_b_values,
    const void* b_counts, int64_t ldb_counts, int64_t stride_b_counts, void* c_values, int64_t ldc_values,
    int64_t stride_c_values, void* c_counts, int64_t ldc_counts, int64_t stride_c_counts, int64_t batch,
    void* stream);

/* ---- CPU: host pointers, done on return; the same arguments without the stream ---------------- */

/** Sets the CPU backend's thread count (n >= 1), or back to TROPICAL_NUM_THREADS / every core (n = 0). */
TROPICAL_API tropical_status tropical_cpu_set_num_threads(int n);

/** The CPU backend's thread count of a call (what n = 0 means now). */
TROPICAL_API int tropical_cpu_num_threads(void);

/** The instruction set the CPU microkernels run on ("avx512", "avx2", "sse4", "scalar", ...). */
TROPICAL_API const char* tropical_cpu_isa(void);

/** tropical_gemm on host memory. */
TROPICAL_API tropical_status tropical_cpu_gemm(tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta,
                                               tropical_trans tb, int64_t m, int64_t n, int64_t k,
                                               const void* alpha, const void* a, int64_t lda, const void* b,
                                               int64_t ldb, const void* beta, void* c, int64_t ldc);

/** tropical_gemm_argmax on host memory. */
TROPICAL_API tropical_status tropical_cpu_gemm_argmax(tropical_semiring semiring, tropical_dtype dtype,
                                                      tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
                                                      int64_t k, const void* a, int64_t lda, const void* b,
                                                      int64_t ldb, void* c, int64_t ldc, int32_t* argmax,
                                                      int64_t ldargmax);

/** tropical_backward_a on host memory (deterministic: terms added in increasing j). */
TROPICAL_API tropical_status tropical_cpu_backward_a(tropical_semiring semiring, tropical_dtype dtype,
                                                     tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
                                                     int64_t k, const void* grad_c, int64_t ldgc,
                                                     const int32_t* argmax, int64_t ldargmax, const void* b,
                                                     int64_t ldb, void* grad_a, int64_t ldga);

/** tropical_backward_b on host memory (deterministic: terms added in increasing i). */
TROPICAL_API tropical_status tropical_cpu_backward_b(tropical_semiring semiring, tropical_dtype dtype,
                                                     tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
                                                     int64_t k, const void* grad_c, int64_t ldgc,
                                                     const int32_t* argmax, int64_t ldargmax, const void* a,
                                                     int64_t lda, void* grad_b, int64_t ldgb);

/** tropical_gemm_batched on host memory. */
TROPICAL_API tropical_status tropical_cpu_gemm_batched(tropical_semiring semiring, tropical_dtype dtype,
                                                       tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
                                                       int64_t k, const void* alpha, const void* a, int64_t lda,
                                                       int64_t stride_a, const void* b, int64_t ldb,
                                                       int64_t stride_b, const void* beta, void* c, int64_t ldc,
                                                       int64_t stride_c, int64_t batch);

/** tropical_gemm_batched_argmax on host memory. */
TROPICAL_API tropical_status tropical_cpu_gemm_batched_argmax(
    tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
    int64_t k, const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, void* c,
    int64_t ldc, int64_t stride_c, int32_t* argmax, int64_t ldargmax, int64_t stride_argmax, int64_t batch);

/** tropical_backward_a_batched on host memory. */
TROPICAL_API tropical_status tropical_cpu_backward_a_batched(
    tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
    int64_t k, const void* grad_c, int64_t ldgc, int64_t stride_gc, const int32_t* argmax, int64_t ldargmax,
    int64_t stride_argmax, const void* b, int64_t ldb, int64_t stride_b, void* grad_a, int64_t ldga,
    int64_t stride_ga, int64_t batch);

/** tropical_backward_b_batched on host memory. */
TROPICAL_API tropical_status tropical_cpu_backward_b_batched(
    tropical_semiring semiring, tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m, int64_t n,
    int64_t k, const void* grad_c, int64_t ldgc, int64_t stride_gc, const int32_t* argmax, int64_t ldargmax,
    int64_t stride_argmax, const void* a, int64_t lda, int64_t stride_a, void* grad_b, int64_t ldgb,
    int64_t stride_gb, int64_t batch);

/** tropical_counting_gemm on host memory. */
TROPICAL_API tropical_status tropical_cpu_counting_gemm(tropical_dtype dtype, tropical_trans ta, tropical_trans tb,
                                                        int64_t m, int64_t n, int64_t k, const void* a_values,
                                                        int64_t lda_values, const void* a_counts,
                                                        int64_t lda_counts, const void* b_values,
                                                        int64_t ldb_values, const void* b_counts,
                                                        int64_t ldb_counts, void* c_values, int64_t ldc_values,
                                                        void* c_counts, int64_t ldc_counts);

/** tropical_counting_gemm_batched on host memory. */
TROPICAL_API tropical_status tropical_cpu_counting_gemm_batched(
    tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m, int64_t n, int64_t k,
    const void* a_values, int64_t lda_values, int64_t stride_a_values, const void* a_counts, int64_t lda_counts,
    int64_t stride_a_counts, const void* b_values, int64_t ldb_values, int64_t stride_b_values,
    const void* b_counts, int64_t ldb_counts, int64_t stride_b_counts, void* c_values, int64_t ldc_values,
    int64_t stride_c_values, void* c_counts, int64_t ldc_counts, int64_t stride_c_counts, int64_t batch);

/* Bit-packed booleans (tropical/bits.hpp states the layout): a rows x k boolean matrix as rows of 32-bit
 * words, element (i, j) bit j % 32 of word i * ld + j / 32, ld in words >= (k + 31) / 32 (recommended:
 * tropical_bits_ld(k), a multiple of 8 words); padding bits are never read. Products take A (m x k) packed by
 * rows and B as B^T (n x k) packed by rows, and give C(i, j) = OR_k A(i, k) AND B(k, j) in one of three forms. */

/** The form of a packed product's C: packed bits (ldc in words), bytes 0/1 (ldc in bytes), int32 witness counts. */
typedef enum tropical_bits_output {
  TROPICAL_BITS_PACKED = 0,
  TROPICAL_BITS_BYTES = 1,
  TROPICAL_BITS_COUNTS = 2
} tropical_bits_output;

/** The recommended leading dimension, in 32-bit words, of packed rows of k bits (a multiple of 8, at least 8). */
TROPICAL_API int64_t tropical_bits_ld(int64_t k);

/** Packs rows x k bytes (host memory, lda bytes apart; non-zero is true) into words (ldw words apart). */
TROPICAL_API tropical_status tropical_cpu_pack_bits(int64_t rows, int64_t k, const uint8_t* a, int64_t lda,
                                                    uint32_t* words, int64_t ldw);

/** Unpacks rows x k bits (host memory) into bytes 0/1. */
TROPICAL_API tropical_status tropical_cpu_unpack_bits(int64_t rows, int64_t k, const uint32_t* words, int64_t ldw,
                                                      uint8_t* a, int64_t lda);

/** Writes the transpose (cols x rows, ldout words) of a packed rows x cols matrix (host memory). */
TROPICAL_API tropical_status tropical_cpu_transpose_bits(int64_t rows, int64_t cols, const uint32_t* in,
                                                         int64_t ldin, uint32_t* out, int64_t ldout);

/** C = A AND-OR B on host memory, A packed by rows (lda words), bt = B^T packed by rows (ldb words). */
TROPICAL_API tropical_status tropical_cpu_bits_gemm(tropical_bits_output output, int64_t m, int64_t n, int64_t k,
                                                    const uint32_t* a, int64_t lda, const uint32_t* bt, int64_t ldb,
                                                    void* c, int64_t ldc);

/** tropical_cpu_bits_gemm of every product of a batch (strides in words, C's in its elements). */
TROPICAL_API tropical_status tropical_cpu_bits_gemm_batched(tropical_bits_output output, int64_t m, int64_t n,
                                                            int64_t k, const uint32_t* a, int64_t lda,
                                                            int64_t stride_a, const uint32_t* bt, int64_t ldb,
                                                            int64_t stride_b, void* c, int64_t ldc, int64_t stride_c,
                                                            int64_t batch);

/** Replaces the packed n x n adjacency matrix (host memory) by its reflexive-transitive closure; the number of
 * squarings into *iterations (may be NULL). */
TROPICAL_API tropical_status tropical_cpu_bits_closure(int64_t n, uint32_t* words, int64_t ld, int64_t* iterations);

/** tropical_cpu_bits_gemm on device memory, queued on `stream`: binary tensor cores (sm_80 and newer). */
TROPICAL_API tropical_status tropical_bits_gemm(tropical_bits_output output, int64_t m, int64_t n, int64_t k,
                                                const uint32_t* a, int64_t lda, const uint32_t* bt, int64_t ldb,
                                                void* c, int64_t ldc, void* stream);

/** tropical_cpu_bits_gemm_batched on device memory, queued on `stream`. */
TROPICAL_API tropical_status tropical_bits_gemm_batched(tropical_bits_output output, int64_t m, int64_t n, int64_t k,
                                                        const uint32_t* a, int64_t lda, int64_t stride_a,
                                                        const uint32_t* bt, int64_t ldb, int64_t stride_b, void* c,
                                                        int64_t ldc, int64_t stride_c, int64_t batch, void* stream);

/** tropical_cpu_bits_closure on device memory, every step on the GPU (tropical::bits_closure): queued on `stream`
 * after the work there before it; returns when the closure is written. */
TROPICAL_API tropical_status tropical_bits_closure(int64_t n, uint32_t* words, int64_t ld, int64_t* iterations,
                                                   void* stream);

/* Einsum (tropical/einsum.hpp): a plan made once from the network (integer labels), the shapes, the semiring
 * and dtype, an optional path and a memory limit, then run many times. A plan is an opaque handle (void*),
 * immutable once made: it may be run from several threads at once, each with its own workspace. */

/** Plans an einsum of `count` operands over (semiring, dtype) (TROPICAL_COUNTING: f32 or f64, run by
 * tropical_einsum_plan_run_host_counting or tropical_einsum_plan_run_counting): operand i has ranks[i] axes,
 * whose labels (0 to INT_MAX) and extents come next in `labels` and `shapes` (the operands' one after another);
 * the output has output_rank labels `output` (row-major in that order). path: path_length steps of two positions in the list of
 * remaining operands (opt_einsum's format; (i, -1): a step of one operand; NULL and 0: the greedy order).
 * memory_limit: the most elements an intermediate may have (0: none). *plan receives the handle (free it with tropical_einsum_plan_destroy). */
TROPICAL_API tropical_status tropical_einsum_plan_create(tropical_semiring semiring, tropical_dtype dtype, size_t count,
                                                         const int64_t* ranks, const int64_t* labels,
                                                         const int64_t* shapes, int64_t output_rank,
                                                         const int64_t* output, size_t path_length,
                                                         const int64_t* path, int64_t memory_limit, void** plan);

/** Frees a plan (NULL: nothing). */
TROPICAL_API tropical_status tropical_einsum_plan_destroy(void* plan);

/** What the planner found: log2 of the multiply-adds (all slices) and of the largest tensor made, the largest
 * intermediate's element count, the number of slices, and the number of steps of its path (pairs); any may be NULL. */
TROPICAL_API tropical_status tropical_einsum_plan_info(const void* plan, double* log2_time, double* log2_space,
                                                       int64_t* largest_intermediate, int64_t* slices,
                                                       int64_t* path_length);

/** The plan's order as path_length pairs of positions (opt_einsum's format) into path (2 * path_length int64);
 * a one-operand plan's one step is (0, -1), which tropical_einsum_plan_create takes back. */
TROPICAL_API tropical_status tropical_einsum_plan_path(const void* plan, int64_t* path);

/** The bytes of workspace a run needs (a counting plan's, host or device: values and counts, and where a device
 * run merges slices), and an argmax run's (every step's argmax kept). */
TROPICAL_API tropical_status tropical_einsum_plan_workspace_bytes(const void* plan, size_t* bytes,
                                                                  size_t* argmax_bytes);

/** Contracts the plan's network on host memory: operands[i] row-major with operand i's shape, output row-major
 * (overwritten); workspace: at least the plan's workspace bytes aligned for the dtype, or NULL (allocated). */
TROPICAL_API tropical_status tropical_einsum_plan_run_host(const void* plan, const void* const* operands, void* output,
                                                           void* workspace);

/** tropical_einsum_plan_run_host, and the winning index of every label not in the output (in order of first
 * appearance in the terms) at every output element: assignment holds one row of the output's element count per
 * such label (int64); ties to the smallest index; workspace: the plan's argmax bytes, or NULL. */
TROPICAL_API tropical_status tropical_einsum_plan_run_host_argmax(const void* plan, const void* const* operands,
                                                                  void* output, int64_t* assignment, void* workspace);

/** The CountingTropical contraction of a plan made for TROPICAL_COUNTING (f32 or f64) on host memory: operand i is
 * values[i] with counts[i], the output out_values with out_counts (tropical/einsum.hpp's einsum_counting_host);
 * workspace: the plan's workspace bytes, or NULL. */
TROPICAL_API tropical_status tropical_einsum_plan_run_host_counting(const void* plan, const void* const* values,
                                                                    const void* const* counts, void* out_values,
                                                                    void* out_counts, void* workspace);

/** tropical_einsum_plan_run_host on device memory, queued on `stream` (operands, output and workspace on one
 * device, each checked inside its allocation before anything is queued; `operands` itself is a host array of
 * device pointers). workspace NULL: allocated and freed after waiting for the stream (refused while the stream
 * is being captured into a CUDA graph). */
TROPICAL_API tropical_status tropical_einsum_plan_run(const void* plan, const void* const* operands, void* output,
                                                      void* workspace, void* stream);

/** tropical_einsum_plan_run_host_argmax on device memory (operands, output and workspace; assignment is host
 * memory): queued on `stream`, waited for, and traced back on the host; returns with everything written
 * (refused while the stream is being captured). workspace: the plan's argmax bytes of device memory, or NULL. */
TROPICAL_API tropical_status tropical_einsum_plan_run_argmax(const void* plan, const void* const* operands, void* output,
                                                             int64_t* assignment, void* workspace, void* stream);

/** tropical_einsum_plan_run_host_counting on device memory, queued on `stream` (values, counts, out_values,
 * out_counts and workspace on one device; `values` and `counts` are host arrays of device pointers): the same
 * results, slices merged on the device. workspace: the plan's workspace bytes of device memory (then only stream
 * operations a CUDA graph can capture are queued), or NULL (allocated and freed after waiting for the stream;
 * refused while the stream is being captured). */
TROPICAL_API tropical_status tropical_einsum_plan_run_counting(const void* plan, const void* const* values,
                                                               const void* const* counts, void* out_values,
                                                               void* out_counts, void* workspace, void* stream);

/** tropical_einsum_plan_run_host of runner `part`'s share of the plan's slices among `parts` runners (slice s to
 * runner s mod parts), merged into output with the semiring's addition, the semiring zero where the share holds no
 * slice: the parts merged by an all-reduce with the semiring's addition (max or min) are the whole run's output.
 * For a program spreading one contraction over processes with a collective of its own.
 * TROPICAL_ERROR_INVALID_ARGUMENT unless parts >= 1 and 0 <= part < parts. Not for TROPICAL_COUNTING plans. */
TROPICAL_API tropical_status tropical_einsum_plan_run_part_host(const void* plan, const void* const* operands,
                                                                void* output, int64_t part, int64_t parts,
                                                                void* workspace);

/** tropical_einsum_plan_run_part_host on device arrays, queued on stream as tropical_einsum_plan_run queues. */
TROPICAL_API tropical_status tropical_einsum_plan_run_part(const void* plan, const void* const* operands, void* output,
                                                           int64_t part, int64_t parts, void* workspace, void* stream);

/** tropical_einsum_plan_run on every rank of an NCCL communicator together (tropical/distributed.hpp): comm is
 * the caller's ncclComm_t (a blocking communicator of the arrays' device), every rank passing the same plan and
 * operands of the same values; slice s runs on rank s mod size, then one collective (an all-reduce, or an
 * all-gather merged on the device), and every rank's output receives the whole result. NCCL is opened on first
 * use ($TROPICAL_NCCL_LIBRARY, else libnccl.so.2): TROPICAL_ERROR_UNAVAILABLE without it, TROPICAL_ERROR_CUDA for
 * a failing NCCL call (the message holds NCCL's text). Allocates its workspace and waits for the stream (refused
 * while the stream is being captured), each wait bounded: on NCCL's asynchronous error, or past
 * $TROPICAL_NCCL_TIMEOUT_S seconds (else 600; a peer that never joined), the communicator is aborted
 * (ncclCommAbort: unusable afterwards) and the call returns TROPICAL_ERROR_CUDA naming the collective. */
TROPICAL_API tropical_status tropical_einsum_plan_run_distributed(const void* plan, const void* const* operands,
                                                                  void* output, void* comm, void* stream);

/** tropical_einsum_plan_run_argmax on every rank of an NCCL communicator together, as
 * tropical_einsum_plan_run_distributed (output: device memory; assignment: host memory, written on every rank):
 * every rank's values, winning slice and assignment all-gathered and merged with the smallest slice winning ties. */
TROPICAL_API tropical_status tropical_einsum_plan_run_distributed_argmax(const void* plan, const void* const* operands,
                                                                         void* output, int64_t* assignment, void* comm,
                                                                         void* stream);

/** tropical_einsum_plan_run_counting on every rank of an NCCL communicator together, as
 * tropical_einsum_plan_run_distributed (values and counts all-gathered and merged on the device). */
TROPICAL_API tropical_status tropical_einsum_plan_run_distributed_counting(const void* plan, const void* const* values,
                                                                           const void* const* counts, void* out_values,
                                                                           void* out_counts, void* comm, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* TROPICAL_TROPICAL_H */
