"""Compiled fast paths (LLVM via llvmlite) for the "stage" and "sequential" float models.

Three kernels, all bit-identical to the numpy path of :mod:`systolic.xmx.kernels` (property-tested, and
against the exact Fraction oracle in tests/xmx/test_fast_gemm.py); LLVM gets no fast-math flags, so every
IEEE operation is kept as written:

* :func:`fma32_mma` -- one product per step (tf32 "stage", every "sequential" step): the step is exactly a
  binary32 fused multiply-add, so a chain of them in K order is the model (see the comment above it).
* :func:`fast_mma` -- several products per stage (bf16/fp16/fp8 "stage"): each stage summed in binary64
  without checks, rounded once to fp32, and every element proven afterwards from a recorded maximum and
  per-chunk statistics of A and B (the proof is in the comment above :func:`fast_mma`); unproven elements are
  returned flagged.
* :func:`stage_mma` -- the per-operation checked kernels: the TwoSum cascade with the error terms rounded to
  odd (``hi + lo`` rounded to odd in binary64, then to nearest-even fp32), or the faster variant that checks
  every binary64 addition for exactness; they flag three-level cancellation, NaN/infinity and exact zeros
  (whose sign rule needs the terms), or any inexact addition.

Callers recompute flagged elements with the next kernel down and finally the numpy path, from their initial
C. If llvmlite cannot compile here, :func:`available` is False and callers use the numpy path.

This module is the driver (threads, jobs, scratch arrays, the refinement's bookkeeping); the kernels are built
with llvmlite's IR builder in :mod:`systolic.xmx.native_ir` and compiled by :mod:`systolic.jit`. Their vector
width follows the host (:func:`systolic.jit.vector_bits`: AVX-512 or AVX2). The preparation around them is
compiled too (issue 24): :func:`widen` (bf16 / fp16 inputs to float32, denormals flushed), B's panels packed and
widened by the thread that uses them, A's binary64 copy and statistics, the refinement's per-element statistics;
jobs run on the process's one worker pool (:mod:`systolic.jit.workers`), as many threads as the CPU affinity
allows.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections import OrderedDict

import numpy as np

from .. import jit
from ..jit import workers
from . import native_ir

__all__ = ["available", "stage_mma", "fast_mma", "fma32_mma", "widen"]

_LOCK = threading.Lock()
#: columns per vector in the explicit-vector kernel (two AVX2 registers of doubles)
VW = 8
#: rows processed together by the vector kernel (independent dependency chains)
VR = 4
_CACHE: dict[tuple, object] = {}
_STATE: dict[str, object] = {}


def _engine():
    """llvmlite with the host target ready (:mod:`systolic.jit`), or None where it cannot JIT here."""
    if "error" in _STATE:
        return None
    try:
        return jit.llvm()
    except Exception as exc:  # pragma: no cover - depends on the installation
        _STATE["error"] = repr(exc)
        return None


def _compiled(key, error_key: str, build):
    """The JIT-compiled function(s) for ``key``, built once (under the lock) by ``build()``; None where this
    host cannot JIT (llvmlite missing) or the build failed, its reason kept in ``_STATE[error_key]``."""
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
        fn = None
        if _engine() is not None:
            try:
                fn = build()
            except Exception as exc:  # pragma: no cover - depends on the host
                _STATE[error_key] = repr(exc)
        _CACHE[key] = fn
        return fn


def _kernel(T: int):
    def build():
        mod = jit.compile_module(native_ir.checked_module(T, VW, VR), vectorize=True)
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), *([ctypes.c_int64] * 6))
        return tuple(proto(mod.address(name)) for name in (f"mma{T}", f"vmma{T}_1", f"emma{T}_{VR}"))
    return _compiled(("checked", T), "error", build)


def ready(T: int, k: int) -> bool:
    """Whether the kernel a GEMM of ``k`` products with ``T`` per stage runs first -- the binary32 FMA chain
    (T = 1, :func:`fma32_mma`) or the unchecked kernel (:func:`fast_mma`) -- is already compiled in this process,
    so that using it costs no JIT time."""
    key = _fma32_key() if T == 1 else _fast_key(T, *fast_block(), _record_every(k, T))
    return _CACHE.get(key) is not None


def available() -> bool:
    """Whether the compiled kernel can run here (llvmlite present and able to JIT for this CPU)."""
    if os.environ.get("SYSTOLIC_NO_NATIVE"):
        return False
    return _kernel(1) is not None


def stage_mma(a32: np.ndarray, b32: np.ndarray, c: np.ndarray, T: int, *, threads: int | None = None,
              col_block: int = 128, robust: bool = False):
    """Run the compiled kernel: returns (acc fp32 values as float64 M x N, flag uint8 M x N).

    ``a32`` (M x K) and ``b32`` (K x N) are float32 arrays holding the exact input values (K a multiple of T),
    ``c`` the initial fp32 accumulator values (float64). Flagged elements must be recomputed by the caller.
    ``robust``: every row through the TwoSum / round-to-odd kernel (flags only three-level cancellation, exact
    zeros and non-finite values) instead of the faster kernel that flags every inexact binary64 addition.
    """
    fn = _kernel(T)
    if fn is None:
        raise RuntimeError("native kernel unavailable: " + str(_STATE.get("error")))
    a32 = np.ascontiguousarray(a32, dtype=np.float32)
    b32 = np.ascontiguousarray(b32, dtype=np.float32)
    acc = np.array(c, dtype=np.float64, order="C", copy=True)
    flag = np.zeros(acc.shape, dtype=np.uint8)
    m, k = a32.shape
    n = b32.shape[1]
    if m == 0 or n == 0:
        return acc, flag
    pa, pb, pc, pf = (x.ctypes.data for x in (a32, b32, acc, flag))
    jobs = [(j0, min(n, j0 + col_block)) for j0 in range(0, n, col_block)]
    nthreads = threads or min(workers.cpus(), len(jobs))

    scalar_fn, vector_fn, vector_rows = fn
    mr = 0 if robust else m // VR * VR

    def work(job):
        j0, j1 = job
        jv = j0 + (j1 - j0) // VW * VW
        if jv > j0:  # ctypes releases the GIL during each call
            if mr:
                vector_rows(pa, pb, pc, pf, n, k, 0, mr, j0, jv)
            if m > mr:
                vector_fn(pa, pb, pc, pf, n, k, mr, m, j0, jv)
        if j1 > jv:
            scalar_fn(pa, pb, pc, pf, n, k, 0, m, jv, j1)

    workers.for_each(work, jobs, nthreads)         # the process's pool (jit.workers): no threads started per call
    return acc, flag


# ------------------------------------------------------------------ the unchecked kernel and its a-posteriori test
#
# Why most elements need no per-operation exactness check (the proof the fast path rests on).
#
# Let L be an integer such that C and every product a_k * b_k of one output element are integer multiples of
# 2**L (zeros are multiples of everything), and let P >= max_k |a_k * b_k|.
#
# (1) Every accumulator value x is a multiple of 2**L.  C is.  If x is, the stage's exact sum S = x + p_0 + ...
#     + p_{T-1} is; x' = RN24(S) is either S itself or a multiple of ulp32(S) (the fp32 spacing at S, including
#     the subnormal spacing 2**-149); in the second case S is not an fp32 number although it is a multiple of
#     2**L, so ulp32(S) > 2**L and, both being powers of two, ulp32(S) is a multiple of 2**L.  (Overflow gives
#     infinity, which the caller treats as not proven.)
# (2) If |x| + T*P <= 2**(53+L) at the entry of a stage, every partial sum x + p_0 + ... + p_t is a multiple of
#     2**L of magnitude <= 2**(53+L): an integer of at most 53 bits times 2**L, a binary64 number (L >= -298 for
#     every DPAS input format, far above binary64's 2**-1074).  So each binary64 operation h = RN53(h + p_t)
#     (an FMA or a multiply then add: the product is exact in binary64, at most 22 significant bits) returns the
#     exact partial sum, and the last one is S.
# (3) The rounding RN24(S) is Veltkamp's splitting in binary64: c = RN53(S * (2**29 + 1)), x' = RN53(c -
#     RN53(c - S)) is S rounded to 53 - 29 = 24 significant bits, to nearest, ties to even (Veltkamp/Dekker,
#     a rounding to nearest by the classical analysis, e.g. Boldo 2006; the ties-to-even behaviour is checked
#     exhaustively in small precisions and on 3e7 binary64 ties and near-ties by
#     tools/analysis/veltkamp_rne.py, and the kernel against the exact Fraction oracle in the tests).  That is
#     fp32's RNE while the result is a normal fp32 number; a result below 2**-126 is also right when L >= -149,
#     for then S is a multiple of 2**-149 of at most 23 significant bits, an fp32 subnormal, and both roundings
#     return S itself.  Three binary64
#     operations instead of fptrunc + fpext: on Zen 3 the conversions cost 0.86 ns per 4 lanes and stage in a
#     register-only loop, Veltkamp 0.62 (benchmarks/bench_stage_rounding.py).
# (4) Overflow: Veltkamp does not make infinities, so the test also requires the bound on |x| (below) to stay at
#     or under FLT_MAX: then no stage rounds to 2**128, where the model would have overflowed.
# (5) Signed zeros: an exact binary64 sum is -0 only when both operands are -0 (IEEE 754 6.3, RNE), so the
#     chain gives -0 exactly when x and every product are -0, which is the model's zero rule; Veltkamp keeps
#     it (c = -0, c - S = +0, -0 - +0 = -0) and maps +0 to +0.
# (6) Non-finite inputs and NaN: an infinity or NaN in A, B or C makes a statistic infinite or NaN (max|a| *
#     max|b| is NaN for an infinity times an all-zero chunk), and the kernel keeps a NaN statistic; a NaN or
#     infinite x stays NaN to the end (NaN propagates, and Veltkamp turns an infinity into NaN: inf - inf), and
#     the test requires the final x finite.  So every such element fails the test and goes to the exact path,
#     which writes the model's NaN (0x7FC00000, where x86 would leave its default NaN, sign bit set) and
#     infinities.
#
# The kernel therefore computes blindly and records, per element, the largest |x| seen (the initial C and the
# result of every S-th stage).  Between two records |x| grows by at most T*P per stage (times 1 + 2**-24 for the
# rounding), so every stage entry has |x| + T*P <= (max|x| + S*T*P) * (1 + 2**-24)**S.  The element is proven
# when (max|x| + S*T*P) * (1 + 2**-20) <= min(2**(53+L), FLT_MAX) and L >= -149, the factor covering that
# growth (S <= 8) and the test's own three binary64 roundings.  L and P come from numbers known before the
# run, per K chunk of KC elements: with La_ic, Lb_jc the granularities and Ma_ic, Mb_jc the maxima of row i of
# A and column j of B in chunk c, every product is a multiple of 2**min_c(La_ic + Lb_jc) and at most
# max_c Ma_ic * Mb_jc in magnitude; C's own granularity enters when C is not zero.  The kernel evaluates the
# test per element after its stage loop; the caller retries the failures with finer statistics (_refine:
# chunks of 4, then element by element) and recomputes what stays unproven with the per-operation checked
# kernel or the numpy path.  Failures are rare: a tiny element in a chunk lowers L for that chunk of its row or
# column.

def _fv() -> int:
    """Doubles per vector register (AVX2: 4, AVX-512: 8); the fast kernel keeps R rows x V vectors of
    accumulators in registers."""
    return jit.vector_bits() // 64


#: rows x vectors of the fast kernel's register block (Zen 3, bf16 1024^3, one thread, kernel only, ns per 4
#: stage-lanes: 6x2 0.9-1.1, 5x2 0.9-1.0, 4x2 1.1, 3x3 1.0-1.4 -- within this machine's noise; 12 chains of 17
#: cycles' latency keep the two FMA pipes busy, fewer do not)
FAST_BLOCKS = {256: (6, 2), 512: (4, 4)}


def fast_block() -> tuple[int, int]:
    """(R, V) of the fast kernel at the host's vector width (AVX-512's 32 registers hold 8 x 2 accumulators
    without spilling; 12 x 2 and 6 x 4 spill, by the generated code)."""
    return FAST_BLOCKS.get(jit.vector_bits(), (6, 2))


def _fast_kernel(T: int, R: int, V: int, S: int = 1):
    """(the unchecked kernel, the statistics of A) for T products per stage, or None."""
    def build():  # a failure leaves the checked kernels usable
        fma = "+fma" in jit.host_features()
        mod = jit.compile_module(native_ir.fast_module(T, R, V, fma, S, fv, _GROW), vectorize=True)
        kern = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 10), *([ctypes.c_int64] * 10))
        stat = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4), *([ctypes.c_int64] * 5), ctypes.c_double)
        return kern(mod.address(f"fmma{T}_{R}_{V}_{S}")), stat(mod.address("astat"))
    fv = _fv()
    return _compiled(_fast_key(T, R, V, S), "fast_error", build)


def _fast_key(T: int, R: int, V: int, S: int) -> tuple:
    return ("fast", T, R, V, S, _fv())


def _refine_kernel():
    """(rfn, tpose) of :func:`native_ir.refine_module`, or None."""
    def build():
        mod = jit.compile_module(native_ir.refine_module(sv))
        rfn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                               ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                               ctypes.c_int64)(mod.address(f"rfn{sv}"))
        tpose = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, *([ctypes.c_int64] * 4))(
            mod.address(f"tpose{sv}"))
        return rfn, tpose
    sv = _sv()
    return _compiled(("refine", sv), "refine_error", build)


def _line_stats(x: np.ndarray, sig_bits: int, axis: int):
    """Per line along ``axis`` of a float32 array: the exponent L such that every element is a multiple of
    2**L, and the largest magnitude (float64). L is _elem_lsb's bound for the smallest nonzero magnitude (the
    bound grows with the magnitude, so it holds for the whole line); all-zero lines get _BIG; a NaN or an
    infinity makes the maximum NaN or infinite. Works on the bit patterns: nonnegative floats order like their
    bits, and (bits - 1) wraps zeros to the largest value, out of the minimum's way."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) & np.uint32(0x7FFFFFFF)
    low = (u - np.uint32(1)).min(axis=axis) + np.uint32(1)  # 0: every element was zero
    top = u.max(axis=axis)
    E = (low >> np.uint32(23)).astype(np.int64)
    lsb = np.where(low == 0, _BIG, np.maximum(E, 1) - 126 - sig_bits)
    with np.errstate(invalid="ignore"):     # a signalling NaN widens to a NaN: intended, no warning
        return lsb, top.view(np.float32).astype(np.float64)


