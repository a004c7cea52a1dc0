"""Operands through the library's einsum plan (tropical_einsum_plan_*, include/tropical/einsum.hpp): the Python
planner's tree handed over as a path with the memory limit (the library slices the same labels); NumPy operands
contracted by the C++ program on the CPU backend, torch CUDA tensors and CuPy arrays by the same program queued
on the framework's current stream, with its workspace taken from the framework's allocator; the argmax traced
back by the library; CountingTropical on (values, counts) pairs the same way. The same bits as the Python executor,
which stays for CPU tensors, bool operands, autograd and torch.compile."""

import ctypes
import sys

from . import _arrays, _einsum_arrays, _einsum_trace, _einsum_tree, _fast, _lib, _ops

_NATIVE_DTYPES = ("float32", "float64", "int32", "int64", "int16", "uint8")


def _kind(first):
    """"numpy", "torch" (a CUDA tensor), "cupy", or None for an array the library's plans do not take here."""
    module = type(first).__module__
    if module == "numpy" and type(first).__name__ == "ndarray":
        return "numpy"
    if module.startswith("torch") and getattr(first, "is_cuda", False):
        compiler = getattr(sys.modules["torch"], "compiler", None)  # tracing: the Python executor (no pointers)
        return None if compiler is not None and compiler.is_compiling() else "torch"
    if module.startswith("cupy") and type(first).__name__ == "ndarray":
        return "cupy"
    return None


def usable(operands, plan, semiring):
    """True if the operands are NumPy arrays, torch CUDA tensors or CuPy arrays of one dtype the library's plans
    take (bool goes the Python way) on one device, and the library's plan slices as the Python one (the same tree
    and limit do)."""
    first = operands[0]
    kind = _kind(first)
    dtype = str(first.dtype).replace("torch.", "")
    if kind is None or dtype not in _NATIVE_DTYPES:
        return False
    if kind == "numpy":
        if not all(type(x) is type(first) and x.dtype == first.dtype for x in operands):
            return False
    elif kind == "torch":
        device = first.device
        if not all(type(x) is type(first) and x.dtype == first.dtype and x.device == device for x in operands):
            return False
    else:
        device = first.device.id
        if not all(type(x) is type(first) and x.dtype == first.dtype and x.device.id == device for x in operands):
            return False
    return _handle(plan, semiring, dtype).slices == plan.info.slices


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
        plain, argmax = ctypes.c_size_t(), ctypes.c_size_t()
        _lib.check(self._dll.tropical_einsum_plan_workspace_bytes(self.handle, ctypes.addressof(plain),
                                                                  ctypes.addressof(argmax)))
        self.workspace_bytes, self.argmax_bytes = plain.value, argmax.value
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


class _Device:
    """What a run on a GPU framework's arrays needs: the operands (contiguous), a host array of their pointers,
    arrays of the operands' kind, and the framework's current stream of their device."""

    def __init__(self, operands):
        first = operands[0]
        if _kind(first) == "torch":
            torch = sys.modules["torch"]
            self.arrays = [x.contiguous() for x in operands]
            self.device = first.device
            self.stream = _fast.torch_stream(first.device.index)
            self.empty = lambda shape, dtype=None: torch.empty(shape, dtype=dtype or first.dtype, device=self.device)
            self.bytes = lambda n: torch.empty(max(n, 1), dtype=torch.uint8, device=self.device)
            self.int64 = torch.int64
            address = lambda x: x.data_ptr()  # noqa: E731
        else:
            cupy = sys.modules["cupy"]
            self.arrays = [cupy.ascontiguousarray(x) for x in operands]
            self.stream = cupy.cuda.get_current_stream().ptr
            self.empty = lambda shape, dtype=None: cupy.empty(shape, dtype=dtype or first.dtype)
            self.bytes = lambda n: cupy.empty(max(n, 1), dtype=cupy.uint8)
            self.int64 = cupy.int64
            address = lambda x: x.data.ptr  # noqa: E731
        self.address = address
        self.pointers = (ctypes.c_void_p * len(self.arrays))(*[address(x) for x in self.arrays])


def _on_device(operands):
    return _kind(operands[0]) in ("torch", "cupy")


