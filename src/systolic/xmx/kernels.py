"""Vectorised fast paths for DPAS, bit-identical to the spec path (:mod:`systolic.xmx.dpas`).

Integer DPAS: the exact sum modulo 2**32. The products are computed by a
float32 (or float64) BLAS matmul over K chunks small enough that every partial
sum is an integer below 2**24 (resp. 2**53), hence exact in any summation
order; chunks are added in int64 and wrapped.

Float DPAS: every product of two DPAS inputs is exact in binary64 (at most
11 + 11 significand bits, exponents within range), as is every fp32
accumulator. One model step "round the exact sum of a few binary64 terms to
fp32 once" is done without big numbers:

1. a cascade of error-free TwoSum additions turns the terms into ``s`` plus
   error terms; the error terms are summed with a second cascade, and when
   that second cascade is exact too (checked per element) the exact total is
   ``hi + lo`` with ``(hi, lo) = TwoSum(s, E)``, ``hi = RN53(total)``;
2. ``hi`` is replaced by its round-to-odd neighbour when ``lo != 0`` (the
   neighbour toward ``lo`` when ``hi``'s last bit is even), which is
   ``RO53(total)``; since 53 >= 24 + 2, ``RN24(RO53(x)) = RN24(x)`` (Boldo &
   Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms
   using rounding to odd", IEEE TC 2008), including fp32 subnormals and
   overflow;
3. elements where the second cascade was inexact (three-level cancellation),
   or where an FTZ result rule needs the exact value, fall back to the scalar
   spec function :func:`systolic.xmx.models.round_sum_fp32` (exact Fractions).

Special values follow the models' IEEE rules by construction: the naive
binary64 sum of the terms is NaN/inf exactly when the exact rules give
NaN/inf (finite terms cannot overflow binary64).
"""

from __future__ import annotations

import numpy as np

from .. import counters, fpenv
from .. import types as T
from ..jit import workers
from ..vocabulary import renamed
from . import models as M
from . import pack as PK
from .grf import GRF
from .platform import Platform
from .checks import validate
from .rules import DpasShape

__all__ = ["two_sum", "round_sum_fp32", "round_block_fp32", "int_mma", "float_mma", "dpas_fast",
           "acc_bits_to_type", "fp32_bits_to_value"]

_F32_MIN_NORMAL = 2.0 ** -126


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: s = RN(a + b) and the exact error e, a + b = s + e (binary64, no overflow)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _all_negative_zero(terms) -> np.ndarray:
    m = np.ones(np.shape(terms[0]), dtype=bool)
    for t in terms:
        m &= (t == 0) & np.signbit(t)
    return m


def _specials(naive: np.ndarray, model: M.NumericsModel) -> tuple[np.ndarray, np.ndarray]:
    special = ~np.isfinite(naive)
    bits = np.where(np.isnan(naive), np.uint32(model.nan_bits),
                    np.where(naive > 0, np.uint32(0x7F800000), np.uint32(0xFF800000))).astype(np.uint32)
    return special, bits


def _fallback(out: np.ndarray, mask: np.ndarray, terms, fn, model) -> None:
    idx = np.nonzero(mask)
    if idx[0].size == 0:
        return
    cols = [np.asarray(t)[idx] for t in terms]
    out[idx] = [fn([float(c[j]) for c in cols], model) for j in range(idx[0].size)]


