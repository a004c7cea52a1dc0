"""NumPy operands through the library's einsum plan (tropical_einsum_plan_*, include/tropical/einsum.hpp): the
Python planner's tree handed over as a path with the memory limit (the library slices the same labels), the
operands contracted by the C++ program on the CPU backend, the argmax traced back there. The same bits as the
Python executor, which stays for torch, CuPy, bool operands and autograd."""

import ctypes

from . import _arrays, _einsum_arrays, _einsum_trace, _einsum_tree, _lib, _ops

_NATIVE_DTYPES = ("float32", "float64", "int32", "int64", "int16", "uint8")


def usable(operands, plan, semiring):
    """True if the operands are NumPy arrays of one dtype the library's plans take (bool goes the Python way) and
    the library's plan slices as the Python one (the same tree and limit do; a limit that is no integer may not)."""
    first = operands[0]
    if not (type(first).__module__ == "numpy" and type(first).__name__ == "ndarray"
            and str(first.dtype) in _NATIVE_DTYPES
            and all(type(x) is type(first) and x.dtype == first.dtype for x in operands)):
        return False
    return _handle(plan, semiring, str(first.dtype)).slices == plan.info.slices


class _Handle:
    """One tropical_einsum_plan (destroyed with this object)."""

    def __init__(self, plan, semiring, dtype):
        network = plan.network
        index = {label: i for i, label in enumerate(plan.labels)}
        ranks = [len(term) for term in network.inputs]
        labels = [index[label] for term in network.inputs for label in term]
        shapes = [network.sizes[label] for term in network.inputs for label in term]
        output = [index[label] for label in network.output]
        path = [i for step in _einsum_tree.to_path(plan.tree) for i in step] if plan.tree.children else []
        i64 = lambda values: (ctypes.c_int64 * max(len(values), 1))(*values)  # noqa: E731
        # Each array named: a temporary's memory would be freed before the call reads it.
        c_ranks, c_labels, c_shapes, c_output, c_path = i64(ranks), i64(labels), i64(shapes), i64(output), i64(path)
        limit = int(plan.memory_limit) if plan.sliced else 0  # the same tree and limit: the same sliced labels
        self._dll = _lib.lib()
        self.handle = ctypes.c_void_p()
        _lib.check(self._dll.tropical_einsum_plan_create(
            _ops.semiring_code(semiring), _arrays.DTYPE_CODES[dtype][0], len(ranks), ctypes.addressof(c_ranks),
            ctypes.addressof(c_labels), ctypes.addressof(c_shapes), len(output), ctypes.addressof(c_output),
            len(path) // 2, ctypes.addressof(c_path), limit, ctypes.addressof(self.handle)))
        slices = ctypes.c_int64()
        _lib.check(self._dll.tropical_einsum_plan_info(self.handle, None, None, None, ctypes.addressof(slices), None))
        self.slices = slices.value
        self.output_shape = tuple(network.sizes[label] for label in network.output)
        self.rows = [label for label in plan.labels if label not in network.output]

    def __del__(self):
        if getattr(self, "handle", None) and self.handle.value:
            self._dll.tropical_einsum_plan_destroy(self.handle)


def _handle(plan, semiring, dtype):
    key = (semiring, dtype)
    found = plan.native.get(key)
    if found is None:
        found = plan.native[key] = _Handle(plan, semiring, dtype)
    return found


def _pointers(operands):
    import numpy
    arrays = [numpy.ascontiguousarray(x) for x in operands]
    return arrays, (ctypes.c_void_p * len(arrays))(*[x.ctypes.data for x in arrays])


def _as_merged(plan, semiring, x):
    """x as the Python executor returns it: merged slices come out of the semiring's addition (idempotent), which
    gives NumPy scalars for scalar outputs."""
    if plan.info.slices > 1:
        return _einsum_trace.add(_einsum_arrays.adapter(x), semiring, x, x)
    return x


def contract(plan, operands, semiring):
    """The values of einsum on NumPy operands (an array of the output's shape, 0-d for a scalar)."""
    import numpy
    dtype = str(operands[0].dtype)
    handle = _handle(plan, semiring, dtype)
    arrays, pointers = _pointers(operands)
    out = numpy.empty(handle.output_shape, operands[0].dtype)
    _lib.check(handle._dll.tropical_einsum_plan_run_host(handle.handle, ctypes.addressof(pointers), out.ctypes.data,
                                                         None))
    del arrays
    return _as_merged(plan, semiring, out)


def contract_argmax(plan, operands, semiring):
    """(values, assignment) of einsum_argmax on NumPy operands: assignment as einsum_argmax returns it."""
    import numpy
    dtype = str(operands[0].dtype)
    handle = _handle(plan, semiring, dtype)
    arrays, pointers = _pointers(operands)
    out = numpy.empty(handle.output_shape, operands[0].dtype)
    assign = numpy.empty((len(handle.rows),) + handle.output_shape, numpy.int64)
    _lib.check(handle._dll.tropical_einsum_plan_run_host_argmax(handle.handle, ctypes.addressof(pointers),
                                                                out.ctypes.data, assign.ctypes.data, None))
    del arrays
    out = _as_merged(plan, semiring, out)
    if not handle.output_shape:
        return out, {label: int(assign[i]) for i, label in enumerate(handle.rows)}
    return out, {label: assign[i] for i, label in enumerate(handle.rows)}


def contract_counting(plan, values, counts):
    """(values, counts) of counting_einsum on NumPy (values, counts) operands of float32 or float64."""
    import numpy
    dtype = str(values[0].dtype)
    handle = _handle(plan, "counting", dtype)
    v_arrays, v_pointers = _pointers(values)
    c_arrays, c_pointers = _pointers(counts)
    out_values = numpy.empty(handle.output_shape, values[0].dtype)
    out_counts = numpy.empty(handle.output_shape, values[0].dtype)
    _lib.check(handle._dll.tropical_einsum_plan_run_host_counting(
        handle.handle, ctypes.addressof(v_pointers), ctypes.addressof(c_pointers), out_values.ctypes.data,
        out_counts.ctypes.data, None))
    del v_arrays, c_arrays
    if plan.info.slices > 1 and not handle.output_shape:  # the Python executor's merge gives NumPy scalars
        return out_values[()], out_counts[()]
    return out_values, out_counts
