"""Conversions round each value once, from its exact value, and apply the same rules to every target format.

Oracles are independent of the code under test: IEEE 754 binary64 bit patterns read with ``struct``, hand
rounding of Python ints and ``fractions.Fraction`` values (:func:`_rne_int`, :func:`_round_frac`), and the
IEEE 754 rules spelled out at each test (quiet bit of a NaN, saturation to the largest finite value).
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from systolic import fpenv
from systolic import types as T
from systolic.errors import InvalidValue
from systolic.numerics import BF16, FP32, FP64, quantize, to_bits

MODES = ("rne", "rtz", "rup", "rdn")


def _f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _rne_int(v: int, man_bits: int) -> int:
    """Hand RNE of a positive int to a binary format with ``man_bits`` fraction bits (unbounded exponent)."""
    ulp = 1 << max(v.bit_length() - 1 - man_bits, 0)
    q, r = divmod(v, ulp)
    if 2 * r > ulp or (2 * r == ulp and q & 1):
        q += 1
    return q * ulp


def _round_frac(x: Fraction, man_bits: int, mode: str) -> Fraction:
    """Hand rounding of a positive Fraction in [1, 2) to ``man_bits`` fraction bits."""
    ulp = Fraction(1, 1 << man_bits)
    q, r = divmod(x, ulp)
    if r and (mode == "rup" or (mode == "rne" and (2 * r > ulp or (2 * r == ulp and q % 2)))):
        q += 1
    return q * ulp


# ------------------------------------------------------------------ fp64 targets (audit #4, #8)

# float64 values: each is exact in fp64, so every rounding mode must give its own bit pattern back
F64_VALUES = [0.1, -0.1, 1 / 3, float(2 ** 53 - 1), -float(2 ** 53 - 1), 5e-324, -2.2250738585072009e-308,
              2.2250738585072014e-308, 1.7976931348623157e308, -0.0, 0.0, math.pi * 2 ** 900]


@pytest.mark.parametrize("mode", MODES)
def test_fp64_target_returns_float64_unchanged_in_every_mode(mode):
    want = [_f64_bits(v) for v in F64_VALUES]
    x = np.array(F64_VALUES)
    assert [int(b) for b in to_bits(x, FP64, mode)] == want
    assert [_f64_bits(v) for v in quantize(x, FP64, mode)] == want
    assert [int(b) for b in T.convert(x, "fp64", mode).view(np.uint64)] == want
    # the audit's cases, bit for bit
    assert int(T.convert(np.array([0.1]), "fp64", mode).view(np.uint64)[0]) == 0x3FB999999999999A
    assert int(T.convert(np.array([2 ** 53 - 1]), "fp64", mode)[0]) == 2 ** 53 - 1
    # float32 and small ints widen exactly too
    assert float(quantize(np.array([np.float32(0.1)]), FP64, mode)[0]) == 13421773 / 2 ** 27
    assert int(T.convert(np.array([-(2 ** 31) + 1], np.int32), "fp64", mode)[0]) == -(2 ** 31) + 1


def test_fp64_target_ftz_flushes_only_subnormals():
    # ftz: a subnormal is tiny after rounding (it is its own rounding); normals, zeros, inf pass unchanged
    x = np.array([1 / 3, 5e-324, -2.2250738585072009e-308, 2.2250738585072014e-308, -0.0, np.inf])
    want = [_f64_bits(1 / 3), 0, 1 << 63, 0x0010000000000000, 1 << 63, 0x7FF0000000000000]
    for mode in MODES:
        assert [int(b) for b in to_bits(x, FP64, mode, ftz=True)] == want
    assert float(T.convert(np.array([1 / 3]), "fp64", ftz=True)[0]) == 1 / 3


@pytest.mark.parametrize("mode", MODES)
def test_fp64_target_saturate_and_nan_rules(mode):
    # saturate: +-inf become the largest finite value 0x7FEFFFFFFFFFFFFF with the sign, as in every format
    inf = np.array([np.inf, -np.inf])
    assert [int(b) for b in to_bits(inf, FP64, mode, saturate=True)] == [0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF]
    assert [int(b) for b in to_bits(inf, FP64, mode)] == [0x7FF0000000000000, 0xFFF0000000000000]
    # NaN, nan="quiet": sign and payload kept, quiet bit (bit 51) set; "canonical": sign | 0x7FF8000000000000
    nans = np.array([0x7FF0000000000001, 0xFFF0000000000005, 0x7FF8000000000123], np.uint64).view(np.float64)
    assert [int(b) for b in to_bits(nans, FP64, mode)] == [0x7FF8000000000001, 0xFFF8000000000005,
                                                           0x7FF8000000000123]
    assert [int(b) for b in to_bits(nans, FP64, mode, nan="canonical")] == [0x7FF8000000000000,
                                                                           0xFFF8000000000000,
                                                                           0x7FF8000000000000]


def test_fp64_target_big_ints_round_once():
    # 2**60 + 1: the fp64 quantum at 2**60 is 2**(60 - 52) = 256
    x = np.array([2 ** 60 + 1, -(2 ** 60) - 1], np.int64)
    assert [int(v) for v in T.convert(x, "fp64", "rtz")] == [2 ** 60, -(2 ** 60)]
    assert [int(v) for v in T.convert(x, "fp64", "rup")] == [2 ** 60 + 256, -(2 ** 60)]
    assert [int(v) for v in T.convert(x, "fp64", "rdn")] == [2 ** 60, -(2 ** 60) - 256]


# ------------------------------------------------------------------ Python lists holding big ints (audit #6)

def test_lists_with_big_ints_round_once_to_float_formats():
    # numpy makes [2**63 + 2**39 + 1, -1] float64 (no int64 or uint64 holds both): 2**63, a first rounding
    v = 2 ** 63 + 2 ** 39 + 1  # fp32 quantum at 2**63 is 2**40: v is just above half way -> 2**63 + 2**40
    assert _rne_int(v, 23) == 2 ** 63 + 2 ** 40
    assert int(T.convert([v, -1], "fp32")[0]) == 2 ** 63 + 2 ** 40
    assert float(quantize([v, -1], FP32)[0]) == 2 ** 63 + 2 ** 40
    w = 2 ** 60 + 2 ** 52 + 1  # bf16 quantum at 2**60 is 2**53: just above half way -> 2**60 + 2**53
    assert _rne_int(w, 7) == 2 ** 60 + 2 ** 53
    assert int(T.convert([0.5, w], "bf16")[1]) == 2 ** 60 + 2 ** 53
    assert int(T.convert(((w, 0.5), (0.25, 1.0)), "bf16")[0, 0]) == 2 ** 60 + 2 ** 53  # nested tuples too
    assert int(to_bits([0.5, w], BF16)[1]) == 0x5D81  # 2**60 * (1 + 2**-7): exponent 60 + 127 = 0xBB, fraction 1
    # numpy ints inside a list of floats: [np.int64(2**62 + 1), 0.5] also becomes float64; rup -> 2**62 + 2**39
    assert int(T.convert([np.int64(2 ** 62 + 1), 0.5], "fp32", "rup")[0]) == 2 ** 62 + 2 ** 39
    # fp64 target: directed modes on the exact value (fp64 quantum at 2**60: 256)
    assert int(T.convert([0.5, 2 ** 60 + 1], "fp64", "rup")[1]) == 2 ** 60 + 256
    # lists without big ints keep numpy's dtype (nothing to lose)
    assert T.convert([0.5, 2 ** 53], "fp32").dtype == np.float32


# ------------------------------------------------------------------ np.longdouble inputs (audit #9)

LD_WIDE = np.finfo(np.longdouble).nmant > 52  # x87 80-bit or binary128; on other hosts longdouble is float64
needs_wide = pytest.mark.skipif(not LD_WIDE, reason="np.longdouble is float64 on this host")


def _ld(q: Fraction) -> np.longdouble:
    v = np.longdouble(q.numerator) / np.longdouble(q.denominator)
    assert Fraction(*v.as_integer_ratio()) == q  # the value is held exactly
    return v


@needs_wide
@pytest.mark.parametrize("mode", MODES)
def test_longdouble_rounds_once_to_float_formats(mode):
    # 1 + 2**-8 + 2**-60: through float64 it is 1 + 2**-8, a tie for bf16 (-> 1.0 under RNE); exactly it is
    # above the tie -> 1 + 2**-7
    for q, fmt, man in ((Fraction(1) + Fraction(1, 2 ** 8) + Fraction(1, 2 ** 60), "bf16", 7),
                        (Fraction(1) + Fraction(1, 2 ** 24) + Fraction(1, 2 ** 60), "fp32", 23),
                        (Fraction(1) + Fraction(1, 2 ** 53) + Fraction(1, 2 ** 60), "fp64", 52),
                        (Fraction(1) + Fraction(1, 2 ** 11) + Fraction(1, 2 ** 60), "tf32", 10)):
        want = _round_frac(q, man, mode)
        x = np.array([_ld(q), -_ld(q)])
        got = T.convert(x, fmt, mode).astype(np.float64)
        neg = {"rup": "rdn", "rdn": "rup"}.get(mode, mode)  # -x rounds as x under the mirrored mode
        assert [Fraction(float(v)) for v in got] == [want, -_round_frac(q, man, neg)], (fmt, mode)
        # scalars in object arrays too
        obj = np.array([_ld(q), 0.5], dtype=object)
        assert Fraction(float(T.convert(obj, fmt, mode).astype(np.float64)[0])) == want, (fmt, mode)
    # 1 + 2**-8 + 2**-60 under RNE: the audit's case, 1.0078125
    assert float(T.convert(np.array([_ld(Fraction(1) + Fraction(1, 2 ** 8) + Fraction(1, 2 ** 60))]), "bf16")
                 .astype(np.float64)[0]) == 1.0078125


@needs_wide
def test_longdouble_beyond_float64_range():
    big = np.array([np.longdouble(2) ** 1100, -np.longdouble(2) ** 1100])  # float64 makes it inf
    assert [int(b) for b in to_bits(big, FP64, "rtz")] == [0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF]  # toward 0: max
    assert [int(b) for b in to_bits(big, FP64, "rne")] == [0x7FF0000000000000, 0xFFF0000000000000]
    tiny = np.array([np.longdouble(2) ** -1100])  # below fp64's smallest subnormal 2**-1074: rup gives it
    assert int(to_bits(tiny, FP64, "rup")[0]) == 1 and int(to_bits(tiny, FP64, "rne")[0]) == 0
    assert int(to_bits(-tiny, FP64, "rne")[0]) == 1 << 63  # the sign of a zero result is kept


# ------------------------------------------------------------------ integer targets: exact inputs, exact rounding

def test_integer_targets_round_lists_once():
    # a list of a float and a big int: numpy's float64 would make 2**60 + 1 into 2**60
    assert [int(v) for v in T.convert([0.5, 2 ** 60 + 1], "s64", "rup")] == [1, 2 ** 60 + 1]
    assert [int(v) for v in T.convert([0.5, 2 ** 60 + 1], "s64", "rne")] == [0, 2 ** 60 + 1]  # 0.5: tie -> even 0
    assert [int(v) for v in T.convert([2.5, 2 ** 60 + 1], "s64", wrap=True)] == [2, 2 ** 60 + 1]
    with pytest.raises(InvalidValue, match="out of range"):
        T.convert([0.5, 2 ** 63], "s64")


@needs_wide
def test_integer_targets_round_longdoubles_once():
    half_up = _ld(Fraction(1, 2) + Fraction(1, 2 ** 60))  # float64 makes it 0.5, a tie (RNE -> 0); exactly -> 1
    assert int(T.convert(np.array([half_up]), "s8", "rne")[0]) == 1
    assert int(T.convert(np.array([-half_up]), "s8", "rne")[0]) == -1
    # 2**62 + 1 + 1/2 (64 significant bits): truncates to 2**62 + 1; float64 would have made it 2**62
    v = _ld(Fraction(2 ** 63 + 3, 2))
    assert int(T.convert(np.array([v]), "s64", "rtz")[0]) == 2 ** 62 + 1
    # wrap: 2**63 + 3 -> two's complement -(2**63) + 3 (float64 would make it 2**63 -> -(2**63))
    assert int(T.convert(np.array([_ld(Fraction(2 ** 63 + 3))]), "s64", "rtz", wrap=True)[0]) == -(2 ** 63) + 3


FTZ_DAZ = fpenv.DEFAULT | (1 << 15) | (1 << 6)  # MXCSR.FTZ (bit 15) and DAZ (bit 6), as torch.set_flush_denormal
needs_mxcsr = pytest.mark.skipif(fpenv.read() is None, reason="MXCSR is not accessible on this host")


def _under_ftz_daz(fn):
    saved = fpenv.read()
    fpenv.write(FTZ_DAZ)
    try:
        return fn()
    finally:
        fpenv.write(saved)


@needs_mxcsr
def test_float_to_integer_ignores_the_callers_ftz_daz():
    # float32 1e-45 is the smallest subnormal 2**-149 > 0: rup gives 1, rdn of its negation -1 (IEEE 754 5.8)
    x = np.array([1e-45, -1e-45], np.float32)
    assert _under_ftz_daz(lambda: T.convert(x, "s8", "rup").tolist()) == [1, 0]
    assert _under_ftz_daz(lambda: T.convert(x, "s8", "rdn").tolist()) == [0, -1]
    assert _under_ftz_daz(lambda: T.convert(x, "u8", "rup", wrap=True).tolist()) == [1, 0]
    assert _under_ftz_daz(lambda: T.convert(x, "s8", "rdn", wrap=True).tolist()) == [0, -1]


def test_options_that_cannot_apply_are_refused():
    with pytest.raises(InvalidValue, match="wrap does not apply to the float type fp32"):
        T.convert([1.0], "fp32", wrap=True)
    with pytest.raises(InvalidValue, match="ftz and nan do not apply to the integer type s8"):
        T.convert([1.0], "s8", ftz=True)
    with pytest.raises(InvalidValue, match="ftz and nan do not apply"):
        T.convert([1.0], "int32", nan="canonical")
    # the defaults and the options that apply still pass
    assert T.convert([1.0], "s8", "rtz", wrap=True).tolist() == [1]
    assert int(T.convert([1.0], "bf16", ftz=True, nan="canonical").view(np.uint16)[0]) == 0x3F80