def _values(plan, operands, semiring, share):
    """The merged values of every slice (share None: tropical_einsum_plan_run, _run_host) or of one runner's share
    of them (share (part, parts): _run_part, _run_part_host), an array of the operands' kind and the output's
    shape, queued on a GPU framework's current stream with its allocator's workspace."""
    import numpy
    dtype = str(operands[0].dtype).replace("torch.", "")
    handle = _handle(plan, semiring, dtype)
    dll, rest = handle._dll, tuple(share or ())
    if _on_device(operands):
        run = _Device(operands)
        out = run.empty(handle.output_shape)
        workspace = run.bytes(handle.workspace_bytes)
        call = dll.tropical_einsum_plan_run_part if share else dll.tropical_einsum_plan_run
        _lib.check(call(handle.handle, ctypes.addressof(run.pointers), run.address(out), *rest,
                        run.address(workspace), run.stream))
        return out
    arrays, pointers = _pointers(operands)
    out = numpy.empty(handle.output_shape, operands[0].dtype)
    call = dll.tropical_einsum_plan_run_part_host if share else dll.tropical_einsum_plan_run_host
    _lib.check(call(handle.handle, ctypes.addressof(pointers), out.ctypes.data, *rest, None))
    del arrays
    return out


def contract(plan, operands, semiring):
    """The values of einsum (an array of the operands' kind and the output's shape, 0-d for a scalar)."""
    out = _values(plan, operands, semiring, None)
    return out if _on_device(operands) else _as_merged(plan, semiring, out)


def contract_part(plan, operands, semiring, part, parts):
    """Runner `part`'s share of the slices among `parts` runners (slice s to runner s mod parts), merged with the
    semiring's addition, the semiring zero where it holds none: an array of the operands' kind and the output's
    shape (tropical_einsum_plan_run_part; what tropical.distributed all-reduces)."""
    return _values(plan, operands, semiring, (part, parts))


def contract_argmax(plan, operands, semiring):
    """(values, assignment) of einsum_argmax: assignment as einsum_argmax returns it (on a GPU framework's arrays,
    integer arrays of its kind)."""
    import numpy
    dtype = str(operands[0].dtype).replace("torch.", "")
    handle = _handle(plan, semiring, dtype)
    assign = numpy.empty((len(handle.rows),) + handle.output_shape, numpy.int64)
    if _on_device(operands):
        run = _Device(operands)
        out = run.empty(handle.output_shape)
        workspace = run.bytes(handle.argmax_bytes)
        _lib.check(handle._dll.tropical_einsum_plan_run_argmax(handle.handle, ctypes.addressof(run.pointers),
                                                               run.address(out), assign.ctypes.data,
                                                               run.address(workspace), run.stream))
        if not handle.output_shape:
            return out, {label: int(assign[i]) for i, label in enumerate(handle.rows)}
        device = _einsum_arrays.adapter(operands[0])
        return out, {label: device.index_array(assign[i], operands[0]) for i, label in enumerate(handle.rows)}
    arrays, pointers = _pointers(operands)
    out = numpy.empty(handle.output_shape, operands[0].dtype)
    _lib.check(handle._dll.tropical_einsum_plan_run_host_argmax(handle.handle, ctypes.addressof(pointers),
                                                                out.ctypes.data, assign.ctypes.data, None))
    del arrays
    out = _as_merged(plan, semiring, out)
    if not handle.output_shape:
        return out, {label: int(assign[i]) for i, label in enumerate(handle.rows)}
    return out, {label: assign[i] for i, label in enumerate(handle.rows)}


def contract_counting(plan, values, counts):
    """(values, counts) of counting_einsum on (values, counts) operands of float32 or float64: arrays of the operands'
    kind (on a GPU framework's, queued on its current stream with its allocator's workspace)."""
    import numpy
    dtype = str(values[0].dtype).replace("torch.", "")
    handle = _handle(plan, "counting", dtype)
    if _on_device(values):
        v_run, c_run = _Device(values), _Device(counts)
        out_values, out_counts = v_run.empty(handle.output_shape), v_run.empty(handle.output_shape)
        workspace = v_run.bytes(handle.workspace_bytes)
        _lib.check(handle._dll.tropical_einsum_plan_run_counting(
            handle.handle, ctypes.addressof(v_run.pointers), ctypes.addressof(c_run.pointers),
            v_run.address(out_values), v_run.address(out_counts), v_run.address(workspace), v_run.stream))
        return out_values, out_counts
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
