"""The one array intake of the GPU kernels (AMX and XMX alike): arrays onto the device and results back.

:func:`intake` / :func:`give_back` and their kin are :mod:`systolic.gpu.runtime`'s (numpy arrays copied to the
device and back; GPU arrays taken without a copy where their layout allows; results back as the first GPU
input's kind), handed on here so the engines' kernels import one module for their arrays.

:func:`int8_in_place` is the in-place intake of the s8/u8 GEMM (C + A @ B mod 2**32: AMX TDPB[SU][SU]D and XMX
s8/u8 DPAS alike): CUDA torch tensors and CuPy arrays are read through their raw device pointers, with the
launch decided once per signature (a cached :class:`systolic.gpu.int_gemm.Plan`), on the caller's stream and
allocator. Each engine brings its own argument checks (``build``); the intake only reads the operands.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import int_gemm, runtime
from .runtime import Intake, give_back, intake, is_gpu_array, result_kind, to_numpy
from .runtime import _is_torch, _torch_dtype_map  # noqa: F401  (the XMX driver's torch dtype reading)

__all__ = ["is_gpu_array", "Intake", "intake", "give_back", "result_kind", "to_numpy", "int8_in_place", "int8_plan",
           "IN_PLACE", "RETRY"]


# ------------------------------------------------------------------------------------------ s8/u8, in place
#
# At 4096^3 cuBLAS's int8 GEMM takes ~0.13 ms on an H100, and the general path spends 0.1-0.3 ms on the host
# before its first launch (DLPack intake, Intake objects, CuPy slicing): as long as the GEMM. Everything that
# depends only on (shapes, dtypes, layout of B, C given, the engine's own arguments, device) is therefore decided
# once and kept in an int_gemm.Plan: the engine's argument checks (``build`` raised or passed on the first call
# of that key; integer inputs cannot hold out-of-range values, so nothing else needs a look at the data), which
# copies, shifts and rank-one terms the sign mix needs, the K chunks. A call that finds its plan reads the raw
# device pointers (``data_ptr()`` / ``data.ptr``, no DLPack), allocates the output and scratch from the caller's
# own allocator and launches on the caller's stream (torch: its current stream; CuPy: CuPy's). B given
# column-major (a transposed view of an (N, K) array, torch._int_mm's preferred layout) is read in place.
# Non-contiguous A or C, other layouts of B and anything that is not a CUDA torch tensor or CuPy array take the
# engine's general path.

#: whether the in-place path runs (benchmarks switch it off to time the general path; both compute the same bits)
IN_PLACE = {"fast": True}
_PLANS: dict = {}
_STREAMS: dict = {}
_I8 = (np.dtype(np.int8), np.dtype(np.uint8))
#: build(): no plan now, but do not cache that (the kernels are loaded per device: the general path copes)
RETRY = object()


def _torch_fast_kind(x, torch):
    """The layout of a 2-D CUDA torch tensor the in-place path can read: 'r' (C-contiguous) or 'c' (a
    transposed view of a C-contiguous array); None otherwise."""
    if type(x) is not torch.Tensor or not x.is_cuda or x.dim() != 2:
        return None
    if x.is_contiguous():
        return "r"
    s0, s1 = x.stride()
    if s0 == 1 and s1 == x.shape[0]:
        return "c"
    return None


def _stream_of(ptr: int, dev: int):
    """A CuPy view of the caller's torch stream (cached per raw stream pointer)."""
    s = _STREAMS.get((ptr, dev))
    if s is None:
        import warnings
        import cupy as cp
        with warnings.catch_warnings():      # CuPy 14 prefers Stream.from_external (a __cuda_stream__ object)
            warnings.simplefilter("ignore", DeprecationWarning)
            s = _STREAMS[(ptr, dev)] = cp.cuda.ExternalStream(ptr, dev)
    return s


def _plan_for(key, build):
    """The cached plan of ``key`` (built on a miss; None cached too: such calls go the general path)."""
    try:
        return _PLANS[key]
    except KeyError:
        pass
    except TypeError:                               # an unhashable engine argument: the general path checks it
        return None
    runtime.require()
    plan = build()
    if plan is RETRY:
        return None
    _PLANS[key] = plan
    return plan


#: ``build(M, K, N, a_dtype, b_dtype, c_meta, b_layout) -> Plan | None``: the engine's checks and its plan
#: (None: the engine's general path runs the call); ``c_meta`` is (shape, dtype) of C or None, ``b_layout``
#: 'r' or 'c'
PlanBuilder = Callable[[int, int, int, np.dtype, np.dtype, Any, str], Any]


