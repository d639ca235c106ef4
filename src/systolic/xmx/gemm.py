"""A whole GEMM as a sequence of DPAS tiles: :func:`matmul`.

The GEMM is tiled the way IGC builds joint_matrix shapes (REFERENCE.md
section 2): output tiles of RC = 8 rows by N = exec-size columns, each
computed by a chain of DPAS of depth K = 8 * OPS_PER_CHAN, the fp32 result of
one DPAS being the Src0 of the next. Every output element depends only on its
row of A, its column of B and its C, and DPAS channels are independent, so the
tiles are computed all at once (vectorised over M x N) while keeping, per
element, exactly the order of operations of the DPAS chain. The result is
bit-identical to composing :func:`systolic.xmx.dpas` calls (tested).

K is zero-padded to a multiple of 8 * OPS_PER_CHAN, as a kernel's K tail
would be padded; padding products are +0 (they can turn a -0 result into +0,
exactly as the padded DPAS would).
"""

from __future__ import annotations

import os

import numpy as np

from .. import backend_registry, counters, fpenv
from .. import types as T
from ..errors import InvalidValue, UnsupportedCombination
from ..host import out_of_memory, refuse_beyond_memory
from ..vocabulary import renamed
from ..numerics.formats import FP32
from ..numerics.rounding import as_exact_array, to_bits
from . import kernels as KN
from . import models as M
from . import pack as PK
from .platform import Platform, get_platform
from .rules import ops_per_chan, precision_class

__all__ = ["matmul", "precision_of"]

_DTYPE_PRECISION = {"s8": "s8", "u8": "u8", "s4": "s4", "u4": "u4", "s2": "s2", "u2": "u2", "bf16": "bf16",
                    "fp16": "fp16", "bf8": "bf8", "hf8": "hf8", "e2m1": "e2m1"}


def precision_of(x: np.ndarray, precision: str | None = None) -> str:
    """The DPAS precision of an array: from its (ml_dtypes) dtype; float32 needs ``precision="tf32"``."""
    dt = np.asarray(x).dtype
    if precision is not None:
        p = T.get(precision).name
        if p == "tf32" and dt not in (np.float32, np.float64):
            raise InvalidValue("tf32 inputs must be float32 arrays", values={"dtype": str(dt)})
        return p
    try:
        name = T.from_dtype(dt).name
    except InvalidValue:
        name = None
    if name not in _DTYPE_PRECISION:
        raise InvalidValue(f"no DPAS precision for dtype {dt}",
                           rule="inputs are int2/uint2/int4/uint4/int8/uint8/bfloat16/float16/float8_e5m2/"
                                "float8_e4m3fn/float4_e2m1fn arrays, or float32 with precision='tf32'",
                           values={"dtype": str(dt)})
    return _DTYPE_PRECISION[name]


def matmul(a, b, c=None, device: str | Platform | None = None, model="stage", precision: str | None = None,
           *, row_block: int | None = None, backend: str = "auto", **renamed_keywords):
    """D = C + A @ B computed by DPAS tiles on GPU platform ``device`` (default: pvc) with the numerics ``model``.

    ``a`` (M x K) is Src2, ``b`` (K x N) is Src1; precisions come from their dtypes (ml_dtypes int2/int4/int8,
    uint*, bfloat16, float16, float8_e5m2, float8_e4m3fn, float4_e2m1fn; ``precision="tf32"`` for float32).
    Integer GEMMs return int32 (wrapped modulo 2**32), float GEMMs float32 (the fp32 accumulator).
    ``c`` (M x N) is the initial accumulator (int32 or float32 values), default zero.

    ``backend``: ``"auto"`` (default: cuda when an input lives on a GPU, else cpu), ``"cpu"``, or ``"cuda"``
    (the kernels of :mod:`systolic.gpu.xmx_kernels`: same arguments, same errors, same bits; inputs may be numpy
    or GPU arrays, the result comes back as the kind of the first GPU input). See docs/gpu.md.
    ``platform=`` is the older name of ``device=`` (DeprecationWarning).
    """
    if renamed_keywords:                 # platform=: the older name of device= (systolic.vocabulary)
        device = renamed(renamed_keywords, {"platform": "device"}, "xmx.matmul", device=device)["device"]
    platform = "pvc" if device is None else device
    if backend != "cpu":
        where = backend_registry.resolve(backend, a, b, c)  # loads no provider for numpy inputs
        if where != "cpu":               # a provider above the engines (systolic.gpu) registered its kernels
            return backend_registry.lookup("xmx.matmul", where)(a, b, c, platform=platform, model=model,
                                                                precision=precision, row_block=row_block)
    return _matmul_cpu(a, b, c, platform, model, precision, row_block)


