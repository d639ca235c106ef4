"""Rounding to the narrow float formats, exactly (scalar) and vectorised (numpy).

Two implementations of one set of rules:

* :func:`round_fraction` rounds an exact rational (``fractions.Fraction``) to a
  :class:`~systolic.numerics.formats.FloatFormat` and returns its bit pattern.
  Spec paths use it: "compute exactly, round once" is the manuals' own wording
  (e.g. SDM vol. 1 4.8.4: the result is as if computed to infinite precision and
  then rounded).
* :func:`to_bits` / :func:`from_bits` do the same for whole numpy arrays of
  float32/float64 values, for fast paths and the public conversion API.

The rules, shared by both (IEEE 754-2019 section 4.3 and 7.4, x86 where it chooses):

* modes ``"rne"`` (nearest, ties to even), ``"rtz"`` (toward zero), ``"rup"``
  (toward +inf) and ``"rdn"`` (toward -inf);
* overflow: ``saturate=True`` gives the largest finite value; otherwise a mode
  rounding away from zero gives infinity (NaN in formats without infinity: OCP
  E4M3 "fn"), and a mode rounding toward zero gives the largest finite value.
  Formats with neither infinity nor NaN (E2M1) always saturate;
* ``ftz=True`` flushes a *tiny* result to a zero of the same sign, tininess
  detected after rounding as x86 does (SDM vol. 1 4.9.1.5; SoftFloat's 8086
  specialisation): the value is rounded with an unbounded exponent and flushed
  if that is below the smallest normal;
* NaN inputs: ``nan="quiet"`` keeps the sign and the top payload bits and sets
  the quiet bit (x86 VCVTPS2PH / VCVTNEPS2BF16), ``nan="canonical"`` gives the
  sign with the default quiet payload (what ml_dtypes does). A format without
  NaN (E2M1) cannot hold one: :class:`~systolic.errors.InvalidValue`.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np

from .. import fpenv
from ..errors import InvalidValue
from .formats import FP32, FP64, FloatFormat

__all__ = ["MODES", "as_exact_array", "round_fraction", "decode_fraction", "decode", "to_bits", "from_bits",
           "quantize", "fp32_bits", "fp32_from_bits"]

MODES = ("rne", "rtz", "rup", "rdn")


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise InvalidValue(f"unknown rounding mode {mode!r}", rule="rounding modes are " + ", ".join(MODES),
                           values={"mode": mode})


def _floor_log2(n: int, d: int) -> int:
    """floor(log2(n/d)) for positive integers n, d."""
    e = n.bit_length() - d.bit_length()
    if (n << -e if e < 0 else n) < (d if e < 0 else d << e):
        e -= 1
    return e


def _div_round(n: int, d: int, mode: str, negative: bool) -> int:
    """Round the positive rational n/d to an integer under ``mode`` (sign given separately)."""
    q, r = divmod(n, d)
    if r == 0:
        return q
    if mode == "rne":
        return q + 1 if 2 * r > d or (2 * r == d and q & 1) else q
    if mode == "rtz":
        return q
    if mode == "rup":
        return q if negative else q + 1
    return q + 1 if negative else q  # rdn


def _round_at(n: int, d: int, qe: int, mode: str, negative: bool) -> int:
    """Round n/d to a multiple of 2**qe; return the multiplier k (value = k * 2**qe)."""
    if qe >= 0:
        return _div_round(n, d << qe, mode, negative)
    return _div_round(n << -qe, d, mode, negative)


def _overflow_bits(fmt: FloatFormat, mode: str, negative: bool, saturate: bool) -> int:
    sign = fmt.sign_bit if negative else 0
    toward_zero = mode == "rtz" or (mode == "rup" and negative) or (mode == "rdn" and not negative)
    if saturate or toward_zero or fmt.nan == "none":
        return sign | _max_bits(fmt)
    if fmt.nan == "ieee":
        return sign | fmt.exp_mask
    return sign | fmt.exp_mask | fmt.man_mask  # fn: NaN


def _max_bits(fmt: FloatFormat) -> int:
    if fmt.nan == "ieee":
        return (fmt.exp_mask - (1 << fmt.man_bits)) | fmt.man_mask
    if fmt.nan == "fn":
        return fmt.exp_mask | (fmt.man_mask - 1)
    return fmt.exp_mask | fmt.man_mask


def _container(fmt: FloatFormat, bits: int) -> int:
    return bits << (fmt.container_bits - fmt.bits)


def _tiny_after_rounding(n: int, d: int, e: int, fmt: FloatFormat, mode: str, negative: bool) -> bool:
    """x86 tininess (SDM vol. 1 4.9.1.5): n/d, with floor(log2) ``e``, rounded with an unbounded exponent is
    below the smallest normal."""
    m = fmt.man_bits
    k_u = _round_at(n, d, e - m, mode, negative)
    return k_u.bit_length() - 1 + e - m < fmt.emin


def round_fraction(q: Fraction | int, fmt: FloatFormat, mode: str = "rne", *, negative_zero: bool = False,
                   saturate: bool = False, ftz: bool = False) -> int:
    """Round the exact value ``q`` to ``fmt``; return the bit pattern (in the format's container).

    ``negative_zero`` gives the sign of an exact zero (a Fraction has none), e.g.
    (-0) + (-0) = -0 under IEEE 754 section 6.3.
    """
    _check_mode(mode)
    q = Fraction(q)
    if q == 0:
        return _container(fmt, fmt.sign_bit if negative_zero else 0)
    negative = q < 0
    n, d = abs(q.numerator), q.denominator
    sign = fmt.sign_bit if negative else 0
    e = _floor_log2(n, d)
    m = fmt.man_bits
    if ftz and _tiny_after_rounding(n, d, e, fmt, mode, negative):
        return _container(fmt, sign)
    qe = max(e, fmt.emin) - m
    k = _round_at(n, d, qe, mode, negative)
    if k == 0:
        return _container(fmt, sign)
    exp = qe + k.bit_length() - 1
    if exp > fmt.emax or Fraction(k) * Fraction(2) ** qe > fmt.max_fraction:
        return _container(fmt, _overflow_bits(fmt, mode, negative, saturate))
    if exp < fmt.emin:  # subnormal: qe == emin - m
        return _container(fmt, sign | k)
    frac = (k << (m - (exp - qe))) if exp - qe < m else (k >> (exp - qe - m))
    return _container(fmt, sign | ((exp + fmt.bias) << m) | (frac - (1 << m)))


def decode_fraction(bits: int, fmt: FloatFormat) -> Fraction | float:
    """Exact value of a bit pattern: a Fraction for finite values, float inf/nan otherwise.

    The sign of a zero is lost in a Fraction; read it from the bits.
    """
    bits >>= fmt.container_bits - fmt.bits
    negative = bool(bits & fmt.sign_bit)
    e = (bits & fmt.exp_mask) >> fmt.man_bits
    f = bits & fmt.man_mask
    top = (1 << fmt.exp_bits) - 1
    if fmt.nan == "ieee" and e == top:
        if f:
            return float("nan")
        return float("-inf") if negative else float("inf")
    if fmt.nan == "fn" and e == top and f == fmt.man_mask:
        return float("nan")
    if e == 0:
        v = Fraction(f) * Fraction(2) ** (fmt.emin - fmt.man_bits)
    else:
        v = Fraction(f + (1 << fmt.man_bits)) * Fraction(2) ** (e - fmt.bias - fmt.man_bits)
    return -v if negative else v


def decode(bits: int, fmt: FloatFormat) -> float:
    """Value of a bit pattern as a Python float (exact: every format here fits in fp64; NaN payload dropped)."""
    v = decode_fraction(bits, fmt)
    if isinstance(v, float):
        return v
    x = float(v)
    if x == 0 and (bits >> (fmt.container_bits - 1)) & 1:
        return -0.0
    return x


# ---------------------------------------------------------------- vectorised

def _uint_dtype(bits: int) -> np.dtype:
    return np.dtype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[max(8, 1 << (bits - 1).bit_length())])


_EXACT_INT = 1 << 53  # integers up to this magnitude are exact in float64


def as_exact_array(x) -> np.ndarray:
    """``np.asarray(x)``, except where numpy would round: a Python sequence holding an integer that float64 cannot
    hold exactly becomes an object array of the values as given.

    numpy turns ``[0.5, 2**60 + 1]`` or ``[2**63 + 1, -1]`` (no int64 or uint64 holds both) into float64, a first
    rounding before the conversion's own; the object array keeps every value exact for :func:`to_bits` and
    :func:`systolic.types.convert`, which round it once. Arrays pass through unchanged (no copy, no scan).
    """
    if isinstance(x, np.ndarray):
        return x
    a = np.asarray(x)
    if a.dtype.kind != "f" or not isinstance(x, (list, tuple)):
        return a
    o = np.asarray(x, dtype=object)
    if o.shape == a.shape and any(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                                  and abs(int(v)) > _EXACT_INT for v in o.flat):
        return o
    return a


def _longdouble_inexact(a: np.ndarray, f: np.ndarray) -> list[tuple[int, Fraction]]:
    """(flat index, exact value) of the elements of the extended-precision array ``a`` that ``f`` (``a`` as
    float64) does not hold exactly: their rounding starts from the exact value."""
    with np.errstate(all="ignore"):
        off = np.flatnonzero((f.astype(a.dtype) != a) & ~np.isnan(a))
    return [(int(i), Fraction(*a.flat[i].as_integer_ratio())) for i in off]


def _as_float64(x) -> tuple[np.ndarray, list[tuple[int, int | Fraction]]]:
    """The input as float64, plus the values float64 cannot hold exactly (flat index, exact int or Fraction).

    Those few -- integers beyond 2**53, ``np.longdouble`` values with more than 53 significant bits or outside
    float64's range -- are rounded exactly by :func:`round_fraction` afterwards, so each is rounded once (not
    first to float64, then again). Complex numbers, strings and non-numbers are refused: a silent NaN or a
    dropped imaginary part would be a wrong answer.
    """
    a = np.asarray(x)
    k = a.dtype.kind
    if k == "f":
        with np.errstate(invalid="ignore", over="ignore"):
            f = a.astype(np.float64, copy=False)  # float16/32 widen exactly (NaN payload kept)
        return f, (_longdouble_inexact(a, f) if a.dtype.itemsize > 8 else [])
    if k == "b":
        return a.astype(np.float64), []
    if k in "iu":
        big = np.flatnonzero((a > _EXACT_INT) | (a < -_EXACT_INT)) if a.dtype.itemsize >= 8 else []
        return a.astype(np.float64), [(int(i), int(a.flat[i])) for i in big]
    if k == "V" and a.dtype.names is None:  # ml_dtypes floats and small ints
        try:
            return a.astype(np.float64), []
        except (TypeError, ValueError):
            pass
    if k == "O":
        out = np.empty(a.shape, dtype=np.float64)
        big = []
        for i, v in enumerate(a.flat):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise InvalidValue("cannot convert a non-number to floating point",
                                   rule="inputs are real numbers", values={"index": i, "value": repr(v)[:40]})
            if isinstance(v, (int, np.integer)) and abs(int(v)) > _EXACT_INT:
                big.append((i, int(v)))
                out.flat[i] = 0.0
            elif isinstance(v, np.floating) and v.dtype.itemsize > 8 and np.isfinite(v):
                q = Fraction(*v.as_integer_ratio())  # a long double: exact in float64, or rounded exactly later
                try:
                    out.flat[i] = float(q)
                    if Fraction(out.flat[i]) != q:
                        raise OverflowError
                except OverflowError:
                    big.append((i, q))
                    out.flat[i] = 0.0
            else:
                out.flat[i] = float(v)
        return out, big
    raise InvalidValue(f"cannot convert {a.dtype} values to a float format",
                       rule="inputs are real numbers (float, int, bool or ml_dtypes arrays)",
                       values={"dtype": str(a.dtype)})


def _rint(v: np.ndarray, mode: str, negative: np.ndarray) -> np.ndarray:
    if mode == "rne":
        return np.rint(v)
    if mode == "rtz":
        return np.trunc(v)
    if mode == "rup":
        return np.where(negative, np.floor(v), np.ceil(v))
    return np.where(negative, np.ceil(v), np.floor(v))


@fpenv.guarded  # the general path widens float32 with numpy, which MXCSR.DAZ would flush
def to_bits(x, fmt: FloatFormat, mode: str = "rne", *, saturate: bool = False, ftz: bool = False,
            nan: str = "quiet") -> np.ndarray:
    """Convert an array of floats to the bit patterns of ``fmt`` (unsigned ints of the container width).

    Same rules as :func:`round_fraction` (module docstring). Every value is rounded once, from its exact value:
    float16/32/64, bools and integers up to 2**53 widen exactly to float64; integers beyond 2**53 (int64, uint64,
    Python ints in object arrays or lists, see :func:`as_exact_array`) and ``np.longdouble`` values that float64
    cannot hold are rounded exactly by :func:`round_fraction`. fp64 targets return float64 values unchanged in
    every mode (``ftz``, ``saturate`` and ``nan`` apply as for the other formats).

    float32 and float64 arrays going to fp32, tf32, bf16, fp16 or bf8 take an integer fast path on the bit
    patterns (:func:`_to_bits_fast`, every mode and flag), proven bit-identical to the general frexp/ldexp path
    by tests/test_rounding_fast.py. Measured on 10**6 standard-normal values (2-core dev machine, best of 5):
    rne 13-20 ms (general path 92-95 ms), rup + ftz 29-33 ms (general 112-120 ms).
    """
    _check_mode(mode)
    if nan not in ("quiet", "canonical"):
        raise InvalidValue(f"unknown NaN rule {nan!r}", rule="nan is 'quiet' or 'canonical'", values={"nan": nan})
    a = as_exact_array(x)
    if _fast_applies(a.dtype, fmt):  # on a flat copy: scalars and 0-d inputs come back as 0-d arrays
        return np.asarray(_to_bits_fast(a.reshape(-1), fmt, mode, saturate, ftz, nan)).reshape(a.shape)
    a, inexact = _as_float64(a)
    out = _to_bits_f64(a, fmt, mode, saturate, ftz, nan)
    for i, v in inexact:  # integers beyond 2**53, long doubles float64 cannot hold: round the exact value once
        out.flat[i] = round_fraction(v, fmt, mode, saturate=saturate, ftz=ftz)
    return out


def _to_bits_f64(a: np.ndarray, fmt: FloatFormat, mode: str, saturate: bool, ftz: bool, nan: str) -> np.ndarray:
    udt = _uint_dtype(fmt.container_bits)
    if fmt == FP64:
        return _fp64_bits(a, saturate, ftz, nan)
    with np.errstate(all="ignore"):
        negative = np.signbit(a)
        mag = np.abs(a)
        isnan = np.isnan(a)
        isinf = np.isinf(a)
        finite = ~(isnan | isinf)
        m = fmt.man_bits
        mant, E = np.frexp(np.where(finite & (mag > 0), mag, 1.0))
        e = E.astype(np.int64) - 1  # mag in [2**e, 2**(e+1))
        qe = np.maximum(e, fmt.emin) - m
        k = _rint(np.ldexp(mag, -qe), mode, negative)
        if ftz:
            ku = _rint(np.ldexp(mag, -(e - m)), mode, negative)
            tiny = np.ldexp(ku, e - m) < fmt.min_normal
            k = np.where(tiny, 0.0, k)
        value = np.ldexp(k, qe)
        over = finite & (value > fmt.max)
        # encode finite, in-range values
        mv, Ev = np.frexp(np.where(value > 0, value, 1.0))
        ev = Ev.astype(np.int64) - 1
        normal = ev >= fmt.emin
        frac_n = np.ldexp(mv * 2.0 - 1.0, m)
        field = np.where(normal, ((ev + fmt.bias) << m).astype(np.float64) + frac_n,
                         np.ldexp(value, -(fmt.emin - m)))
        field = np.where(value > 0, field, 0.0).astype(np.uint64)
        sign = np.where(negative, np.uint64(fmt.sign_bit), np.uint64(0))
        out = field | sign
        # overflow and infinities
        toward_zero = (mode == "rtz") | ((mode == "rup") & negative) | ((mode == "rdn") & ~negative)
        maxb = np.uint64(_max_bits(fmt))
        if fmt.nan == "none" or saturate:
            over_bits = maxb
            inf_bits = maxb
        elif fmt.nan == "ieee":
            over_bits = np.where(toward_zero, maxb, np.uint64(fmt.exp_mask))
            inf_bits = np.uint64(fmt.exp_mask)
        else:  # fn: no infinity, overflow is NaN
            over_bits = np.where(toward_zero, maxb, np.uint64(fmt.exp_mask | fmt.man_mask))
            inf_bits = np.uint64(fmt.exp_mask | fmt.man_mask)
        out = np.where(over, sign | over_bits, out)
        out = np.where(isinf, sign | inf_bits, out)
        if isnan.any():
            if fmt.nan == "none":
                raise InvalidValue(f"NaN has no encoding in {fmt.name}", rule=f"{fmt.name} has no NaN",
                                   values={"count": int(isnan.sum())})
            if fmt.nan == "fn" or nan == "canonical":
                nb = np.uint64(fmt.default_nan & ~fmt.sign_bit)
            else:
                payload = (a.view(np.uint64) & np.uint64((1 << 52) - 1)) >> np.uint64(52 - m)
                nb = np.uint64(fmt.exp_mask) | payload | np.uint64(fmt.quiet_bit)
            out = np.where(isnan, sign | nb, out)
    shift = fmt.container_bits - fmt.bits
    if shift:
        out = out << np.uint64(shift)
    return out.astype(udt)


def _fp64_bits(a: np.ndarray, saturate: bool, ftz: bool, nan: str) -> np.ndarray:
    """:func:`to_bits` to fp64 of float64 values: every one is exact in fp64, so every mode returns it unchanged;
    only the rules that change a value apply, on the bit patterns (no float arithmetic): ``ftz`` flushes
    subnormals (an exact subnormal stays tiny after rounding with an unbounded exponent), ``saturate`` turns an
    infinity into the largest finite value, and NaNs follow ``nan`` as in every other format."""
    b = np.ascontiguousarray(a, dtype=np.float64).view(np.uint64).copy()
    sign = b & np.uint64(FP64.sign_bit)
    mag = b & np.uint64(FP64.sign_bit - 1)
    expm = np.uint64(FP64.exp_mask)
    if ftz:
        b = np.where((mag != 0) & (mag < np.uint64(1 << FP64.man_bits)), sign, b)
    if saturate:
        b = np.where(mag == expm, sign | np.uint64(_max_bits(FP64)), b)
    isnan = mag > expm
    if isnan.any():
        if nan == "canonical":
            nb = sign | np.uint64(FP64.default_nan & ~FP64.sign_bit)
        else:  # quiet: sign and payload kept, the quiet bit set (a signalling NaN becomes quiet)
            nb = b | np.uint64(FP64.quiet_bit)
        b = np.where(isnan, nb, b)
    return b.astype(np.uint64)


# ---------------------------------------------------------------- fast path: integer rounding of bit patterns
#
# float32/float64 input to an IEEE-style format whose exponent range and precision fit in the input's (fp32, tf32,
# bf16, fp16, bf8): the conversion is integer arithmetic on the bit patterns. It does no floating-point operation,
# so unlike a numpy float cast it does not depend on the process MXCSR, where DAZ/FTZ or another rounding mode
# would change the result (the general path's widening cast and np.rint do depend on it). tests/test_rounding_fast.py proves it bit-identical
# to _to_bits_f64 for every mode and flag.

_SOURCES = {np.dtype(np.float64): (FP64, np.int64), np.dtype(np.float32): (FP32, np.int32)}


def _fast_applies(dtype: np.dtype, fmt: FloatFormat) -> bool:
    src = _SOURCES.get(dtype)
    return (src is not None and fmt.nan == "ieee" and fmt != FP64
            and fmt.exp_bits <= src[0].exp_bits and fmt.man_bits <= src[0].man_bits)


@lru_cache(maxsize=None)
def _ftz_threshold(src: FloatFormat, fmt: FloatFormat, mode: str) -> int:
    """Smallest positive ``src`` bit pattern that is not tiny after rounding to ``fmt`` (SDM vol. 1 4.9.1.5).

    ``mode`` rounds magnitudes: "rne", "rtz", or "rup" for away from zero. Rounding is monotone, so tininess
    is a threshold on |x|, found here by bisection with the exact rule of :func:`round_fraction`.
    """
    def tiny(p: int) -> bool:
        q = decode_fraction(p, src)
        n, d = q.numerator, q.denominator
        return _tiny_after_rounding(n, d, _floor_log2(n, d), fmt, mode, False)

    lo, hi = 1, (fmt.emin + src.bias) << src.man_bits  # hi is 2**fmt.emin, the smallest normal: not tiny
    assert tiny(lo) and not tiny(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if tiny(mid) else (lo, mid)
    return hi


def _round_shift(sig: np.ndarray, r, mode: str, away) -> np.ndarray:
    """``sig / 2**r`` rounded to an integer under ``mode`` (``away``: directed modes round the magnitude up)."""
    ones = (1 << r) - 1
    if mode == "rne":
        return (sig + ((ones + ((sig >> r) & 1)) >> 1)) >> r  # add half - 1, plus 1 if the kept lsb is odd
    if mode == "rtz":
        return sig >> r
    return (sig + np.where(away, ones, 0)) >> r


def _to_bits_fast(a: np.ndarray, fmt: FloatFormat, mode: str, saturate: bool, ftz: bool, nan: str) -> np.ndarray:
    """:func:`to_bits` for float32/float64 ``a`` when :func:`_fast_applies`: same rules, integer arithmetic."""
    src, idt = _SOURCES[a.dtype]
    ms, mt = src.man_bits, fmt.man_bits
    sh = ms - mt  # fraction bits a normal result drops
    rebias = src.bias - fmt.bias
    bits = a.view(idt)
    mag = bits & (src.sign_bit - 1)
    away = (bits >= 0 if mode == "rup" else bits < 0) if mode in ("rup", "rdn") else None
    # A result at or above fmt's smallest normal: rebias the exponent field and round off sh bits; a carry out
    # of the fraction moves into the exponent, as it should.
    res = _round_shift(mag - (rebias << ms), sh, mode, away) if sh else mag - (rebias << ms)
    if rebias:  # inputs below fmt's smallest normal (zeros too): the quantum stays 2**(emin - mt)
        small = mag < (rebias + 1) << ms
        if small.any():
            ms_ = mag[small]
            e = ms_ >> ms
            sig = (ms_ & src.man_mask) | (np.minimum(e, 1) << ms)  # significand with its implicit bit
            # past ms + 2 bits of shift only "is anything left" matters
            r = np.minimum((rebias + 1 + sh) - np.maximum(e, 1), ms + 2)
            res[small] = _round_shift(sig, r, mode, None if away is None else away[small])
    # (with rebias 0, float32 into an 8-bit-exponent format, the rebias is a no-op and subnormal inputs are
    # already on fmt's subnormal grid, so the first formula covers them.)
    maxb = _max_bits(fmt)  # one below the infinity pattern
    if saturate or mode == "rtz":
        res = np.minimum(res, maxb)
    elif mode == "rne":
        res = np.minimum(res, fmt.exp_mask)
    else:
        res = np.where(res > maxb, np.where(away, fmt.exp_mask, maxb), res)
    if ftz:
        if away is None:
            thr = _ftz_threshold(src, fmt, mode)
        else:
            thr = np.where(away, _ftz_threshold(src, fmt, "rup"), _ftz_threshold(src, fmt, "rtz"))
        res = np.where(mag < thr, 0, res)
    special = mag >= src.exp_mask  # inf and NaN inputs
    if special.any():
        frac = mag & src.man_mask
        inf_bits = maxb if saturate else fmt.exp_mask
        nan_bits = fmt.exp_mask | fmt.quiet_bit
        if nan == "quiet":
            nan_bits = nan_bits | (frac >> sh)  # the top payload bits
        res = np.where(special, np.where(frac == 0, inf_bits, nan_bits), res)
    udt = _uint_dtype(fmt.container_bits)
    out = res.astype(udt) | ((bits < 0).astype(udt) << (fmt.bits - 1))
    shift = fmt.container_bits - fmt.bits
    return out << shift if shift else out


def from_bits(bits, fmt: FloatFormat, *, daz: bool = False) -> np.ndarray:
    """Decode bit patterns of ``fmt`` to float64 (exact). NaN payloads move to the top of fp64's fraction.

    ``daz=True`` reads subnormal inputs as zeros of the same sign (x86 MXCSR.DAZ).
    """
    b = np.asarray(bits).astype(np.uint64) >> np.uint64(fmt.container_bits - fmt.bits)
    if fmt == FP64:
        out = b.view(np.float64).copy()
        if daz:
            sub = ((b & np.uint64(fmt.exp_mask)) == 0) & ((b & np.uint64(fmt.man_mask)) != 0)
            out = np.where(sub, np.where(np.signbit(out), -0.0, 0.0), out)
        return out
    negative = (b & np.uint64(fmt.sign_bit)) != 0
    e = ((b & np.uint64(fmt.exp_mask)) >> np.uint64(fmt.man_bits)).astype(np.int64)
    f = (b & np.uint64(fmt.man_mask)).astype(np.int64)
    top = (1 << fmt.exp_bits) - 1
    sub_scale = fmt.emin - fmt.man_bits
    mag = np.where(e == 0, np.ldexp(f.astype(np.float64), sub_scale),
                   np.ldexp((f + (1 << fmt.man_bits)).astype(np.float64), e - fmt.bias - fmt.man_bits))
    if daz:
        mag = np.where(e == 0, 0.0, mag)
    if fmt.nan == "ieee":
        special = e == top
        nanbits = np.uint64(0x7FF0000000000000) | (f.astype(np.uint64) << np.uint64(52 - fmt.man_bits))
        mag = np.where(special & (f == 0), np.inf, mag)
        mag = np.where(special & (f != 0), nanbits.view(np.float64), mag)
    elif fmt.nan == "fn":
        isnan = (e == top) & (f == fmt.man_mask)
        mag = np.where(isnan, np.float64(np.nan), mag)
    return np.where(negative, -mag, mag)


def quantize(x, fmt: FloatFormat, mode: str = "rne", *, saturate: bool = False, ftz: bool = False,
             nan: str = "quiet") -> np.ndarray:
    """Round values to ``fmt`` and return them as float64 (the value the narrow format holds)."""
    return from_bits(to_bits(x, fmt, mode, saturate=saturate, ftz=ftz, nan=nan), fmt)


def fp32_bits(x) -> np.ndarray:
    """Bit patterns (uint32) of float32 values."""
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32)).view(np.uint32)


def fp32_from_bits(b) -> np.ndarray:
    """float32 values of uint32 bit patterns (NaN payloads kept)."""
    return np.ascontiguousarray(np.asarray(b, dtype=np.uint32)).view(np.float32)