#: K elements per chunk of the kernel's test (statistics of A and B per chunk: a tiny element lowers L only for
#: its own chunk). Measured on fp16 1024^3 standard-normal data: line-wide statistics flag 11% of the elements,
#: chunks of 64 0.7%, of 32 0.4%, of 16 0.2%; 32 gave the best total time (finer chunks add per-chunk work to the
#: kernel, coarser ones more refinement of flagged elements in numpy).
KC = 32
#: 1 + 2**-20 >= (1 + 2**-24)**S * (1 + 2**-52)**3 for S <= 8: the growth of |x| over the S - 1 unrecorded
#: stages and the rounding of the test's own additions and multiplications
_GROW = 1.0 + 2.0 ** -20
#: the largest finite fp32 value
_FLT_MAX = float(np.finfo(np.float32).max)
_BIG = 600  # "no constraint": 2**(51+600) * 2**600 overflows to inf, a test that then always passes


def _elem_lsb(x32: np.ndarray, sig_bits: int) -> np.ndarray:
    """Per element of a float32 array: L (int16) with the element a multiple of 2**L, from its exponent field E:
    max(E, 1) - 126 - sig_bits (a normal value is a multiple of 2**(E-127-(sig-1)); an fp32 subnormal of a
    format with fp32's exponent range, of 2**(-125-sig)); zeros and non-finite values: 2*_BIG (the maxima
    catch the latter)."""
    u = np.ascontiguousarray(x32, dtype=np.float32).view(np.int32) & 0x7FFFFFFF
    E = (u >> 23).astype(np.int16)
    lsb = np.maximum(E, 1) - np.int16(126 + sig_bits)
    return np.where((u == 0) | (E == 255), np.int16(2 * _BIG), lsb).astype(np.int16)


