"""Compiled kernels for whole bf16/fp16 GEMMs with the AMX chain order: the drivers (the kernels are built with
llvmlite's IR builder in :mod:`systolic.amx.gemm_ir` and JIT-compiled by :mod:`systolic.jit`). Two kernels:
:class:`FastJob` (compiled packing, then a register-blocked kernel, used where the inputs' exponents prove that no
chain value can be tiny; see its section below) and :func:`chain_gemm` (the FTZ-checked chains, described here).

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

import contextlib
import ctypes
import functools

from ..jit import scratch, workers

__all__ = ["available", "chain_gemm", "pack_b", "group", "FastJob", "FAST_BLOCK", "FAST_KC", "FAST_MC"]

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


# ---------------------------------------------------------------- the register-blocked kernel (no FTZ check)

#: rows x column groups of the register block, by floats per vector (AVX2: 6 rows x 8 columns x 2 chains = 12 ymm)
FAST_BLOCK = {8: (6, 1), 16: (8, 1)}
FAST_KC = 512      # dwords per K block (a multiple of the 16-dword tile; 512 measured faster than 256 and 128)
FAST_MC = 96       # rows per M block: the A block stays in L2
FAST_SMALL_WORK = 1 << 22   # 2 M K N below this: one thread
_KINDS = {"tdpbf16ps": "bf16", "tdpfp16ps": "fp16"}


@functools.lru_cache(maxsize=None)
def _fast_for(lanes: int):
    from .. import jit
    from . import gemm_ir
    R, G = FAST_BLOCK[lanes]
    mod = jit.compile_module(gemm_ir.fast_module(lanes, R, G), vectorize=True)
    vp, i64 = ctypes.c_void_p, ctypes.c_int64
    fns = {"fgemm": mod.cfunc("fgemm", None, vp, vp, vp, *([i64] * 8)),
           "fnan": mod.cfunc("fnan", None, vp, vp, i64, i64),
           "fprepc": mod.cfunc("fprepc", None, vp, vp, i64, vp)}
    for kind in ("bf16", "fp16"):
        fns[f"fpacka_{kind}"] = mod.cfunc(f"fpacka_{kind}", None, vp, i64, i64, i64, vp, i64, i64, vp, vp)
        fns[f"fpackb_{kind}"] = mod.cfunc(f"fpackb_{kind}", None, vp, i64, i64, i64, vp, i64, i64, vp, vp)
    return mod, fns, R, G * lanes


def _min_exp(keys) -> int | None:
    """The smallest biased exponent from the packs' minimum keys (gemm._min_exponent's reading), None if none."""
    k = min(int(x) for x in keys)
    return None if k >= 0x7F000000 else (k >> 23) + 1


class FastJob:
    """One bf16 / fp16 GEMM on the register-blocked kernel: the constructor packs A, B and C in compiled code
    (threads; use it as a context manager: the packed copies' buffers go back at the end), giving the smallest
    exponents (:attr:`ea`, :attr:`eb`, :attr:`ec`: the caller decides from them
    whether the kernel may skip the FTZ check), the rows of A / columns of B holding an inf or NaN
    (:attr:`bad_rows`, :attr:`bad_cols`) and whether C holds a NaN; :meth:`run` computes C + the chains.

    ``a``: (M, 2 K2) bfloat16 / float16, ``b``: (2 K2, N) the same, ``c``: (M, N) float32."""

    def __init__(self, mn: str, a, b, c, threads: int | None = None):
        import numpy as np
        lanes = _lanes()
        _, self.fns, R, NR = _fast_for(lanes)
        kind = _KINDS[mn]
        M, kp = a.shape
        N = b.shape[1]
        self.M, self.N, self.k2, self.R, self.NR = M, N, kp // 2, R, NR
        a16 = np.ascontiguousarray(a).view(np.uint16)
        b16 = np.ascontiguousarray(b).view(np.uint16)
        self.c32 = np.ascontiguousarray(c, dtype=np.float32).view(np.uint32)
        qa, self.panels = -(-M // R), -(-N // NR)
        self._stack = contextlib.ExitStack()          # the packed copies: reused buffers, given back by close()
        self.Ap = self._stack.enter_context(scratch.buffer(qa * R * kp, np.uint32))
        self.Bp = self._stack.enter_context(scratch.buffer(self.panels * NR * kp, np.uint32))
        self.out = np.empty((M, N), np.float32)
        badr, badc = np.zeros(M, np.uint8), np.zeros(N, np.uint8)
        nt = max(1, min(threads or workers.cpus(), 8))
        if 2 * M * kp * N < FAST_SMALL_WORK:
            nt = 1                                   # small products: threads cost more than they save
        self.nthreads = nt
        npk = 1 if nt == 1 else 4 * nt               # pieces, handed out dynamically (a busy CPU gets fewer)
        stat = np.full((npk, 3, 2), 0xFFFFFFFF, np.uint32)
        qs = [qa * i // npk for i in range(npk + 1)]
        ps = [self.panels * i // npk for i in range(npk + 1)]
        es = [M * N * i // npk for i in range(npk + 1)]
        f = self.fns
        pa, pb = f[f"fpacka_{kind}"], f[f"fpackb_{kind}"]
        out32 = self.out.view(np.uint32).reshape(-1)
        c32f = self.c32.reshape(-1)

        def pack(i):
            pa(a16.ctypes.data, kp, M, self.k2, self.Ap.ctypes.data, qs[i], qs[i + 1], stat[i, 0].ctypes.data,
               badr.ctypes.data)
            pb(b16.ctypes.data, N, self.k2, N, self.Bp.ctypes.data, ps[i], ps[i + 1], stat[i, 1].ctypes.data,
               badc.ctypes.data)
            f["fprepc"](c32f[es[i]:].ctypes.data, out32[es[i]:].ctypes.data, es[i + 1] - es[i], stat[i, 2].ctypes.data)
        try:
            workers.for_each(pack, range(npk), nt)
        except BaseException:
            self.close()
            raise
        # a piece with no rows / panels / elements leaves its keys at 0xFFFFFFFF (no value), its NaN flag at 0
        self.ea, self.eb, self.ec = (_min_exp(stat[:, j, 0]) for j in range(3))
        self.bad_rows, self.bad_cols = np.nonzero(badr)[0], np.nonzero(badc)[0]

    def close(self) -> None:
        """Give the packed copies' buffers back (after :meth:`run`, or instead of it)."""
        self._stack.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self):
        """C + the chains as float32 (M, N); NaNs made from finite inputs are the default NaN, where C is a NaN
        C's NaN made quiet; rows / columns with an inf or NaN input are left to the caller."""
        f, nt = self.fns, self.nthreads
        chunks = 1 if nt == 1 else min(self.panels, 4 * nt)
        cs = [self.panels * i // chunks for i in range(chunks + 1)]
        args = (self.Ap.ctypes.data, self.Bp.ctypes.data, self.out.ctypes.data, self.M, self.N, self.N, self.k2)
        mc = max(self.R, FAST_MC // self.R * self.R)
        workers.for_each(lambda i: f["fgemm"](*args, cs[i], cs[i + 1], FAST_KC, mc), range(chunks), nt)
        n = self.M * self.N
        es = [n * i // nt for i in range(nt + 1)]
        o, c = self.out.view(self.c32.dtype).reshape(-1), self.c32.reshape(-1)
        workers.for_each(lambda i: f["fnan"](o[es[i]:].ctypes.data, c[es[i]:].ctypes.data, es[i + 1] - es[i], 1),
                         range(nt), nt)
        return self.out