@fpenv.guarded  # the CPU path: its float arithmetic needs MXCSR at the IEEE defaults (the CUDA backend guards its own)
def _matmul_cpu(a, b, c, platform, model, precision, row_block):
    a = np.asarray(a)
    b = np.asarray(b)
    P, p2, p1, m, k, n, ops, kd, kp, mdl, is_int = plan(a, b, platform, model, precision, row_block)
    # a lower bound of the path's peak (measured with tracemalloc on default calls, every model): integers (on
    # jit.int_gemm or AMX-INT8) A and B as int16 (int_gemm's packed copies), the int32 result;
    # floats 8 per A/B element and 16 per result (the fp32 values, the float64 C or accumulators; the compiled
    # path fixes unproven elements in its own result array, so measured peaks are 20-35 bytes per result)
    need = 2 * m * kp + 2 * kp * n + 4 * m * n if is_int else 8 * (m * kp + kp * n) + 16 * m * n
    refuse_beyond_memory("xmx.matmul", m, k, n, need)
    try:
        return _matmul_cpu_body(a, b, c, P, p2, p1, m, k, n, ops, kd, kp, mdl, is_int, row_block)
    except MemoryError as e:
        raise out_of_memory("xmx.matmul", m, k, n, e) from None


def _matmul_cpu_body(a, b, c, P, p2, p1, m, k, n, ops, kd, kp, mdl, is_int, row_block):
    def tally():       # once every argument has passed its checks: a call that raises issued no DPAS
        counters.count("dpas", -(-m // 8) * -(-n // P.exec_size) * (kp // kd), op="dpas", platform=P.name, a=p2,
                       b=p1, sd=8, rc=8, exec=P.exec_size, dst="int32" if is_int else "fp32", via="matmul")

    if is_int:
        av, bv = _int_values(a, p2), _int_values(b, p1)
        cv = None if c is None else check_int_c(c, m, n)
        tally()
        if m == 0 or n == 0:
            return np.zeros((m, n), dtype=np.int32)
        out = _int_gemm_on_amx(av, bv, cv, p2, p1)
        counters.note_path(f"xmx.matmul {p2}x{p1}", "emulator" if out is None else "amx-native")
        return _int_gemm(av, bv, cv, p2, p1) if out is None else out

    av = _float_values(a, p2, mdl.flushes(p2, P))
    bv = _float_values(b, p1, mdl.flushes(p1, P))
    if kp != k:
        av = np.concatenate([av, np.zeros((m, kp - k), dtype=av.dtype)], axis=1)
        bv = np.concatenate([bv, np.zeros((kp - k, n), dtype=bv.dtype)], axis=0)
    with np.errstate(invalid="ignore"):     # a signalling NaN in C widens to a NaN: intended, no warning
        cv = None if c is None else check_float_c(c, m, n).astype(np.float64)
    tally()
    if m == 0 or n == 0:
        return np.zeros((m, n), dtype=np.float32) if cv is None else cv.astype(np.float32)
    if mdl.name == "block":       # the compiled block kernel where it applies (systolic.xmx.native_block)
        from . import native_block
        bits = native_block.gemm(av, bv, cv, kd, mdl)
        counters.note_path(f"xmx.matmul {p2}x{p1}", "emulator" if bits is None else "jit-block")
        if bits is not None:
            return bits.view(np.float32)
    if row_block is None:  # bounds the numpy path's temporaries; the compiled path takes everything at once
        terms = kd if mdl.name in ("exact", "block") else ops + 1
        row_block = m if mdl.name in ("stage", "sequential") else max(8, (1 << 21) // max(1, n * terms))
    if row_block >= m:     # one block: the result as float_mma returns it (no copy: 0.5-1 ms at 1024^2)
        return np.ascontiguousarray(KN.float_mma(av, bv, cv, ops_per_chan=ops, k_per_instr=kd, model=mdl,
                                                 sig_bits=(_sig_bits(p2), _sig_bits(p1))),
                                    dtype=np.uint32).view(np.float32)
    out = np.empty((m, n), dtype=np.uint32)
    for r0 in range(0, m, row_block):
        r1 = min(m, r0 + row_block)
        out[r0:r1] = KN.float_mma(av[r0:r1], bv, None if cv is None else cv[r0:r1], ops_per_chan=ops,
                                  k_per_instr=kd, model=mdl, sig_bits=(_sig_bits(p2), _sig_bits(p1)))
    return out.view(np.float32)


def plan(a, b, platform, model, precision, row_block):
    """Validate a GEMM's operands and arguments (shapes and dtypes only: ``a``/``b`` may be any objects with
    ``ndim``, ``shape`` and a numpy ``dtype``) in the order :func:`matmul` checks them; returns
    ``(platform, precision of A, precision of B, m, k, n, ops_per_chan, K per DPAS, padded K, model, is_int)``.
    Shared by the CPU path and the CUDA backend, so that both raise the same errors."""
    P = get_platform(platform)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise InvalidValue("matmul needs A (M x K) and B (K x N)",
                           values={"a": tuple(a.shape), "b": tuple(b.shape)})
    p2 = precision_of(np.empty(0, dtype=a.dtype), precision)
    p1 = precision_of(np.empty(0, dtype=b.dtype), precision)
    for p in (p1, p2):
        if not P.supports(p):
            raise UnsupportedCombination(f"{P.name} DPAS does not take {p}",
                                         rule=f"{P.name} DPAS precisions: {sorted(P.precisions)}",
                                         values={"precision": p, "platform": P.name})
    if precision_class(p1) != precision_class(p2):
        raise UnsupportedCombination(f"DPAS cannot mix {p2} (A) with {p1} (B)",
                                     rule="visa-DPAS.md: Src1 and Src2 precisions of one kind",
                                     values={"a": p2, "b": p1})
    m, k = (int(x) for x in a.shape)
    n = int(b.shape[1])
    if row_block is not None and (isinstance(row_block, (bool, np.bool_))
                                  or not isinstance(row_block, (int, np.integer)) or row_block < 1):
        raise InvalidValue("row_block must be a positive integer", values={"row_block": row_block})
    ops = ops_per_chan(p1, p2)
    kd = 8 * ops
    kp = -(-k // kd) * kd if k else kd
    mdl = M.get_model(model, P)
    is_int = precision_class(p1) == "int"
    return P, p2, p1, m, k, n, ops, kd, kp, mdl, is_int


def check_int_c(c, m, n) -> np.ndarray:
    """C of an integer GEMM: M x N integers that fit the 32-bit accumulator (D or UD)."""
    cv = _check_c(c, m, n)
    if cv.dtype.kind not in "iu":
        raise InvalidValue("an integer GEMM needs an integer C", values={"dtype": str(cv.dtype)})
    if cv.size and (int(cv.min()) < -2 ** 31 or int(cv.max()) > 2 ** 32 - 1):
        raise InvalidValue("C does not fit the 32-bit accumulator",
                           rule="visa-DPAS.md: Src0 is D or UD (32-bit)",
                           values={"min": int(cv.min()), "max": int(cv.max())})
    return cv


def _f64_holds(dtype: np.dtype) -> bool:
    """Whether float64 holds every value of ``dtype`` exactly (floats up to 64 bits, ml_dtypes, bools, ints up to
    32 bits): then comparing in float64 is an exact test."""
    k = dtype.kind
    return (k == "f" and dtype.itemsize <= 8) or k in "bV" or (k in "iu" and dtype.itemsize <= 4)


def check_float_c(c, m, n) -> np.ndarray:
    """C of a float GEMM as float32: M x N values that are exact fp32 values (NaN allowed)."""
    cv = _check_c(c, m, n)
    if cv.dtype != np.float32 and not _f64_holds(cv.dtype):
        # int64/uint64, long double, Python objects: float64 would round both sides of a comparison (2**60 + 1
        # equals its fp32 rounding 2**60 in float64). A value is an fp32 value iff rounding it down and up agree.
        lo, hi = to_bits(cv, FP32, "rdn"), to_bits(cv, FP32, "rup")
        same = lo == hi
        if not same.all():
            raise InvalidValue("C values must be exact fp32 values (the accumulator is fp32)",
                               rule="visa-DPAS.md: Src0 is F (or BF/HF)",
                               values={"value": str(cv.reshape(-1)[int(np.flatnonzero(~same.reshape(-1))[0])])})
        cv = lo.view(np.float32)
    elif cv.dtype != np.float32:
        with np.errstate(all="ignore"):
            c32 = cv.astype(np.float32)
        same = (c32.astype(np.float64) == cv.astype(np.float64)) | (np.isnan(c32) & np.isnan(cv.astype(
            np.float64)))
        if not same.all():
            raise InvalidValue("C values must be exact fp32 values (the accumulator is fp32)",
                               rule="visa-DPAS.md: Src0 is F (or BF/HF)",
                               values={"value": float(np.asarray(cv, dtype=np.float64)[~same].ravel()[0])})
        cv = c32
    return cv


def _int_gemm(a: np.ndarray, b: np.ndarray, c, pa: str, pb: str) -> np.ndarray:
    """(C + A @ B) mod 2**32 for integer precisions, exactly.

    Unsigned operands are centred first (a = a' + 2**(bits-1)), so that every product of the centred values
    is at most 2**14 in magnitude and one float32 BLAS pass over K <= 1024 stays exact; the centring is undone
    with exact int64 row and column sums: sum_k (a'+oa)(b'+ob) = a'.b' + ob*rowsum(a') + oa*colsum(b') + K*oa*ob.
    """
    from ..jit import int_gemm
    if not os.environ.get("SYSTOLIC_NO_NATIVE") and int_gemm.available():
        # every element fits 16 bits: PMADDWD pairs, int32 lanes wrapping modulo 2**32 (systolic.jit.int_gemm)
        return int_gemm.gemm(a, b, c)
    ta, tb = T.get(pa), T.get(pb)
    oa = 0 if ta.signed else 1 << (ta.bits - 1)
    ob = 0 if tb.signed else 1 << (tb.bits - 1)
    if oa:
        a = a.astype(np.int16) - oa
    if ob:
        b = b.astype(np.int16) - ob
    bound = lambda t: 1 << (t.bits - 1)  # noqa: E731  (largest magnitude after centring)
    out = KN.int_mma(a, b, c, bound_a=bound(ta), bound_b=bound(tb)).astype(np.int64)
    k = a.shape[1]
    if ob:
        out += ob * a.sum(axis=1, dtype=np.int64)[:, None]
    if oa:
        out += oa * b.sum(axis=0, dtype=np.int64)[None, :]
    if oa and ob:
        out += k * oa * ob
    return out.astype(np.uint32).view(np.int32)


#: (A signed, B signed) -> the AMX-INT8 instruction multiplying int8/uint8 elements of those signs
_AMX_INT8 = {(True, True): "tdpbssd", (True, False): "tdpbsud", (False, True): "tdpbusd", (False, False): "tdpbuud"}


def _int_gemm_on_amx(a: np.ndarray, b: np.ndarray, c, pa: str, pb: str):
    """(C + A @ B) mod 2**32 on the host's AMX-INT8 unit (systolic.amx.native_matmul), or None where it cannot run.

    Bit-identical for every integer DPAS precision pair: the model is the exact sum modulo 2**32 (:func:`_int_gemm`),
    every int2/int4/int8 (uint2/uint4/uint8) element is exactly an int8 (uint8) value, and TDPB[SU][SU]D sums the
    exact products of int8/uint8 elements into int32 with wrap-around, i.e. modulo 2**32 in any order. So no
    precision mix is excluded (the u4/s4/s2 cases only widen their elements). The gate (host, Linux, self-check,
    SYSTOLIC_NATIVE) is amx.matmul's."""
    from ..amx import native_matmul
    ta, tb = T.get(pa), T.get(pb)
    mn = _AMX_INT8[(bool(ta.signed), bool(tb.signed))]
    if a.shape[1] == 0 or not native_matmul.usable(mn, "sapphirerapids")[0]:
        return None
    a8 = a.astype(np.int8 if ta.signed else np.uint8, copy=False)
    b8 = b.astype(np.int8 if tb.signed else np.uint8, copy=False)
    if c is None:
        c32 = np.zeros((a.shape[0], b.shape[1]), np.int32)
    else:
        c32 = np.asarray(c).astype(np.int64).astype(np.uint32).view(np.int32)   # D or UD: its 32 bits
    out, _ = native_matmul.run(mn, np.ascontiguousarray(a8), np.ascontiguousarray(b8), c32, None)
    return out


def _sig_bits(p: str) -> int:
    """Significant bits of the precision's values (a true bound the fast kernel's exactness test uses)."""
    return T.get(p).fmt.man_bits + 1


def _tf32_rne(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to tf32 (10 fraction bits) to nearest even, as float32 (equal to
    ``pack.element_bits(x, "tf32")`` on every finite and infinite value, tested; NaN stays a NaN).

    Adding 0xFFF plus the kept LSB to the bit pattern and clearing the 13 dropped bits is RNE on the magnitude
    (a carry into the exponent is the correct rounding up, to infinity past the largest finite value); the
    subnormals share the same bit positions, so they round alike."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = (u + np.uint32(0xFFF) + ((u >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
    r = np.where((u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000), np.uint32(0x7FC00000), r)
    return r.astype(np.uint32).view(np.float32)


def _check_c(c, m, n) -> np.ndarray:
    cv = as_exact_array(c)  # a list of floats and big ints stays exact (numpy would make it float64)
    if cv.shape != (m, n):
        raise InvalidValue("C must be M x N", values={"c": cv.shape, "expected": (m, n)})
    return cv


def _int_values(x: np.ndarray, p: str) -> np.ndarray:
    """Integer elements as a numpy integer array (the array itself when its dtype is the precision's)."""
    if x.dtype in (np.int8, np.uint8) and x.dtype == T.get(p).dtype:
        return x
    return PK.decode(PK.element_bits(x, p), p)


def _float_values(x: np.ndarray, p: str, flush: bool) -> np.ndarray:
    """Exact values of the elements as float32 (every DPAS input format fits: at most 11 significand bits and
    8 exponent bits; tf32: RNE from float32), denormals flushed to signed zeros when the rule says so."""
    t = T.get(p)
    if p in ("bf16", "fp16") and x.dtype == t.dtype and x.size >= 1 << 16:  # compiled, threaded (xmx/native.py)
        from . import native as NT
        v = NT.widen(x, p, float(t.fmt.min_normal) if flush else 0.0)
        if v is not None:
            return v
    if p == "tf32" and x.dtype == np.float32:
        v = _tf32_rne(x)
    elif p == "tf32":
        v = PK.element_bits(x, p).view(np.float32)
    elif x.dtype == t.dtype:
        with np.errstate(invalid="ignore"):
            v = x.astype(np.float32)  # ml_dtypes widening is exact
    else:
        v = PK.decode(PK.element_bits(x, p), p).astype(np.float32)
    if flush:
        tiny = (v != 0) & (np.abs(v) < np.float32(t.fmt.min_normal))
        if tiny.any():
            v = np.where(tiny, np.copysign(np.float32(0), v), v)
    return v
