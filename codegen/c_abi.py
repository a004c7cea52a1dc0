"""The C ABI's facts beyond the catalog's enums (include/tropical/tropical.h): its version, its other enums
and the prototype of every function. generate.py writes the Python package's tropical._abi (enums and ctypes
prototypes) from them and from spec.py (the semiring, dtype and op values, spec.C_VALUE);
tests/faces_test.py checks that tropical.h declares the same."""

import operations

ABI_VERSION = 1

# The other enums, each enumerator TROPICAL_<name> with its index as value (the ABI: append only).
STATUS = ("OK", "ERROR_INVALID_ARGUMENT", "ERROR_UNAVAILABLE", "ERROR_COMPILE", "ERROR_CUDA",
          "ERROR_NOT_IN_CATALOG", "ERROR_OUT_OF_MEMORY", "ERROR_INTERNAL")
TRANS = ("NO_TRANS", "TRANS")
# tropical_bits_output, with the Python package's name of each form.
BITS_OUTPUT = (("BITS_PACKED", "bits"), ("BITS_BYTES", "bytes"), ("BITS_COUNTS", "counts"))

_COUNTING = "tropical_dtype dtype, tropical_trans ta, tropical_trans tb, int64_t m, int64_t n, int64_t k, "
_BITS = "tropical_bits_output output, int64_t m, int64_t n, int64_t k, "

# The calls that exist twice: tropical_<name> on device memory (a trailing `void* stream`) and
# tropical_cpu_<name> on host memory; each returns a tropical_status. Name: parameters, as tropical.h spells them
# (the products of the C++ faces from operations.py's table, which also generates their definitions).
PRODUCTS = {
    **operations.c_abi_products(),
    "counting_gemm": _COUNTING + "const void* a_values, int64_t lda_values, const void* a_counts, "
                                 "int64_t lda_counts, const void* b_values, int64_t ldb_values, "
                                 "const void* b_counts, int64_t ldb_counts, void* c_values, int64_t ldc_values, "
                                 "void* c_counts, int64_t ldc_counts",
    "counting_gemm_batched": _COUNTING + "const void* a_values, int64_t lda_values, int64_t stride_a_values, "
                                         "const void* a_counts, int64_t lda_counts, int64_t stride_a_counts, "
                                         "const void* b_values, int64_t ldb_values, int64_t stride_b_values, "
                                         "const void* b_counts, int64_t ldb_counts, int64_t stride_b_counts, "
                                         "void* c_values, int64_t ldc_values, int64_t stride_c_values, "
                                         "void* c_counts, int64_t ldc_counts, int64_t stride_c_counts, "
                                         "int64_t batch",
    "bits_gemm": _BITS + "const uint32_t* a, int64_t lda, const uint32_t* bt, int64_t ldb, void* c, int64_t ldc",
    "bits_gemm_batched": _BITS + "const uint32_t* a, int64_t lda, int64_t stride_a, const uint32_t* bt, "
                                 "int64_t ldb, int64_t stride_b, void* c, int64_t ldc, int64_t stride_c, "
                                 "int64_t batch",
    "bits_closure": "int64_t n, uint32_t* words, int64_t ld, int64_t* iterations",
}

# The calls that exist once: name: (result, parameters), in tropical.h's order.
FUNCTIONS = {
    "tropical_last_error": ("const char*", ""),
    "tropical_version": ("const char*", ""),
    "tropical_abi_version": ("int", ""),
    "tropical_device_count": ("int", ""),
    "tropical_device_arch": ("tropical_status", "int device, int* arch"),
    "tropical_dtype_size": ("size_t", "tropical_dtype dtype"),
    "tropical_has_kernel": ("int", "tropical_semiring semiring, tropical_dtype dtype, tropical_op op"),
    "tropical_cpu_has_kernel": ("int", "tropical_semiring semiring, tropical_dtype dtype, tropical_op op"),
    "tropical_kernel_count": ("uint32_t", ""),
    "tropical_kernel_name": ("const char*", "uint32_t id"),
    "tropical_kernel_id": ("tropical_status", "const char* name, uint32_t* id"),
    "tropical_find_kernel": ("tropical_status",
                             "tropical_semiring semiring, tropical_dtype dtype, tropical_op op, uint32_t* id"),
    "tropical_warm": ("tropical_status", "const uint32_t* ids, size_t count, int arch, unsigned threads, "
                                         "size_t* compiled, size_t* ready"),
    "tropical_publish_cached": ("tropical_status", "const uint32_t* ids, size_t count, int arch, size_t* published"),
    "tropical_cpu_set_num_threads": ("tropical_status", "int n"),
    "tropical_cpu_num_threads": ("int", ""),
    "tropical_cpu_isa": ("const char*", ""),
    "tropical_bits_ld": ("int64_t", "int64_t k"),
    "tropical_cpu_pack_bits": ("tropical_status",
                               "int64_t rows, int64_t k, const uint8_t* a, int64_t lda, uint32_t* words, int64_t ldw"),
    "tropical_cpu_unpack_bits": ("tropical_status", "int64_t rows, int64_t k, const uint32_t* words, int64_t ldw, "
                                                    "uint8_t* a, int64_t lda"),
    "tropical_cpu_transpose_bits": ("tropical_status", "int64_t rows, int64_t cols, const uint32_t* in, "
                                                       "int64_t ldin, uint32_t* out, int64_t ldout"),
}

