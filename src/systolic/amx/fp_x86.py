"""The x86 fp32 arithmetic the AMX float dot products use, exactly (scalar) and vectorised (numpy).

Every AMX float instruction (TDPBF16PS, TDPFP16PS, TCMM*FP16PS, the FP8 quartet)
is a sequence of fp32 FMAs and adds performed "with DAZ=FTZ=1, RNE rounding;
MXCSR is neither consulted nor updated" (SDM vol. 2, TDPBF16PS Operation). The
rules applied here, one place for all of them (DESIGN principle 4):

* **DAZ**: an fp32 *input* that is denormal is read as a zero of the same sign.
* **RNE**: the exact result (product and sum computed to infinite precision) is
  rounded once to fp32, ties to even.
* **FTZ**: a result that is tiny is replaced by a zero of the same sign.
  Tininess is detected *after rounding* (rounded with an unbounded exponent and
  compared with 2^-126), as x86 does (SDM vol. 1 4.9.1.5).
* **NaN** (SDM vol. 1 4.8.3.5, Table 4-7, and the VDPBF16PS NaN priority table):
  if an operand is a NaN, the result is the first NaN operand in the order
  given by :data:`NAN_ORDER`, quieted (bit 22 set, sign and payload kept);
  an invalid operation (inf * 0, inf - inf) with no NaN operand gives the
  default NaN 0xFFC00000.
* **Signed zero**: an exact zero sum is +0 unless both addends are -0 (RNE).

The NaN operand order of an FMA ``acc + a * b`` is a *model choice*: the SDM
states it only for VDPBF16PS (sources before the accumulator), which is what is
used here; silicon vectors (tests/data) are the judge.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..numerics.formats import FP32, FP16, BF8, HF8, FloatFormat
from ..numerics.rounding import decode_fraction, round_fraction

__all__ = ["DEFAULT_NAN", "QUIET_BIT", "is_nan", "quiet", "daz", "fma", "add",
           "bf16_to_fp32", "fp16_to_fp32", "fp8_to_fp32",
           "fma_vec", "add_vec", "daz_vec", "fp16_to_fp32_vec", "fp8_to_fp32_vec"]

DEFAULT_NAN = 0xFFC00000  # x86 "QNaN floating-point indefinite"
QUIET_BIT = 0x00400000
SIGN = 0x80000000
EXP = 0x7F800000
MAN = 0x007FFFFF
MIN_NORMAL = 2.0 ** -126
#: smallest magnitude whose RNE rounding to 24 bits (unbounded exponent) is >= 2^-126
FTZ_THRESHOLD = 2.0 ** -126 - 2.0 ** -151

#: NaN priority of one chain step ``acc + a * b``: the multiplicands before the accumulator
NAN_ORDER = ("a", "b", "acc")


# ------------------------------------------------------------------ scalar, exact

def is_nan(x: int) -> bool:
    return (x & EXP) == EXP and (x & MAN) != 0


def is_inf(x: int) -> bool:
    return (x & 0x7FFFFFFF) == EXP


def quiet(x: int) -> int:
    return x | QUIET_BIT


def daz(x: int) -> int:
    """DAZ: a denormal fp32 input reads as a zero of its sign."""
    if (x & EXP) == 0:
        return x & SIGN
    return x


def _value(x: int) -> Fraction:
    return decode_fraction(x, FP32)  # finite only


def _neg(x: int) -> bool:
    return bool(x & SIGN)


def _round(q: Fraction, negative_zero: bool) -> int:
    return round_fraction(q, FP32, "rne", negative_zero=negative_zero, ftz=True)


def _sum_terms(terms: list[tuple[bool, bool, Fraction | None]], acc: int) -> int:
    """Round ``acc + sum(terms)`` once: terms are (is_inf, negative, exact value) of non-NaN products."""
    infs = [neg for inf, neg, _ in terms if inf]
    if is_inf(acc):
        infs.append(_neg(acc))
    if infs:
        if any(infs) and not all(infs):
            return DEFAULT_NAN  # inf - inf
        return (SIGN if infs[0] else 0) | EXP
    total = _value(acc) + sum(v for _, _, v in terms)
    if total == 0:
        # exact zero: -0 only if every addend is a -0 (IEEE 754 6.3, RNE)
        zeros_neg = all(neg and v == 0 for _, neg, v in terms) and _neg(acc) and _value(acc) == 0
        return _round(total, zeros_neg)
    return _round(total, False)


def _product(a: int, b: int, negate: bool = False) -> tuple[bool, bool, Fraction | None] | None:
    """(is_inf, negative, value) of a*b for non-NaN a, b; None for inf * 0 (invalid)."""
    neg = _neg(a) != _neg(b)
    if negate:
        neg = not neg
    if is_inf(a) or is_inf(b):
        other = b if is_inf(a) else a
        if not is_inf(other) and _value(other) == 0:
            return None
        return True, neg, None
    v = _value(a) * _value(b)
    return False, neg, (-v if negate else v)


def fma(a: int, b: int, acc: int, *, negate: bool = False) -> int:
    """fp32 ``acc + a * b`` (``acc - a * b`` with ``negate``), rounded once; DAZ, FTZ, RNE, x86 NaN rules.

    SDM vol. 2 TDPBF16PS: "FP32 FMA with DAZ=FTZ=1, RNE rounding". Operands and
    result are fp32 bit patterns.
    """
    a, b, acc = daz(a), daz(b), daz(acc)
    ops = {"a": a, "b": b, "acc": acc}
    for name in NAN_ORDER:
        if is_nan(ops[name]):
            return quiet(ops[name])
    p = _product(a, b, negate)
    if p is None:
        return DEFAULT_NAN
    return _sum_terms([p], acc)


def add(x: int, y: int) -> int:
    """fp32 ``x + y``: DAZ, FTZ, RNE, first-operand NaN priority (SDM vol. 1 Table 4-7)."""
    x, y = daz(x), daz(y)
    if is_nan(x):
        return quiet(x)
    if is_nan(y):
        return quiet(y)
    inf_y = (True, _neg(y), None) if is_inf(y) else (False, _neg(y), _value(y))
    return _sum_terms([inf_y], x)


def bf16_to_fp32(h: int) -> int:
    """SDM make_fp32: the bf16 pattern in the upper half of a dword (exact, NaN payload kept)."""
    return (h & 0xFFFF) << 16


def _narrow_to_fp32(h: int, fmt: FloatFormat) -> int:
    v = decode_fraction(h, fmt)
    neg = bool(h & fmt.sign_bit)
    if isinstance(v, float):
        if v != v:
            if fmt.nan == "ieee":  # payload moves to the top of the fp32 fraction
                payload = (h & fmt.man_mask) << (23 - fmt.man_bits)
                return (SIGN if neg else 0) | EXP | payload
            return (SIGN if neg else 0) | EXP | QUIET_BIT  # E4M3: one NaN, no payload
        return (SIGN if neg else 0) | EXP
    return round_fraction(v, FP32, "rne", negative_zero=neg)


def fp16_to_fp32(h: int) -> int:
    """fp16 -> fp32, exact (denormals kept: they are normal numbers in fp32), NaN payload kept."""
    return _narrow_to_fp32(h & 0xFFFF, FP16)


def fp8_to_fp32(h: int, fmt: FloatFormat) -> int:
    """bf8 (E5M2) or hf8 (E4M3) -> fp32, exact. *Unverified* NaN mapping for hf8 (one NaN: quiet, sign kept)."""
    return _narrow_to_fp32(h & 0xFF, fmt)


# ------------------------------------------------------------------ vectorised (numpy)

def _f64(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32).astype(np.float64)


def daz_vec(bits: np.ndarray) -> np.ndarray:
    b = np.asarray(bits, dtype=np.uint32)
    return np.where((b & np.uint32(EXP)) == 0, b & np.uint32(SIGN), b)


def _nan_mask(b: np.ndarray) -> np.ndarray:
    return ((b & np.uint32(EXP)) == np.uint32(EXP)) & ((b & np.uint32(MAN)) != 0)


def _round_ftz(s: np.ndarray) -> np.ndarray:
    """fp32 bits of float64 values rounded RNE to fp32 with FTZ (tininess after rounding).

    Correct when ``s`` is the float64 rounding of a sum of two numbers of <= 24
    significant bits (double rounding is then innocuous: 53 >= 2*24 + 2).
    """
    r = s.astype(np.float32)
    rb = r.view(np.uint32)
    # The cast rounds tiny values on the denormal grid; the decision "tiny after rounding to 24 bits" can
    # differ from it only where the cast gives a denormal or exactly +-2^-126 (e.g. 2^-126 - 1.5*2^-151
    # casts to 2^-126 but rounds to 24 bits as 2^-126 - 2^-150: tiny, flushed).
    mag = rb & np.uint32(0x7FFFFFFF)
    sub = (mag != 0) & (mag <= np.uint32(0x00800000))
    if sub.any():
        up = np.abs(s) >= FTZ_THRESHOLD
        fixed = np.where(up, np.uint32(0x00800000), np.uint32(0)) | (rb & np.uint32(SIGN))
        rb = np.where(sub, fixed, rb)
    return rb


def _nan_select(result: np.ndarray, operands: list[np.ndarray]) -> np.ndarray:
    """Replace results by the first NaN operand (quieted), in priority order."""
    out = result
    for op in reversed(operands):
        out = np.where(_nan_mask(op), op | np.uint32(QUIET_BIT), out)
    return out


def fma_vec(a, b, acc, *, negate=False) -> np.ndarray:
    """Vectorised :func:`fma` on broadcastable uint32 arrays; bit-identical to it for every input."""
    a, b, acc = daz_vec(a), daz_vec(b), daz_vec(acc)
    a, b, acc = np.broadcast_arrays(a, b, acc)
    with np.errstate(all="ignore"):
        x, y, c = _f64(a), _f64(b), _f64(acc)
        p = x * y  # exact: <= 22 significant bits, in float64's range
        if negate is not False:  # a bool or a broadcastable bool array (per-lane negation)
            p = np.where(negate, -p, p)
        s = p + c
        res = _round_ftz(s)
        invalid = np.isnan(p) | (np.isinf(p) & np.isinf(c) & (np.signbit(p) != np.signbit(c)))
    res = np.where(invalid, np.uint32(DEFAULT_NAN), res)
    ops = {"a": a, "b": b, "acc": acc}
    return _nan_select(res, [ops[n] for n in NAN_ORDER]).astype(np.uint32)


def add_vec(x, y) -> np.ndarray:
    """Vectorised :func:`add`; bit-identical to it."""
    x, y = np.broadcast_arrays(daz_vec(x), daz_vec(y))
    with np.errstate(all="ignore"):
        s = _f64(x) + _f64(y)
        res = _round_ftz(s)
        invalid = np.isnan(s)
    res = np.where(invalid, np.uint32(DEFAULT_NAN), res)
    return _nan_select(res, [x, y]).astype(np.uint32)


def _narrow_vec(h: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    from ..numerics.rounding import from_bits
    h = np.asarray(h).astype(np.uint32)
    v = from_bits(h, fmt)
    with np.errstate(invalid="ignore"):
        out = v.astype(np.float32).view(np.uint32)  # exact for finite values; NaNs replaced below
    neg = (h & np.uint32(fmt.sign_bit)) != 0
    if fmt.nan == "ieee":
        isnan = ((h & np.uint32(fmt.exp_mask)) == np.uint32(fmt.exp_mask)) & ((h & np.uint32(fmt.man_mask)) != 0)
        nanb = np.uint32(EXP) | ((h & np.uint32(fmt.man_mask)) << np.uint32(23 - fmt.man_bits))
    else:
        isnan = (h & np.uint32(fmt.exp_mask | fmt.man_mask)) == np.uint32(fmt.exp_mask | fmt.man_mask)
        nanb = np.full(h.shape, EXP | QUIET_BIT, dtype=np.uint32)
    nanb = nanb | np.where(neg, np.uint32(SIGN), np.uint32(0))
    return np.where(isnan, nanb, out).astype(np.uint32)


def fp16_to_fp32_vec(h) -> np.ndarray:
    return _narrow_vec(np.asarray(h) & 0xFFFF, FP16)


def fp8_to_fp32_vec(h, fmt: FloatFormat) -> np.ndarray:
    return _narrow_vec(np.asarray(h) & 0xFF, fmt)


FP8_FORMATS = {"bf8": BF8, "hf8": HF8}