def round_sum_fp32(terms: list[np.ndarray], model: M.NumericsModel = M.stage) -> np.ndarray:
    """fp32 bits (uint32) of the exact sum of the binary64 ``terms`` rounded once to nearest even, per element.

    Equal to :func:`systolic.xmx.models.round_sum_fp32` element by element (property-tested).
    """
    terms = [np.asarray(t, dtype=np.float64) for t in terms]
    if len(terms) == 1 and not model.ftz_result:
        # one exact term: a single RNE conversion (-0 stays -0, overflow -> inf); NaN -> the model's NaN
        with np.errstate(over="ignore", invalid="ignore"):
            out = terms[0].astype(np.float32).view(np.uint32)
        return np.where(np.isnan(terms[0]), np.uint32(model.nan_bits), out).astype(np.uint32)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = terms[0]
        for t in terms[1:]:
            naive = naive + t
        special, sbits = _specials(naive, model)
        hard = np.zeros(naive.shape, dtype=bool)
        if len(terms) == 1:
            hi, lo = terms[0], np.zeros_like(terms[0])
        else:
            s = terms[0]
            errs = []
            for t in terms[1:]:
                s, e = two_sum(s, t)
                errs.append(e)
            E = errs[0]
            for e in errs[1:]:
                E, e2 = two_sum(E, e)
                hard |= e2 != 0
            hi, lo = two_sum(s, E)
        hb = hi.view(np.uint64)
        odd_fix = (lo != 0) & ((hb & np.uint64(1)) == 0)
        toward = np.where(lo > 0, np.inf, -np.inf)
        y = np.where(odd_fix, np.nextafter(hi, toward), hi)
        r = y.astype(np.float32)
    out = r.view(np.uint32).copy()
    # an exact zero total: -0 only if every term is -0 (IEEE 754 6.3)
    zero = (hi == 0) & (lo == 0)
    out = np.where(zero, np.where(_all_negative_zero(terms), np.uint32(0x80000000), np.uint32(0)), out)
    if model.ftz_result:
        hard |= np.abs(y) < 2 * _F32_MIN_NORMAL
    out = np.where(special, sbits, out).astype(np.uint32)
    _fallback(out, hard & ~special, terms, M.round_sum_fp32, model)
    return out


def round_block_fp32(terms: list[np.ndarray], model: M.NumericsModel) -> np.ndarray:
    """One block-model step per element: align to the largest exponent, truncate to F bits, sum, round once.

    Equal to ``models._block_sum_fp32`` (property-tested). With F <= 44 and at most 65 terms, the aligned
    integers and their sum stay below 2**52, so binary64 holds them exactly.
    """
    terms = [np.asarray(t, dtype=np.float64) for t in terms]
    F = model.fraction_bits
    with np.errstate(over="ignore", invalid="ignore"):
        naive = terms[0]
        for t in terms[1:]:
            naive = naive + t
        special, sbits = _specials(naive, model)
        e_max = np.full(naive.shape, -(1 << 20), dtype=np.int64)
        for t in terms:
            ex = np.frexp(np.where(np.isfinite(t), t, 0.0))[1].astype(np.int64) - 1
            e_max = np.where((t != 0) & np.isfinite(t), np.maximum(e_max, ex), e_max)
        scale = np.where(e_max > -(1 << 19), e_max - F, 0)
        N = np.zeros(naive.shape)
        for t in terms:
            N = N + np.trunc(np.ldexp(np.where(np.isfinite(t), t, 0.0), -scale))
        v = np.ldexp(N, scale)
        r = v.astype(np.float32)
    out = r.view(np.uint32).copy()
    zero = N == 0
    out = np.where(zero, np.where(_all_negative_zero(terms), np.uint32(0x80000000), np.uint32(0)), out)
    out = np.where(special, sbits, out).astype(np.uint32)
    if model.ftz_result:
        _fallback(out, (np.abs(v) < 2 * _F32_MIN_NORMAL) & ~special, terms, M._block_sum_fp32, model)
    return out


def fp32_bits_to_value(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32).astype(np.float64)


# ------------------------------------------------------------------ MMA on logical matrices