# The einsum plan's calls (tropical/einsum.hpp): name: (result, parameters), in tropical.h's order.
EINSUM = {
    "tropical_einsum_plan_create": ("tropical_status", "tropical_semiring semiring, tropical_dtype dtype, size_t count, "
                                                       "const int64_t* ranks, const int64_t* labels, "
                                                       "const int64_t* shapes, int64_t output_rank, "
                                                       "const int64_t* output, size_t path_length, "
                                                       "const int64_t* path, int64_t memory_limit, void** plan"),
    "tropical_einsum_plan_destroy": ("tropical_status", "void* plan"),
    "tropical_einsum_plan_info": ("tropical_status", "const void* plan, double* log2_time, double* log2_space, "
                                                     "int64_t* largest_intermediate, int64_t* slices, "
                                                     "int64_t* path_length"),
    "tropical_einsum_plan_path": ("tropical_status", "const void* plan, int64_t* path"),
    "tropical_einsum_plan_workspace_bytes": ("tropical_status", "const void* plan, size_t* bytes, size_t* argmax_bytes"),
    "tropical_einsum_plan_run_host": ("tropical_status", "const void* plan, const void* const* operands, void* output, "
                                                         "void* workspace"),
    "tropical_einsum_plan_run_host_argmax": ("tropical_status", "const void* plan, const void* const* operands, "
                                                                "void* output, int64_t* assignment, void* workspace"),
    "tropical_einsum_plan_run_host_counting": ("tropical_status", "const void* plan, const void* const* values, "
                                                                  "const void* const* counts, void* out_values, "
                                                                  "void* out_counts, void* workspace"),
    "tropical_einsum_plan_run": ("tropical_status", "const void* plan, const void* const* operands, void* output, "
                                                    "void* workspace, void* stream"),
    "tropical_einsum_plan_run_argmax": ("tropical_status", "const void* plan, const void* const* operands, "
                                                           "void* output, int64_t* assignment, void* workspace, "
                                                           "void* stream"),
    "tropical_einsum_plan_run_counting": ("tropical_status", "const void* plan, const void* const* values, "
                                                             "const void* const* counts, void* out_values, "
                                                             "void* out_counts, void* workspace, void* stream"),
    "tropical_einsum_plan_run_part_host": ("tropical_status", "const void* plan, const void* const* operands, "
                                                              "void* output, int64_t part, int64_t parts, "
                                                              "void* workspace"),
    "tropical_einsum_plan_run_part": ("tropical_status", "const void* plan, const void* const* operands, "
                                                         "void* output, int64_t part, int64_t parts, void* workspace, "
                                                         "void* stream"),
    "tropical_einsum_plan_run_distributed": ("tropical_status", "const void* plan, const void* const* operands, "
                                                                "void* output, void* comm, void* stream"),
    "tropical_einsum_plan_run_distributed_argmax": ("tropical_status", "const void* plan, "
                                                                       "const void* const* operands, void* output, "
                                                                       "int64_t* assignment, void* comm, "
                                                                       "void* stream"),
    "tropical_einsum_plan_run_distributed_counting": ("tropical_status", "const void* plan, "
                                                                         "const void* const* values, "
                                                                         "const void* const* counts, "
                                                                         "void* out_values, void* out_counts, "
                                                                         "void* comm, void* stream"),
}

# Pointer parameters that Python passes as ctypes objects (byref() or a ctypes array): POINTER(T) there. Every
# other pointer is passed as an address (an int from an array's data pointer): c_void_p.
BY_REFERENCE = ("arch", "id", "ids", "compiled", "ready", "published", "iterations")


def functions():
    """Every function of the C ABI: name -> (result, [(C type, name), ...]), products in both forms."""
    found = {}
    for name, (result, params) in FUNCTIONS.items():
        found[name] = (result, _split(params))
    for name, (result, params) in EINSUM.items():
        found[name] = (result, _split(params))
    for name, params in PRODUCTS.items():
        found["tropical_" + name] = ("tropical_status", _split(params + ", void* stream"))
        found["tropical_cpu_" + name] = ("tropical_status", _split(params))
    return found


def is_bits(name):
    """True for a function of packed booleans (the Python package binds those on first use)."""
    return "bits" in name


def _split(params):
    """[(C type, name), ...] of a parameter list "const void* a, int64_t lda"."""
    found = []
    for param in filter(None, (p.strip() for p in params.split(","))):
        ctype, name = param.rsplit(" ", 1)
        found.append((ctype, name))
    return found
