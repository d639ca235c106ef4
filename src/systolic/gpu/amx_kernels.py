"""``systolic.amx.matmul(..., backend="cuda")``: the AMX GEMM on an NVIDIA GPU, bit-identical to the CPU path.

The same function as :func:`systolic.amx.gemm.matmul` (same arguments, same errors, same bits), computed by
CUDA kernels compiled with NVRTC through CuPy:

* int8 / uint8 (TDPBSSD, TDPBSUD, TDPBUSD, TDPBUUD): ``(C + A @ B) mod 2^32`` by cuBLAS's int8 GEMM
  (:mod:`systolic.gpu.int_gemm`; integer addition modulo 2^32 is associative, so the order is free);
* bfloat16 / float16 (TDPBF16PS, TDPFP16PS): per output and per tile-K block of 32 values the two fp32 FMA
  chains (even / odd element of each pair), then ``C += even + odd``, with DAZ, FTZ after rounding, RNE and
  the x86 NaN rules (:mod:`systolic.gpu.amx_float_cuda`). Rows of A and columns of B holding an inf or NaN
  are recomputed by a kernel that applies the NaN operand priority at every step.

Results come back as the caller's kind of array (:func:`systolic.gpu.intake.give_back`).
"""

from __future__ import annotations

import numpy as np

from .. import counters
from ..errors import InvalidValue
from . import amx_float_cuda as FC
from . import int_gemm, intake, runtime

__all__ = ["matmul", "exact_matmul", "float_variant", "set_float_variant", "set_int8_fast_path"]

#: tile-K block of TDPBF16PS / TDPFP16PS: 16 dwords = 16 pairs of 16-bit values (SDM: tmul_maxk 16)
KT = 16
_FLOAT = {"fast": "128x128_8x8", "check": "64x64_4x4"}
_INT8 = intake.IN_PLACE                               # one switch: the XMX engine's s8/u8 path reads it too
_NULL = np.uint64(0)                                 # a null pointer argument: "C omitted, zeros"


def set_int8_fast_path(on: bool) -> bool:
    """Turn the cached int8 launch path (:func:`_int8_fast`) on or off; returns the previous setting.
    Benchmarks time both in one run; both compute the same bits (the same kernels)."""
    prev = _INT8["fast"]
    _INT8["fast"] = bool(on)
    return prev


def float_variant() -> dict:
    """The tile shapes the float GEMM uses now: ``{"fast": ..., "check": ...}`` (names of amx_float_cuda.VARIANTS)."""
    return dict(_FLOAT)


def set_float_variant(fast: str | None = None, check: str | None = None) -> None:
    """Choose the float kernels' tile shapes (benchmarks; every variant computes the same bits)."""
    if fast is not None:
        if fast not in FC.FAST_VARIANTS:
            raise InvalidValue("unknown float kernel variant", rule=", ".join(FC.FAST_VARIANTS),
                               values={"fast": fast})
        _FLOAT["fast"] = fast
    if check is not None:
        if check not in FC.CHECK_VARIANTS:
            raise InvalidValue("unknown float kernel variant", rule=", ".join(FC.CHECK_VARIANTS),
                               values={"check": check})
        _FLOAT["check"] = check


_FUNCS: dict = {}


def _fn(name: str, smem: int = 0):
    """A kernel of the float module, looked up once (with its shared-memory limit set)."""
    import cupy as cp
    key = (name, cp.cuda.Device().id)
    f = _FUNCS.get(key)
    if f is None:
        f = runtime.module(FC.SOURCE).get_function(name)
        if smem > 48 * 1024:
            f.max_dynamic_shared_size_bytes = smem
        _FUNCS[key] = f
    return f


def _meta(x):
    """(shape, dtype) of an argument without moving it: GPU arrays are taken in (zero-copy), others read as numpy."""
    if intake.is_gpu_array(x):
        it = intake.intake(x)
        return it, it.shape, it.dtype
    arr = np.asarray(x)
    return arr, arr.shape, arr.dtype


