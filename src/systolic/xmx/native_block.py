"""Compiled fast path (LLVM via llvmlite) for the ``block(L, F)`` float model: :func:`gemm`.

The block model (docs/xmx.md "Numerics models"; spec: ``models._block_sum_fp32`` inside ``models.accumulate``)
aligns the fp32 accumulator and the next L products of an instruction to their largest exponent, truncates each
toward zero to F fraction bits below it, sums exactly and rounds once to fp32. The numpy path
(``kernels.round_block_fp32`` in ``kernels._chain``) does that with about twenty full-array numpy passes per
block; the kernel here does it in binary64 vector lanes with no test and no fallback, because every step is exact
by construction (the argument is in :mod:`systolic.xmx.native_block_ir`, which builds the kernel with llvmlite's
IR builder). Bit-identical to the spec path: tests/xmx/test_native_block.py (hypothesis, against
``models.accumulate``, the independent Fraction oracle of tests/xmx/oracle.py and the numpy path).

It takes every ``block`` model except ``ftz_result=True`` (the FTZ rule needs the exact value before rounding;
the numpy path handles it) and a ``nan_bits`` that is not a NaN pattern (the spec path then feeds that value,
not a NaN, to the next block). :func:`systolic.xmx.matmul` calls it for block models and records the path in
:func:`systolic.counters.path_taken` (``"xmx.matmul bf16xbf16"`` -> ``"jit-block"``, or ``"emulator"`` for
the numpy path). ``SYSTOLIC_NO_NATIVE`` turns it off, as it does the other compiled paths. The vector width
follows the host (:func:`systolic.jit.vector_bits`: 8 binary64 lanes with AVX-512, 4 with AVX2).
"""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from .. import jit
from ..jit import workers
from . import models as M
from . import native_block_ir as IR

__all__ = ["applies", "available", "gemm", "kernel_shape"]

_LOCK = threading.Lock()
_CACHE: dict[tuple, object] = {}
_STATE: dict[str, str] = {}

#: rows x vectors of accumulators per register block, by vector bits. Each accumulator's block step holds its
#: L products, so the block is small. Zen 3, 2 shared vCPUs, AVX2, bf16 1024^3, one thread, kernel CPU time,
#: L = 16 / L = 2 (this machine's noise is about 20%): 1x4 0.34 / 0.56 s, 2x3 0.39 / 0.50 s, 4x1 0.42 / 0.60 s,
#: 2x2 0.50 / 0.58 s; with binary32 inputs converted in the kernel, 1x4 0.38 / 0.54 s. AVX-512 not measured.
BLOCK = {128: (1, 4), 256: (1, 4), 512: (1, 4)}
#: A and B widened to binary64 by the driver (the kernel multiplies straight from memory) or left binary32
WIDE = True


def applies(model: M.NumericsModel) -> bool:
    """Whether the kernel computes ``model`` (a block model without FTZ results whose NaN is a NaN)."""
    nb = model.nan_bits
    is_nan = (nb & 0x7F800000) == 0x7F800000 and nb & 0x007FFFFF != 0 and 0 <= nb < 1 << 32
    return model.name == "block" and not model.ftz_result and is_nan


def available() -> bool:
    """Whether llvmlite can JIT here and ``SYSTOLIC_NO_NATIVE`` is not set."""
    if os.environ.get("SYSTOLIC_NO_NATIVE"):
        return False
    if "llvm" not in _STATE:
        try:
            jit.llvm()
            _STATE["llvm"] = ""
        except Exception as exc:  # pragma: no cover - depends on the installation
            _STATE["llvm"] = repr(exc)
    return not _STATE["llvm"]