def int_mma(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, bound_a: int | None = None,
            bound_b: int | None = None) -> np.ndarray:
    """(C + A @ B) mod 2**32 as uint32, exactly; A (M x K) and B (K x N) integer arrays of small values, or
    stacks of them (leading batch dimensions broadcast as numpy.matmul's: one DPAS chain per batch entry).

    ``bound_a``/``bound_b``: the largest magnitude an element can have (the precision's range), which sizes the
    K chunks; measured from the data when not given.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    k = a.shape[-1]
    if bound_a is None:
        bound_a = int(np.abs(a.astype(np.int64)).max()) if a.size else 0
    if bound_b is None:
        bound_b = int(np.abs(b.astype(np.int64)).max()) if b.size else 0
    pmax = max(bound_a * bound_b, 1)
    # float32 is exact while every partial sum is an integer of magnitude <= 2**24 (any summation order)
    chunk = (1 << 24) // pmax
    if chunk >= 1:
        dt = np.float32
    else:
        chunk, dt = (1 << 53) // pmax, np.float64
    af, bf = a.astype(dt), b.astype(dt)
    acc = None
    for k0 in range(0, k, chunk):
        part = np.matmul(af[..., k0:k0 + chunk], bf[..., k0:k0 + chunk, :]).astype(np.int64)
        acc = part if acc is None else acc + part  # int64: at most 2**(63-24) chunks before overflow
    if acc is None:
        acc = np.matmul(af, bf).astype(np.int64)     # K == 0: zeros of the broadcast result shape
    if c is not None:
        acc = acc + (np.asarray(c).astype(np.int64) & 0xFFFFFFFF)
    return acc.astype(np.uint32)  # C conversion to an unsigned type: modulo 2**32


def float_mma(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, *, ops_per_chan: int, k_per_instr: int,
              model: M.NumericsModel, native: bool | str | None = None,
              sig_bits: tuple[int, int] = (24, 24)) -> np.ndarray:
    """fp32 bits (uint32, M x N) of C + A @ B under ``model``; A, B exact float64 values (flushing done).

    K is processed in K order: instructions of ``k_per_instr`` products, each made of systolic stages of
    ``ops_per_chan`` products; C (fp32 values, float64 array or None = +0) enters first and the fp32 result of
    one instruction is the C of the next (as a GEMM chains DPAS). ``native``: use the compiled kernels of
    :mod:`systolic.xmx.native` for "stage"/"sequential" (default: when available): the unchecked kernel, whose
    elements that :func:`systolic.xmx.native.fast_mma` cannot prove are recomputed by the per-operation checked
    kernel, whose flagged elements are recomputed here; ``native="checked"`` skips the unchecked kernel.
    ``sig_bits``: significant bits of A's and B's elements (a true bound; smaller proves more elements).
    """
    a = np.asarray(a)
    b = np.asarray(b)
    a = a if a.dtype in (np.float32, np.float64) else a.astype(np.float64)
    b = b if b.dtype in (np.float32, np.float64) else b.astype(np.float64)
    m, k = a.shape
    n = b.shape[1]
    acc = np.zeros((m, n)) if c is None else np.asarray(c, dtype=np.float64)
    step = ops_per_chan if model.name == "stage" else 1
    if native is None:
        native = model.name in ("stage", "sequential") and not model.ftz_result and k % step == 0
        if native and m * n < 64 and k < 4096:
            # a small output: the numpy chain costs ~0.1 ms per step of K, the first compiled call ~0.3 s of JIT;
            # numpy only while it is the cheaper one (the kernel not compiled yet and K short). Before, m * n < 64
            # always took numpy: a 1 x 65536 by 65536 x 1 bf16 GEMM spent 3.8 s in 32768 Python steps
            from . import native as NT
            native = NT.ready(step, k)
        if native:
            from . import native as NT
            native = NT.available()
    if native:
        from . import native as NT
        # C as the fp32 accumulator it is
        acc0 = np.zeros((m, n)) if c is None else fp32_bits_to_value(round_sum_fp32([acc], model))
        # the values are exact in float32 (DPAS formats), the kernels widen them to binary64 exactly
        with np.errstate(invalid="ignore"):  # NaN inputs (payloads are irrelevant: NaN results are re-done exactly)
            a32, b32 = a.astype(np.float32, copy=False), b.astype(np.float32, copy=False)
        fast = None
        if native != "checked":
            try:
                c_in = None if c is None else acc0
                if step == 1:  # one product per step: the model is a binary32 FMA chain (native.py)
                    fast = NT.fma32_mma(a32, b32, c_in)
                else:
                    fast = NT.fast_mma(a32, b32, c_in, step, sig_bits=sig_bits)
            except RuntimeError:  # the kernel failed to build here: the checked one is exact too
                fast = None
        if fast is None:
            res, flag = NT.stage_mma(a32, b32, acc0, step)
        else:
            res, flag = fast
            if flag.any():   # the kernels' own result arrays (writable): fixed in place, no copy
                res = np.asarray(res, dtype=np.float32)
                flag = _recheck(a32, b32, acc0, res, flag, step)
        bits = np.ascontiguousarray(res, dtype=np.float32).view(np.uint32)
        rows, cols = np.nonzero(flag) if flag.any() else (np.zeros(0, dtype=np.intp),) * 2
        # recompute flagged elements in chunks (bounded temporaries even when every element is flagged)
        chunk = max(1, (1 << 22) // max(1, k))
        for s0 in range(0, rows.size, chunk):
            r, cc = rows[s0:s0 + chunk], cols[s0:s0 + chunk]
            with np.errstate(invalid="ignore"):      # NaN inputs widen to NaN: the intended value, no warning
                ar = a[r].astype(np.float64)
                bc = b[:, cc].astype(np.float64)
            bits[r, cc] = _chain(lambda kk: ar[:, kk] * bc[kk], acc0[r, cc], k, ops_per_chan, k_per_instr, model)
        return bits

    a = a.astype(np.float64, copy=False)
    b = b.astype(np.float64, copy=False)

    def prod(kk):
        return a[:, kk, None] * b[None, kk, :]

    return _chain(prod, acc, k, ops_per_chan, k_per_instr, model)


def _recheck(a32, b32, acc0, res, flag, step, group: int = 1) -> np.ndarray:
    """Recompute the unproven elements of ``res`` with the TwoSum / round-to-odd kernel, in blocks of up to
    ``group`` rows by the columns flagged in them; returns the elements that kernel flags in turn (for the numpy
    path). One row per block: the flagged elements are scattered (fp16 1024^3: 169 in 160 rows), and a block
    computes every row x column pair of it (blocks of 64 rows did 60x the needed work: 45-80 ms there)."""
    from . import native as NT
    out = np.zeros_like(flag)
    urows = np.nonzero(flag.any(axis=1))[0]

    def block(q, g0):  # blocks write disjoint elements; the kernel runs without the GIL, blocks over threads
        rows = urows[g0:g0 + group]
        sub = flag[rows]
        cols = np.nonzero(sub.any(axis=0))[0]
        r2, f2 = NT.stage_mma(a32[rows], b32[:, cols], acc0[np.ix_(rows, cols)], step, robust=True, threads=1)
        blk = sub[:, cols]
        cur = res[np.ix_(rows, cols)]
        res[np.ix_(rows, cols)] = np.where(blk, r2, cur)
        out[np.ix_(rows, cols)] = blk & (f2 != 0)

    workers.run_jobs(block, list(range(0, urows.size, group)), workers.cpus())
    return out


def _chain(prod, acc, k, ops_per_chan, k_per_instr, model) -> np.ndarray:
    """The model's accumulation over K, vectorised over whatever shape ``prod(kk)`` and ``acc`` have."""
    bits = round_sum_fp32([acc], model)
    acc = fp32_bits_to_value(bits)
    with np.errstate(invalid="ignore", over="ignore"):
        if model.name == "stage":
            for k0 in range(0, k, ops_per_chan):
                bits = round_sum_fp32([acc] + [prod(kk) for kk in range(k0, min(k0 + ops_per_chan, k))], model)
                acc = fp32_bits_to_value(bits)
        elif model.name == "sequential":
            for kk in range(k):
                bits = round_sum_fp32([acc, prod(kk)], model)
                acc = fp32_bits_to_value(bits)
        elif model.name == "exact":
            for k0 in range(0, k, k_per_instr):
                bits = round_sum_fp32([acc] + [prod(kk) for kk in range(k0, min(k0 + k_per_instr, k))], model)
                acc = fp32_bits_to_value(bits)
        else:  # block
            L = model.block_size
            for k0 in range(0, k, k_per_instr):
                k1 = min(k0 + k_per_instr, k)
                for b0 in range(k0, k1, L):
                    bits = round_block_fp32([acc] + [prod(kk) for kk in range(b0, min(b0 + L, k1))], model)
                    acc = fp32_bits_to_value(bits)
    return np.asarray(bits, dtype=np.uint32)