def int8_in_place(a, b, c, key: tuple, build: PlanBuilder):
    """``(out, plan)``: one s8/u8 GEMM through a cached plan, or None when the operands do not fit the in-place
    path (then the engine's general path runs). ``key``: the engine's own arguments that decide its checks.
    The engines consult :data:`IN_PLACE` before calling."""
    import sys
    torch = sys.modules.get("torch")
    if torch is not None and type(a) is torch.Tensor:
        return _torch_in_place(torch, a, b, c, key, build)
    if type(a).__module__.split(".")[0] != "cupy":
        return None
    return _cupy_in_place(a, b, c, key, build)


def _torch_in_place(torch, a, b, c, key, build):
    la, lb = _torch_fast_kind(a, torch), _torch_fast_kind(b, torch)
    if la != "r" or lb is None or a.dtype not in (torch.int8, torch.uint8) or b.dtype not in (torch.int8, torch.uint8):
        return None
    if c is not None and (_torch_fast_kind(c, torch) != "r" or c.dtype != torch.int32):
        return None
    dev = a.get_device()
    if b.get_device() != dev or (c is not None and c.get_device() != dev):
        return None
    (M, K), (K2, N) = a.shape, b.shape
    full = ("t", M, K, K2, N, a.dtype, b.dtype, lb, None if c is None else tuple(c.shape), *key, dev)

    def make():
        import cupy as cp
        if cp.cuda.runtime.getDevice() != dev:
            return RETRY                            # kernels are loaded per device: the general path copes
        if K2 != K:
            return None                             # the general path raises the K mismatch
        dm = _torch_dtype_map()
        return build(M, K, N, dm[a.dtype], dm[b.dtype], None if c is None else (tuple(c.shape), np.dtype(np.int32)),
                     lb)
    cp = _imported_cupy()
    if cp is not None and cp.cuda.runtime.getDevice() != dev:
        return None                                 # a plan's kernels belong to its device: the general path
    plan = _plan_for(full, make)
    if plan is None:
        return None
    try:
        raw = torch._C._cuda_getCurrentRawStream(dev)
    except AttributeError:                          # pragma: no cover - older torch
        raw = torch.cuda.current_stream(dev).cuda_stream
    keep = []

    def alloc(nbytes):
        keep.append(a.new_empty(max(1, nbytes), dtype=torch.uint8))
        return keep[-1].data_ptr()
    out = a.new_empty((M, N), dtype=torch.int32)
    plan.run(a.data_ptr(), b.data_ptr(), None if c is None else c.data_ptr(), out.data_ptr(), alloc,
             _stream_of(raw, dev))
    return out, plan


def _imported_cupy():
    """CuPy if it is imported already (never imports it)."""
    import sys
    return sys.modules.get("cupy")


def _cupy_in_place(a, b, c, key, build):
    import cupy as cp
    if type(a) is not cp.ndarray or type(b) is not cp.ndarray or (c is not None and type(c) is not cp.ndarray):
        return None
    if a.ndim != 2 or b.ndim != 2 or not a.flags.c_contiguous or a.dtype not in _I8 or b.dtype not in _I8:
        return None
    lb = "r" if b.flags.c_contiguous else "c" if b.flags.f_contiguous else None
    if lb is None or (c is not None and (not c.flags.c_contiguous or c.dtype != np.int32 or c.ndim != 2)):
        return None
    dev = a.device.id
    if b.device.id != dev or (c is not None and c.device.id != dev) or cp.cuda.runtime.getDevice() != dev:
        return None
    (M, K), (K2, N) = a.shape, b.shape
    full = ("c", M, K, K2, N, a.dtype, b.dtype, lb, None if c is None else c.shape, *key, dev)
    plan = _plan_for(full, lambda: None if K2 != K else build(
        M, K, N, a.dtype, b.dtype, None if c is None else (c.shape, c.dtype), lb))
    if plan is None:
        return None
    keep = []

    def alloc(nbytes):
        keep.append(cp.empty(max(1, nbytes), dtype=cp.uint8))
        return keep[-1].data.ptr
    out = cp.empty((M, N), dtype=cp.int32)
    plan.run(a.data.ptr, b.data.ptr, None if c is None else c.data.ptr, out.data.ptr, alloc,
             cp.cuda.get_current_stream())
    return out, plan


def int8_plan(M: int, K: int, N: int, a_dtype, b_dtype, c_given: bool, b_layout: str):
    """The launch plan of an s8/u8 GEMM whose arguments the engine has checked (None for an empty one)."""
    if M == 0 or N == 0 or K == 0:
        return None
    return int_gemm.Plan(M, K, N, a_dtype == np.int8, b_dtype == np.int8, b_layout == "c", c_given)