def _record_every(k: int, T: int) -> int:
    """fast_mma's default S: record |x| every 4 stages where the stage count allows, else 2, else 1."""
    return next(s for s in (4, 2, 1) if (k // T) % s == 0)


def fast_mma(a32: np.ndarray, b32: np.ndarray, c: np.ndarray, T: int, *, sig_bits: tuple[int, int] = (24, 24),
             threads: int | None = None, R: int | None = None, V: int | None = None, S: int | None = None):
    """Run the unchecked kernel and the proof's test: returns (acc float32 M x N, flag bool M x N).

    ``c``: the fp32 values of C (float64), or None for +0. Flagged elements are not proven (see the proof
    above) and must be recomputed by the caller; the others are the model's results. ``sig_bits``: a true bound
    on the significant bits of A's and B's elements (24 for any float32 value; 8 for bf16, 11 for fp16, tf32).

    The kernel records |x| every S stages (default 4 where the stage count allows; measured at 1024^3 with the
    per-chunk test, whole path, two threads, before the Veltkamp rounding: bf16 S=2 0.122 s, S=4 0.096 s, S=8
    0.092 s; fp16 0.195, 0.174, 0.227 s -- a larger S weakens the test, S*T*P, and fp16 then refines more); the
    proof above covers the stages in between. Everything around it is compiled and threaded too: A's widening
    to binary64 with its statistics (``astat``, by rows), each panel of B widened with its statistics by the
    thread that runs it, and the refinement's per-element statistics (``rfn``).
    """
    m, k = a32.shape
    if S is None:
        S = _record_every(k, T)
    if R is None or V is None:
        R, V = fast_block()
    sig = (int(sig_bits[0]), int(sig_bits[1]))
    fns = _fast_kernel(T, R, V, S)
    if fns is None:
        raise RuntimeError("native kernel unavailable: " + str(_STATE.get("fast_error", _STATE.get("error"))))
    fn, astat = fns
    n = b32.shape[1]
    zero_c = c is None  # C = +0 everywhere: no conversion, no test of C's granularity
    with np.errstate(invalid="ignore"):         # a signalling NaN in C widens to a NaN: intended
        c = np.zeros((m, n)) if zero_c else np.asarray(c, dtype=np.float64)
    if m == 0 or n == 0 or k == 0:
        return c.astype(np.float32), ~np.isfinite(c)
    W = _fv() * V
    kc = KC if k % KC == 0 and KC % (T * S) == 0 else k
    nch = k // kc
    panels = -(-n // W)
    A = np.ascontiguousarray(a32, dtype=np.float32)
    B = np.ascontiguousarray(b32, dtype=np.float32)
    with np.errstate(invalid="ignore"):         # fp32 values: exact
        C = np.zeros((m, n), dtype=np.float32) if zero_c else c.astype(np.float32)
    A64, RAC, MAC = _take((m, k)), _take((m, nch)), _take((m, nch))
    MX = np.empty((m, n))   # written only where read (the kernel's comment): mostly never touched
    F = np.empty((m, n), dtype=np.uint8)
    nthreads = threads or min(workers.cpus(), panels * max(1, m // (8 * R)))
    # A's widening and statistics, rows over the threads
    rstep = max(1, -(-m // (nthreads * 2)))
    workers.run_jobs(lambda q, i0: astat(A.ctypes.data, A64.ctypes.data, RAC.ctypes.data, MAC.ctypes.data, i0,
                                  min(m, i0 + rstep), k, kc, sig[0], float(S * T)), list(range(0, m, rstep)),
              nthreads)
    jobs = _jobs(panels, m, nthreads, R)
    Pk, RB, MB = _take((len(jobs), k * W)), _take((len(jobs), nch * W)), _take((len(jobs), nch * W))
    head = (A64.ctypes.data, B.ctypes.data, C.ctypes.data, MX.ctypes.data, F.ctypes.data)
    tail = (RAC.ctypes.data, MAC.ctypes.data, m, n, k, kc)

    def call(q, job):
        p0, p1, i0, i1 = job
        fn(*head, Pk[q].ctypes.data, RB[q].ctypes.data, MB[q].ctypes.data, *tail, p0, p1, i0, i1,
           0 if zero_c else 1, sig[1])

    workers.run_jobs(call, jobs, nthreads)
    _give(A64, RAC, MAC, Pk, RB, MB)
    flag = F.view(bool)
    with np.errstate(invalid="ignore", over="ignore"):
        if not zero_c and np.any(c != 0):  # C's own granularity: (|x| + S*T*P) * _GROW <= 2**(53+Lc) as well
            lc = _fp32_lsb(c)
            P = np.abs(A).max(axis=1).astype(np.float64)[:, None] * np.abs(B).max(axis=0).astype(np.float64)
            flag = flag | ~((MX + S * T * P) * _GROW <= np.ldexp(1.0, 53 + lc))
        if flag.any():
            flag = flag.copy()
            _refine(A, B, c, C, MX, flag, S * T, sig)
    return C, flag


def _fp32_lsb(c: np.ndarray) -> np.ndarray:
    """Per element of an array of fp32 values (float64): L (int32) with the element a multiple of 2**L (every
    fp32 value is a multiple of 2**-149); zeros and non-finite values: _BIG (the maxima catch the latter)."""
    ac = np.abs(c)
    with np.errstate(invalid="ignore"):
        lc = np.frexp(np.where(np.isfinite(ac), ac, 1.0))[1].astype(np.int64) - 24
        return np.where((ac == 0) | ~np.isfinite(ac), _BIG, np.clip(lc, -149, _BIG)).astype(np.int32)


def _refine(a32, b32, c, acc, mx, flag, T, sig_bits, chunk: int = 1 << 16) -> None:
    """(``T`` here: the S*T of :func:`fast_mma`.) Retry the test for flagged elements with their own L and P:
    L = min over k of (L(a_ik) + L(b_kj)), P = max over k of |a_ik b_kj| (a tiny element of a row only pairs
    with its own column's entries), computed by the compiled ``rfn`` (SIMD over K; before, numpy statistics of
    chunks of 4 and then element by element took 0.1-0.3 s for fp16's 0.5% flagged elements at 1024^3).
    Clears the flags it proves."""
    rows, cols = np.nonzero(flag)
    k = a32.shape[1]
    fns = _refine_kernel()
    if fns is None:
        return
    fn, tpose = fns
    n = b32.shape[1]
    nthreads = workers.cpus()
    B = np.ascontiguousarray(b32, dtype=np.float32)
    Bt = np.empty((n, k), dtype=np.float32)   # B transposed by the compiled kernel, columns over the threads
    cstep = -(-n // (nthreads * _sv())) * _sv()
    workers.run_jobs(lambda q, c0: tpose(B.ctypes.data, Bt.ctypes.data, k, n, c0, min(n, c0 + cstep)),
              list(range(0, n, cstep)), nthreads)
    A = np.ascontiguousarray(a32, dtype=np.float32)
    r_all, q_all = rows.astype(np.int64), cols.astype(np.int64)
    L = np.empty(rows.size, dtype=np.int64)
    P = np.empty(rows.size)
    step = max(256, -(-rows.size // nthreads))
    workers.run_jobs(lambda q, s0: fn(A.ctypes.data, Bt.ctypes.data, k, r_all[s0:].ctypes.data, q_all[s0:].ctypes.data,
                               min(rows.size, s0 + step) - s0, L[s0:].ctypes.data, P[s0:].ctypes.data,
                               int(sig_bits[0]), int(sig_bits[1])),
              list(range(0, rows.size, step)), nthreads)
    keep = []
    with np.errstate(invalid="ignore", over="ignore"):
        for s0 in range(0, rows.size, chunk):
            t = slice(s0, s0 + chunk)
            rr, cc = rows[t], cols[t]
            cv = np.abs(c[rr, cc])
            Lt = np.minimum(L[t], _fp32_lsb(cv))
            top = (mx[rr, cc] + T * P[t]) * _GROW
            ok = top <= np.ldexp(1.0, np.clip(53 + Lt, -2000, 2000).astype(np.int32))
            # the kernel's two other conditions: no stage near fp32 overflow, no fp32 subnormal rounding
            ok &= (top <= _FLT_MAX) & (Lt >= -149) & np.isfinite(cv) & np.isfinite(acc[rr, cc]) & np.isfinite(P[t])
            keep.append(~ok)
    bad = np.concatenate(keep)
    flag[rows, cols] = False
    flag[rows[bad], cols[bad]] = True


# ------------------------------------------------------------------ one product per stage: fp32 FMA lanes
#
# With one product per stage ("stage" for tf32, every "sequential" step) the model's step is
# x' = RN24(x + a*b) with a, b, x fp32 values: exactly IEEE 754's fused multiply-add in binary32 (the product
# exact, one rounding to nearest even, subnormals kept -- the JIT code runs with the default MXCSR, no FTZ/DAZ --
# overflow to infinity, and an exact zero sum is -0 only when x and a*b both are -0, IEEE 754 6.3).  So a chain
# of binary32 FMAs in K order is the model itself, with no exactness test; only non-finite results (whose NaN
# the hardware writes with its own sign and payload) are flagged for the exact path.  A non-finite value never
# becomes finite again, so the final value tells.

def _sv() -> int:
    """Floats per vector register (AVX2: 8, AVX-512: 16)."""
    return jit.vector_bits() // 32


#: (R, V) of the binary32 FMA kernel per vector width; K per chunk of its panels (0: all of K at once; chunks
#: of 128-512 were no faster on Zen 3)
SEQ_BLOCKS = {256: (6, 2), 512: (6, 4)}
SKC = 0


def seq_block() -> tuple[int, int]:
    return SEQ_BLOCKS.get(jit.vector_bits(), (6, 2))


def _fma32_kernel(R: int, V: int, KC: int | None = None):
    def build():  # a failure leaves the binary64 kernels usable
        if "+fma" not in jit.host_features():
            raise RuntimeError("no FMA instruction on this host")  # a libm call per element: too slow
        mod = jit.compile_module(native_ir.fma32_module(R, V, sv, KC))
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 5), *([ctypes.c_int64] * 8))
        return proto(mod.address(f"gmma_{R}_{V}_{KC}"))
    sv = _sv()
    KC = SKC if KC is None else KC
    return _compiled(_fma32_key(R, V, KC), "fma32_error", build)


def _fma32_key(R: int | None = None, V: int | None = None, KC: int | None = None) -> tuple:
    """The cache key of the binary32 FMA kernel (its vector width included)."""
    if R is None:
        R, V = seq_block()
    return ("fma32", R, V, SKC if KC is None else KC, _sv())


def _jobs(panels: int, m: int, nthreads: int, R: int, per_thread: int = 4) -> list[tuple[int, int, int, int]]:
    """(p0, p1, i0, i1) blocks of the panels x rows iteration space, about ``per_thread`` per thread: by panels
    first (each job packs its panels of B once), and by rows as well where there are too few panels (16 threads
    on a narrow B)."""
    want = max(1, nthreads * per_thread)
    pstep = max(1, -(-panels // want))
    pblocks = [(p0, min(panels, p0 + pstep)) for p0 in range(0, panels, pstep)]
    rsplit = max(1, min(-(-want // len(pblocks)), m // (8 * R) or 1))
    rstep = -(-m // rsplit)
    return [(p0, p1, i0, min(m, i0 + rstep)) for p0, p1 in pblocks for i0 in range(0, m, rstep)]


#: scratch arrays kept between calls (key: shape and dtype), at most _KEEP of them: a fresh multi-megabyte array
#: costs a page fault per 4 KiB on first touch, 1-3 us each in a VM (3700 of them per bf16 1024^3 stage GEMM
#: before); never handed to callers
_SCRATCH: "OrderedDict[tuple, list]" = OrderedDict()
_KEEP = 8


def _take(shape, dtype=np.float64) -> np.ndarray:
    """A scratch array (contents undefined), from the kept ones when one fits; give it back with _give."""
    key = (tuple(shape), np.dtype(dtype).str)
    with _LOCK:
        got = _SCRATCH.get(key)
        if got:
            _SCRATCH.move_to_end(key)
            return got.pop()
    return np.empty(shape, dtype=dtype)


def _give(*arrays: np.ndarray) -> None:
    with _LOCK:
        for x in arrays:
            key = (x.shape, x.dtype.str)
            _SCRATCH.setdefault(key, []).append(x)
            _SCRATCH.move_to_end(key)
            while sum(len(v) for v in _SCRATCH.values()) > _KEEP:
                k0 = next(iter(_SCRATCH))
                if _SCRATCH[k0]:
                    _SCRATCH[k0].pop(0)
                if not _SCRATCH[k0]:
                    del _SCRATCH[k0]


def _result_buffer(shape) -> np.ndarray:
    """An uninitialised float32 result (a seam for the test that proves the kernel never reads it)."""
    return np.empty(shape, dtype=np.float32)


def fma32_mma(a32: np.ndarray, b32: np.ndarray, c: np.ndarray, *, threads: int | None = None,
              R: int | None = None, V: int | None = None, KC: int | None = None):
    """One product per step as binary32 FMAs (see above): returns (acc float32 M x N, flag bool M x N); flagged
    elements (non-finite results) must be recomputed by the caller. Raises RuntimeError where no FMA kernel.

    The kernel reads A and B where they are and writes the result in place (:func:`native_ir.build_gmma`): each
    thread packs its own panels of B, so the only passes outside the kernel are C's conversion to float32 (when
    C is given) and, when some result is not finite, the search for those."""
    if R is None or V is None:
        R, V = seq_block()
    fn = _fma32_kernel(R, V, KC)
    if fn is None:
        raise RuntimeError("fp32 FMA kernel unavailable: " + str(_STATE.get("fma32_error", _STATE.get("error"))))
    m, k = a32.shape
    n = b32.shape[1]
    zero_c = c is None
    with np.errstate(invalid="ignore"):         # a signalling NaN in C narrows to a NaN: intended
        if zero_c and k:
            # the kernel reads C only where hasC (its masked loads give +0 otherwise) and writes every element:
            # no zeroed pages to fault in or clear (tests/xmx/test_native.py fills this buffer with NaNs)
            out = _result_buffer((m, n))
        else:
            out = np.zeros((m, n), dtype=np.float32) if zero_c else np.asarray(c, dtype=np.float32,
                                                                               order="C").copy()
    if m == 0 or n == 0 or k == 0:
        return out, ~np.isfinite(out)
    A = np.ascontiguousarray(a32, dtype=np.float32)
    B = np.ascontiguousarray(b32, dtype=np.float32)
    W = _sv() * V
    panels = -(-n // W)
    nthreads = threads or min(workers.cpus(), panels * max(1, m // (8 * R)))
    jobs = _jobs(panels, m, nthreads, R)
    KC = SKC if KC is None else KC
    scratch = _take((len(jobs), (KC or k) * W), np.float32)
    bad = np.zeros(len(jobs), dtype=np.uint8)
    ptr = (A.ctypes.data, B.ctypes.data, out.ctypes.data)

    def call(q, job):
        p0, p1, i0, i1 = job
        fn(*ptr, scratch[q].ctypes.data, bad[q:].ctypes.data, m, n, k, p0, p1, i0, i1, 0 if zero_c else 1)

    workers.run_jobs(call, jobs, nthreads)
    _give(scratch)
    # no result non-finite (the usual case): a read-only all-False view, no 1 MB of zeroed pages
    flag = ~np.isfinite(out) if bad.any() else np.broadcast_to(np.False_, (m, n))
    return out, flag


# ------------------------------------------------------------------ the inputs' widening, compiled and threaded

def _widen_kernels():
    def build():
        mod = jit.compile_module(native_ir.widen_module(sv))
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float)
        return {f: proto(mod.address(f"widen_{f}_{sv}")) for f in ("bf16", "fp16")}
    sv = _sv()
    return _compiled(("widen", sv), "widen_error", build)


def widen(x: np.ndarray, fmt: str, min_normal: float, *, threads: int | None = None) -> np.ndarray | None:
    """The bf16 / fp16 array ``x`` as float32 values (exact), magnitudes below ``min_normal`` (0: none) made
    zeros of their sign -- ``gemm._float_values`` for these formats, in compiled code over threads (numpy's
    float16 conversion is a scalar loop, and the flush test took three more passes). None where the kernel
    cannot run here (the caller then uses numpy). NaNs stay NaNs (their payloads may differ from numpy's
    conversion: a NaN input makes the model's NaN whatever its bits)."""
    if os.environ.get("SYSTOLIC_NO_NATIVE") or fmt not in ("bf16", "fp16"):
        return None
    fns = _widen_kernels()
    if fns is None:
        return None
    fn = fns[fmt]
    src = np.ascontiguousarray(x).view(np.uint16)
    out = np.empty(src.shape, dtype=np.float32)
    size = src.size
    if size == 0:
        return out
    s, d = src.reshape(-1), out.reshape(-1)
    # one pass at memory speed (0.2 ms per 10**6 elements on one Zen 3 core): threads pay only for large arrays
    nthreads = threads or max(1, min(workers.cpus(), size // (1 << 21)))
    step = -(-size // nthreads)

    def part(q, i0):
        fn(s[i0:].ctypes.data, d[i0:].ctypes.data, min(size, i0 + step) - i0, min_normal)

    workers.run_jobs(part, list(range(0, size, step)), nthreads)
    return out