def acc_bits_to_type(bits32: np.ndarray, t: str) -> np.ndarray:
    """fp32 accumulator bits -> Dst type bits (fp32 as is; bf16/fp16 RNE, NaN -> the type's default quiet NaN)."""
    t = T.get(t).name
    bits32 = np.asarray(bits32, dtype=np.uint32)
    if t in ("fp32", "int32", "u32"):
        return bits32
    fmt = T.get(t).fmt
    v = bits32.view(np.float32)
    out = T.to_bits(v, fmt, "rne").astype(np.uint32)
    qnan = fmt.exp_mask | (1 << (fmt.man_bits - 1))
    return np.where(np.isnan(v), np.uint32(qnan), out).astype(np.uint32)


# ------------------------------------------------------------------ DPAS on the GRF, fast

def read_operands(grf: GRF, s: DpasShape, *, src0, src1, src2, model: M.NumericsModel, src2_bytes=None):
    """Logical (A, B, C) of one DPAS from the GRF: A M x K, B K x N (values), C M x N (values or None)."""
    K, N, R = s.K, s.exec_size, s.rc
    img2 = grf.read(src2, s.src2_bytes) if src2_bytes is None else src2_bytes
    a_bits = PK.unpack_src2(img2, s.src2_precision, R, K)
    b_img = grf.read(src1, s.src1_grfs * grf.grf_bytes)
    per = 32 // s.src1_bits
    b_bits = PK.unpack_src1(b_img, s.src1_precision, K if K % per == 0 else -(-K // per) * per, N)[:K]
    flush = s.kind == "float"
    a = PK.decode(a_bits, s.src2_precision, flush=flush and model.flushes(s.src2_precision, s.platform))
    b = PK.decode(b_bits, s.src1_precision, flush=flush and model.flushes(s.src1_precision, s.platform))
    if src0 is None:
        c = None
    else:
        t = s.src0_type
        img0 = grf.read(src0, R * s.row_bytes(t))
        c = PK.unpack_acc(img0, t, R, N)
        with np.errstate(invalid="ignore"):
            c = c.astype(np.int64) if s.kind == "int" else c.astype(np.float64)
    return a, b, c


def compute(s: DpasShape, a, b, c, model: M.NumericsModel) -> np.ndarray:
    """Dst bits (uint32 for 32-bit types, uint16 for bf16/fp16), M x N."""
    if s.kind == "int":
        return int_mma(a, b, c)
    bits = float_mma(a, b, c, ops_per_chan=s.ops_per_chan, k_per_instr=s.K, model=model)
    out = acc_bits_to_type(bits, s.dst_type)
    return out if s.dst_type == "fp32" else out.astype(np.uint16)


@fpenv.guarded
def dpas_fast(grf: GRF, *, dst: int, src0: int | None, src1: int, src2: int, dst_type="fp32", src0_type=None,
              src1_precision, src2_precision, sd: int = 8, rc: int = 8, exec_size: int | None = None,
              device: str | Platform | None = None, model=None, **renamed_keywords) -> DpasShape:
    """:func:`systolic.xmx.dpas.dpas` computed with the vectorised kernels (same arguments, same bits): the body
    of ``xmx.dpas(..., path="fast")``. ``platform=`` is the older name of ``device=`` (DeprecationWarning)."""
    if renamed_keywords:                 # platform=: the older name of device= (systolic.vocabulary)
        device = renamed(renamed_keywords, {"platform": "device"}, "xmx.dpas_fast", stacklevel=4,
                         device=device)["device"]
    grf, s, (dst, src0, src1, src2), mdl = validate(
        grf, dst=dst, src0=src0, src1=src1, src2=src2, dst_type=dst_type, src0_type=src0_type,
        src1_precision=src1_precision, src2_precision=src2_precision, sd=sd, rc=rc, exec_size=exec_size,
        platform=device, model=model)
    a, b, c = read_operands(grf, s, src0=src0, src1=src1, src2=src2, model=mdl)
    out = compute(s, a, b, c, mdl)
    grf.write(dst, out.astype("<u4" if out.dtype == np.uint32 else "<u2"))
    counters.count_dpas(s, "fast")
    return s