def kernel_shape() -> tuple[int, int, int]:
    """(doubles per vector, rows, vectors) of the kernel at the host's (or the forced) vector width."""
    bits = jit.vector_bits()
    return (bits // 64, *BLOCK[bits])


def _kernel(kd: int, model: M.NumericsModel):
    FV, R, V = kernel_shape()
    key = (kd, model.block_size, FV, R, V, WIDE)
    with _LOCK:
        if key not in _CACHE:
            try:
                mod = jit.compile_module(IR.block_module(kd=kd, L=model.block_size, FV=FV, R=R, V=V, wide=WIDE))
                proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), *([ctypes.c_int64] * 7), ctypes.c_uint32)
                _CACHE[key] = proto(mod.address(IR.kernel_name(R, V)))
            except Exception as exc:  # pragma: no cover - depends on the host; the numpy path is exact too
                _STATE["error"] = repr(exc)
                _CACHE[key] = None
        return _CACHE[key], FV * V, R, WIDE


def gemm(a32: np.ndarray, b32: np.ndarray, c, kd: int, model: M.NumericsModel, *,
         threads: int | None = None) -> np.ndarray | None:
    """fp32 bits (uint32, M x N) of the block model's GEMM chain, or None where the kernel does not apply or
    cannot run here (the caller then takes the numpy path).

    ``a32`` (M x K), ``b32`` (K x N): float32 arrays holding the exact input values (denormals already flushed per
    the model's rule), K a positive multiple of the instruction's K ``kd``; ``c``: the initial accumulator (fp32
    values, any float array) or None for +0.
    """
    if not (applies(model) and available()):
        return None
    m, k = a32.shape
    n = b32.shape[1]
    if k == 0 or k % kd:
        return None
    fn, W, R, wide = _kernel(kd, model)
    et = np.float64 if wide else np.float32
    if fn is None:
        return None
    if n < W and m > n:
        # a narrow B fills few lanes: D^T = C^T + B^T A^T has, element for element, the same products (x * y is
        # y * x exactly) in the same K order, hence the same bits, and puts the long side across the lanes
        ct = None if c is None else np.asarray(c).T
        return gemm(np.ascontiguousarray(b32.T), np.ascontiguousarray(a32.T), ct, kd, model, threads=threads).T
    mp, npn = -(-m // R) * R, -(-n // W) * W
    panels = npn // W
    A = np.zeros((mp, k), dtype=et)
    Bp = np.zeros((panels, k, W), dtype=et)
    full = n // W
    with np.errstate(invalid="ignore"):      # signalling NaNs widen to NaNs: their payload is never looked at
        A[:m] = a32
        Bp[:full] = b32[:, :full * W].reshape(k, full, W).transpose(1, 0, 2)
        if full < panels:
            Bp[full, :, :n - full * W] = b32[:, full * W:]
    C = np.zeros((mp, npn), dtype=np.float32)
    if c is not None:
        with np.errstate(invalid="ignore"):   # fp32 values (a signalling NaN may widen with a flag): exact
            C[:m, :n] = np.asarray(c).astype(np.float32)
    O = np.empty((mp, npn), dtype=np.uint32)
    head = (A.ctypes.data, Bp.ctypes.data, C.ctypes.data, O.ctypes.data, npn, k)
    tail = (model.fraction_bits, model.nan_bits)
    nthreads = max(1, threads or workers.cpus())       # the CPUs of this process's affinity mask
    # jobs of (row range, panel range), about four per thread: panels first, rows too when panels are few
    pstep = -(-panels // (nthreads * 4))
    rchunks = max(1, min(mp // R, -(-nthreads * 4 // -(-panels // pstep))))
    rstep = -(-(mp // R) // rchunks) * R
    jobs = [(i0, min(mp, i0 + rstep), p0, min(panels, p0 + pstep))
            for p0 in range(0, panels, pstep) for i0 in range(0, mp, rstep)]
    # the process's one worker pool (jit.workers; ctypes releases the GIL during each call)
    workers.run_jobs(lambda _q, j: fn(*head, *j, *tail), jobs, nthreads)
    return O[:m, :n]