def matmul(a, b, c=None, *, cpu="sapphirerapids", method: str = "auto", threads: int | None = None):
    """:func:`systolic.amx.matmul` on the GPU (``method``: only ``"auto"``; ``threads`` is checked, then unused)."""
    if _INT8["fast"]:
        out = _int8_fast(a, b, c, cpu, method, threads)
        if out is not None:
            return out
    from ..amx.gemm import check_arguments, count_tmuls
    a_, a_shape, a_dt = _meta(a)
    b_, b_shape, b_dt = _meta(b)
    c_ = None
    c_meta = None
    if c is not None:
        c_, c_shape, c_dt = _meta(c)
        c_meta = (c_shape, c_dt)
    mn, _model, integer, cdt = check_arguments(a_shape, a_dt, b_shape, b_dt, c_meta, cpu, method, threads)
    if method != "auto":
        raise InvalidValue("the CUDA backend runs the fast path only", rule="backend='cuda' takes method='auto' "
                           "(method='numpy', 'instructions' and 'spec' are CPU methods: use backend='cpu')",
                           values={"method": method})
    cp = runtime.require()
    ia = a_ if isinstance(a_, intake.Intake) else intake.intake(a_, "a")
    ib = b_ if isinstance(b_, intake.Intake) else intake.intake(b_, "b")
    ic = None if c is None else (c_ if isinstance(c_, intake.Intake) else intake.intake(c_, "c"))
    kind = intake.result_kind(ia, ib, ic)
    M, K = a_shape
    N = b_shape[1]
    per = 4 if integer else 2
    kp = -(-K // per) * per
    cin = None if ic is None else ic.data           # None: the kernels read C as zeros (no memset, no pass)
    if M == 0 or N == 0 or kp == 0:
        c0 = cp.zeros((M, N), dtype=cdt) if cin is None else cin.copy()
        return intake.give_back(c0, kind)          # no TMUL runs: C untouched (no DAZ either)
    count_tmuls(mn, M, N, kp // per, path="cuda")              # the same TMULs as the CPU path counts
    if integer:
        out = _int8(cp, ia, ib, cin, M, N, K)
    else:
        out = _float(cp, mn, ia, ib, None if cin is None else cin.view(cp.uint32), M, N, K).view(cp.float32)
    return intake.give_back(out, kind)


# ------------------------------------------------------------------------------------------ int8, cached launch path
# The in-place intake (systolic.gpu.intake.int8_in_place) with the AMX engine's argument checks: torch / CuPy
# operands it can read through raw pointers run from a cached int_gemm.Plan, every other call the general path.

def _int8_plan(M, K, N, da, db, c_meta, cpu, method, threads, b_layout):
    """Check the arguments as the CPU path does (typed errors) and build the launch plan; None: general path."""
    from ..amx.gemm import check_arguments
    mn, _model, integer, _cdt = check_arguments((M, K), da, (K, N), db, c_meta, cpu, method, threads)
    if method != "auto" or not integer:
        return None                                  # the general path raises / runs the float kernels
    plan = intake.int8_plan(M, K, N, da, db, c_meta is not None, b_layout)
    if plan is not None:
        plan.tmuls = (mn, M, N, -(-K // 4))          # what count_tmuls records per call (as the CPU path)
    return plan


def _count(plan) -> None:
    if counters.active():
        from ..amx.gemm import count_tmuls
        count_tmuls(*plan.tmuls, path="cuda")


def _int8_fast(a, b, c, cpu, method, threads):
    """One int8 GEMM through a cached plan (TMULs counted), or None when the call does not fit (then the general
    path runs)."""
    if not _INT8["fast"]:
        return None
    got = intake.int8_in_place(a, b, c, ("amx", cpu, method, threads),
                               lambda M, K, N, da, db, cm, lb: _int8_plan(M, K, N, da, db, cm, cpu, method, threads,
                                                                         lb))
    if got is None:
        return None
    out, plan = got
    _count(plan)
    return out


# ------------------------------------------------------------------------------------------ int8

def _int8(cp, ia, ib, cin, M, N, K):
    return int_gemm.gemm(cp, ia.data, ib.data, cin, ia.dtype == np.int8, ib.dtype == np.int8)


# ------------------------------------------------------------------------------------------ bf16 / fp16

def _min_exponent(key: int) -> int | None:
    """gemm._min_exponent from the kernels' minimum of (bits & exp) - 2^23 (0xFFFFFFFF: nothing seen)."""
    if key >= 0x7F000000:
        return None
    return (key >> 23) + 1


def _ftz_possible(ka: int, kb: int, kc: int, mn: str) -> bool:
    """systolic.amx.gemm._ftz_possible on the exponent minima the conversion kernels found."""
    from ..amx.gemm import ftz_possible_from_exponents
    return ftz_possible_from_exponents(_min_exponent(ka), _min_exponent(kb), _min_exponent(kc), mn)


def _convert(cp, mn, a16, b16, M, N, K, BM, BN):
    """A (M x K) and B (K x N) 16-bit patterns -> their fp32 bit patterns (amx_float_cuda's convert kernels), A
    transposed (Kpad x Mp) and B (Kpad x Np), zeros outside (whole dword pairs, BM / BN tiles); per row of A /
    column of B a flag for inf / NaN, and the smallest exponent keys seen (stat[0], stat[1])."""
    kp = K + (K & 1)                                 # whole dwords; the pad element is a zero
    Kpad = -(-kp // 32) * 32
    Mp, Np = -(-M // BM) * BM, -(-N // BN) * BN
    at = cp.empty((Kpad, Mp), dtype=cp.uint32)
    b32 = cp.empty((Kpad, Np), dtype=cp.uint32)
    bad_r = cp.zeros(M, dtype=cp.int32)
    bad_c = cp.zeros(N, dtype=cp.int32)
    stat = cp.full(3, 0xFFFFFFFF, dtype=cp.uint32)
    sfx = "bf16" if mn == "tdpbf16ps" else "fp16"
    _fn("convert_a_" + sfx)((Kpad // 32, Mp // 32), (32, 8), (a16, at, np.int32(M), np.int32(K), np.int32(Mp),
                                                              np.int32(Kpad), bad_r, stat[0:1]))
    _fn("convert_b_" + sfx)((Np // 32, Kpad // 32), (32, 8), (b16, b32, np.int32(K), np.int32(N), np.int32(Np),
                                                              np.int32(Kpad), bad_c, stat[1:2]))
    return at, b32, bad_r, bad_c, stat, kp // 2, Mp, Np


def _float(cp, mn, ia, ib, cin32, M, N, K):
    check_needed_variant = _FLOAT["check"]
    fast_variant = _FLOAT["fast"]
    # pad M, N to the larger tiles of the two variants so either may run
    BM = max(FC.VARIANTS[fast_variant][0], FC.VARIANTS[check_needed_variant][0])
    BN = max(FC.VARIANTS[fast_variant][1], FC.VARIANTS[check_needed_variant][1])
    at, b32, bad_r, bad_c, stat, K2, Mp, Np = _convert(cp, mn, ia.data, ib.data, M, N, K, BM, BN)
    if cin32 is not None:
        _fn("scan_c")((min(1024, -(-M * N // 256)),), (256,), (cin32, np.int64(M * N), stat[2:3]))
    else:
        cin32 = _NULL
    # one synchronisation for everything the host decides from: the exponent minima (which kernel) and how many
    # rows / columns hold an inf or NaN (whether the exact kernel runs after)
    ka, kb, kc, n_rows, n_cols = (int(x) for x in cp.concatenate(
        [stat, cp.count_nonzero(bad_r).reshape(1).astype(cp.uint32),
         cp.count_nonzero(bad_c).reshape(1).astype(cp.uint32)]).get())
    check = _ftz_possible(ka, kb, kc, mn)
    variant = check_needed_variant if check else fast_variant
    BMv, BNv, threads = FC.VARIANTS[variant]
    smem = FC.smem_bytes(variant)
    kern = _fn(f"chain_{variant}_{'check' if check else 'fast'}", smem)
    out = cp.empty((M, N), dtype=cp.uint32)
    kern((Np // BNv, Mp // BMv), (threads,), (at, b32, cin32, out, np.int32(M), np.int32(N), np.int32(Mp),
                                              np.int32(Np), np.int32(K2)), shared_mem=smem)
    if n_rows == 0 and n_cols == 0:
        return out
    rows = cp.nonzero(bad_r)[0].astype(cp.int32)
    cols = cp.nonzero(bad_c)[0].astype(cp.int32)
    exact = _fn("amx_exact")
    for rs, cs in ((rows, cp.arange(N, dtype=cp.int32)), (cp.arange(M, dtype=cp.int32), cols)):
        n = int(rs.size) * int(cs.size)
        if n:
            exact((-(-n // 128),), (128,), (at, b32, cin32, out, rs, np.int32(rs.size), cs, np.int32(cs.size),
                                            np.int32(Mp), np.int32(Np), np.int32(N), np.int32(K2), np.int32(KT)))
    return out


def exact_matmul(a, b, c=None, *, cpu="sapphirerapids"):
    """The same GEMM with the exact (x86-rules-at-every-step) kernel on every output: slow; a second,
    independent GPU path that the tests compare with the fast one and with the CPU."""
    from ..amx.gemm import check_arguments
    cp = runtime.require()
    ia, ib = intake.intake(a, "a"), intake.intake(b, "b")
    ic = None if c is None else intake.intake(c, "c")
    mn, _m, integer, cdt = check_arguments(ia.shape, ia.dtype, ib.shape, ib.dtype,
                                           None if ic is None else (ic.shape, ic.dtype), cpu, "auto", None)
    if integer:
        raise InvalidValue("exact_matmul is the float path's reference", values={"a": str(ia.dtype)})
    M, K = ia.shape
    N = ib.shape[1]
    cin = cp.zeros((M, N), cp.float32) if ic is None else ic.data
    if M == 0 or N == 0 or K == 0:
        return intake.give_back(cin.copy(), intake.result_kind(ia, ib, ic))
    at, b32, _r, _c, _s, K2, Mp, Np = _convert(cp, mn, ia.data, ib.data, M, N, K, 128, 128)
    out = cp.empty((M, N), dtype=cp.uint32)
    rs, cs = cp.arange(M, dtype=cp.int32), cp.arange(N, dtype=cp.int32)
    n = M * N
    _fn("amx_exact")((-(-n // 128),), (128,), (at, b32, cin.view(cp.uint32), out, rs, np.int32(M), cs,
                                                           np.int32(N), np.int32(Mp), np.int32(Np), np.int32(N),
                                                           np.int32(K2), np.int32(KT)))
    return intake.give_back(out.view(cp.float32), intake.result_kind(ia, ib, ic))
