"""A compiled kernel for whole bf16/fp16 GEMMs with the AMX chain order: the driver (the kernel is built with
llvmlite's IR builder in :mod:`systolic.amx.gemm_ir` and JIT-compiled by :mod:`systolic.jit`).

What it computes, for every output element, is exactly what
:func:`systolic.amx.kernels` / the SDM compute per TDPBF16PS / TDPFP16PS: per
K tile two fp32 chains (even / odd element of each pair) start at +0 and take
one FMA per dword step; then ``t = even + odd`` and ``C = C + t``; C is carried
from K tile to K tile.

Why the machine's own fp32 FMA gives the SDM's result (inputs are finite here;
the caller routes rows / columns with inf or NaN inputs to the numpy path):

* DAZ: the caller flushes denormal inputs (bf16 denormals, C) to signed zeros;
  the chains themselves never hold a denormal (FTZ below).
* ``llvm.fma.f32`` is one correctly rounded FMA (RNE; MXCSR is set to its
  default 0x1F80 for the duration of the call and restored after).
* FTZ with tininess after rounding: where the hardware returns a denormal
  or exactly +-2^-126 (the only results where gradual underflow and "tiny
  after rounding to 24 bits" can disagree), the exact sum is tiny, so all operands are small
  (|acc| < 2^-100); the same FMA on operands scaled by 2^64 is then exact in
  its scaling and rounds in the normal range, i.e. with an unbounded exponent;
  the result is 2^-126 (with the sign) when that rounded value is >= 2^-62,
  else a signed zero. The adds use the same fix.
* Overflow gives inf and inf - inf the default NaN; the caller rewrites every
  NaN of this path to 0xFFC00000 (x86's default NaN) so the result does not
  depend on the host's NaN conventions.

The loops run K tile -> column group (4 vectors of 8 floats with AVX2, of 16 with AVX-512: the width follows
the host, :func:`systolic.jit.vector_bits`; 8 chains in registers) -> row, so the 4 KiB of B a (K tile, group) needs stays in L1 while the rows of
A stream past it; rows are split between threads (ctypes releases the GIL during
the call).
"""

from __future__ import annotations

import ctypes
import functools

__all__ = ["available", "chain_gemm", "pack_b", "group"]

#: vectors per column group: with the FTZ check 2 (4 chains + the check's values fit in 16 ymm registers),
#: without it 4 (8 independent chains hide the FMA latency)
U_CHECK, U_FAST = 2, 4
PREFETCH_ROWS = 8    # rows ahead whose A and C pieces are prefetched


def _lanes() -> int:
    """Floats per vector: 8 (AVX2) or 16 (AVX-512), from the host's features (:func:`systolic.jit.vector_bits`)."""
    from .. import jit
    return max(8, jit.vector_bits() // 32)


def group() -> int:
    """Columns per group (N is padded to a multiple of it): 32 with AVX2 (and SSE: 8 lanes at least), 64 with
    AVX-512."""
    return _lanes() * U_FAST


def _compiled():
    """(module, ctypes function, group) for the host's vector width, or None where llvmlite / an x86-64 host is
    missing."""
    from .. import jit
    try:
        jit.llvm()
    except (ImportError, RuntimeError):  # no llvmlite, or not an x86-64 host: the numpy chains remain
        return None
    return _compiled_for(_lanes())


@functools.lru_cache(maxsize=None)
def _compiled_for(lanes: int):
    from .. import jit
    from . import gemm_ir
    mod = jit.compile_module(gemm_ir.module(lanes, U_CHECK, U_FAST, PREFETCH_ROWS), vectorize=True)
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), *([ctypes.c_int64] * 6))
    return mod, proto(mod.address("chain_gemm")), lanes * U_FAST


def available() -> bool:
    try:
        return _compiled() is not None
    except Exception:  # a broken LLVM must not break the library: the numpy path remains
        return False


def pack_b(b_rows):
    """(K2, N) -> the column-panel layout (N / G, K2, G) the kernel reads (G = :func:`group`)."""
    import numpy as np
    k2, n = b_rows.shape
    g = group()
    return np.ascontiguousarray(b_rows.reshape(k2, n // g, g).transpose(1, 0, 2))


def chain_gemm(a32, be, bo, c, m0: int, m1: int, kt: int, check: bool = True) -> None:
    """Run the kernel on rows m0 ... m1-1 (arrays: float32, C-contiguous; c updated in place).

    ``a32``: (M, 2*K2) DAZ-flushed fp32 inputs; ``be`` / ``bo``: the even / odd rows of B, (K2, N), packed
    by :func:`pack_b` into column panels (N / G, K2, G) so a K tile of a panel is contiguous
    memory (rows of B 4 KiB apart would all fall in one L1 set); and
    ``c``: (M, N) fp32 accumulators, N a multiple of :func:`group`; ``kt``: dwords per K tile (16 for a full tile);
    ``check=False`` skips the FTZ check (only valid when no chain value can be tiny: see gemm.py).
    """
    _, fn, g = _compiled()
    n = c.shape[1]
    if n % g or be.shape != bo.shape or be.shape[0] * g != n or be.shape[2] != g:
        raise ValueError(f"chain_gemm: N must be a multiple of {g} and B packed by pack_b")
    k2 = be.shape[1]
    fn(a32.ctypes.data, be.ctypes.data, bo.ctypes.data, c.ctypes.data, m0, m1, n, k2, kt, int(check))
