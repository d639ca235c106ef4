"""Conversions to the narrow float formats, against independent oracles.

Oracles, none of them our rounding code:
* enumeration: every finite value of a <= 16-bit format, decoded by a formula written here, sorted; the correct
  RNE result is found by bisection (ties to the even bit pattern), RTZ by the largest magnitude not above |x|;
* ml_dtypes / numpy casts (RNE) where they define the same conversion;
* integer bit tricks for fp32 -> tf32 / bf16 (the classic "add 0x7FFF + lsb" rounding);
* numpy's float64 -> float32 cast (IEEE RNE in C).
"""

from __future__ import annotations

import bisect
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from systolic.errors import InvalidValue
from systolic.numerics import (BF8, BF16, E2M1, FP16, FP32, HF8, TF32, decode, decode_fraction, from_bits,
                               round_fraction, to_bits)

SMALL = [BF16, FP16, BF8, HF8, E2M1]


def _value(bits: int, e_bits: int, m_bits: int, nan: str) -> Fraction | None:
    """Independent decoder: None for inf/NaN encodings."""
    sign = -1 if bits >> (e_bits + m_bits) else 1
    e = (bits >> m_bits) & ((1 << e_bits) - 1)
    f = bits & ((1 << m_bits) - 1)
    bias = 2 ** (e_bits - 1) - 1
    if nan == "ieee" and e == 2 ** e_bits - 1:
        return None
    if nan == "fn" and e == 2 ** e_bits - 1 and f == 2 ** m_bits - 1:
        return None
    if e == 0:
        return sign * Fraction(f, 2 ** m_bits) * Fraction(2) ** (1 - bias)
    return sign * (1 + Fraction(f, 2 ** m_bits)) * Fraction(2) ** (e - bias)


class Table:
    """All non-negative finite values of a format, sorted, with their bit patterns."""

    def __init__(self, fmt):
        self.fmt = fmt
        pos = []
        for b in range(1 << (fmt.bits - 1)):
            v = _value(b, fmt.exp_bits, fmt.man_bits, fmt.nan)
            if v is not None:
                pos.append((v, b))
        pos.sort()
        self.vals = [v for v, _ in pos]
        self.bits = [b for _, b in pos]

    def rne(self, x: Fraction) -> int | None:
        """Bits of RNE(x) by search; None if |x| rounds beyond the largest finite value."""
        sign = self.fmt.sign_bit if x < 0 else 0
        a = abs(x)
        i = bisect.bisect_left(self.vals, a)
        if i < len(self.vals) and self.vals[i] == a:
            return self.bits[i] | sign
        if i == len(self.vals):
            # beyond max: IEEE overflow threshold is max + half an ulp of the next binade
            top = self.vals[-1]
            ulp = top - self.vals[-2]
            # the "virtual" next value max + ulp has an odd significand in "fn" formats (it is the NaN
            # pattern S.1111.111), an even one (the next power of two) in IEEE formats: ties go to the even one
            if self.fmt.nan == "fn":
                return None if a > top + ulp / 2 else self.bits[-1] | sign
            return None if a >= top + ulp / 2 else self.bits[-1] | sign
        lo, hi = self.vals[i - 1], self.vals[i]
        if a - lo < hi - a:
            return self.bits[i - 1] | sign
        if a - lo > hi - a:
            return self.bits[i] | sign
        return (self.bits[i - 1] if self.bits[i - 1] % 2 == 0 else self.bits[i]) | sign

    def rtz(self, x: Fraction) -> int:
        sign = self.fmt.sign_bit if x < 0 else 0
        i = bisect.bisect_right(self.vals, abs(x))
        return self.bits[i - 1] | sign


class _Tables(dict):
    """Built on first use: enumerating the 16-bit formats takes a few seconds."""

    def __missing__(self, name):
        self[name] = Table({f.name: f for f in SMALL}[name])
        return self[name]


TABLES = _Tables()


def _fractions(fmt):
    """Interesting exact inputs near the format's values: midpoints, neighbours, extremes."""
    t = TABLES[fmt.name]
    out = []
    for k in range(len(t.vals) - 1):
        lo, hi = t.vals[k], t.vals[k + 1]
        out += [lo, (lo + hi) / 2, lo + (hi - lo) / 3, hi - (hi - lo) / 1024]
    return out


@pytest.mark.parametrize("fmt", [BF8, HF8, E2M1, FP16], ids=lambda f: f.name)
def test_round_fraction_matches_enumeration(fmt):
    t = TABLES[fmt.name]
    for x in _fractions(fmt)[:: 1 if fmt.bits <= 8 else 151]:
        for s in (1, -1):
            q = s * x
            want = t.rne(q)
            got = round_fraction(q, fmt, "rne")
            if want is None:  # overflow: inf (IEEE) or NaN ("fn"); formats without either saturate
                if fmt.nan == "none":
                    assert got == t.bits[-1] | (fmt.sign_bit if q < 0 else 0)
                else:
                    v = decode_fraction(got, fmt)
                    assert isinstance(v, float) and (v != v or abs(v) == float("inf")), (fmt.name, q, got)
            else:
                assert got == want, (fmt.name, q)
            assert round_fraction(q, fmt, "rtz") == t.rtz(q) or q == 0


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_vector_matches_scalar_on_table_points(fmt):
    pts = [float(x) for x in _fractions(fmt)[:: 1 if fmt.bits <= 8 else 211]]
    arr = np.array(pts + [-p for p in pts], dtype=np.float64)
    for mode in ("rne", "rtz", "rup", "rdn"):
        for sat in (False, True):
            vec = to_bits(arr, fmt, mode, saturate=sat)
            sca = [round_fraction(Fraction(x), fmt, mode, negative_zero=bool(np.signbit(x)), saturate=sat)
                   for x in arr]
            assert vec.tolist() == sca, (fmt.name, mode, sat)


# ------------------------------------------------ against ml_dtypes / numpy

ML = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16, "bf8": ml_dtypes.float8_e5m2,
      "hf8": ml_dtypes.float8_e4m3fn, "e2m1": ml_dtypes.float4_e2m1fn}

f32_any = st.integers(0, 2 ** 32 - 1).map(lambda b: np.uint32(b).view(np.float32))


@settings(max_examples=400, deadline=None)
@given(st.lists(f32_any, min_size=1, max_size=64))
def test_matches_ml_dtypes_rne(xs):
    a = np.array(xs, dtype=np.float32)
    a = a[~np.isnan(a)]
    for fmt in SMALL:
        ours = to_bits(a, fmt, nan="canonical")
        with np.errstate(all="ignore"):
            theirs = a.astype(ML[fmt.name]).view(np.uint8 if fmt.bits <= 8 else np.uint16)
        assert ours.tolist() == theirs.astype(np.uint64).tolist(), fmt.name


def test_nan_rules():
    snan = np.array([np.uint32(0x7F800001).view(np.float32), np.uint32(0xFFC12345).view(np.float32)])
    # canonical: sign + default quiet NaN, as ml_dtypes
    assert to_bits(snan, BF16, nan="canonical").tolist() == [0x7FC0, 0xFFC0]
    assert to_bits(snan, BF8, nan="canonical").tolist() == [0x7E, 0xFE]
    # quiet (x86): top payload bits kept, quiet bit set
    assert to_bits(snan, BF16).tolist() == [0x7FC0, 0xFFC1]
    assert to_bits(snan, FP16).tolist() == [0x7E00, 0xFE09]
    assert to_bits(snan, HF8).tolist() == [0x7F, 0xFF]
    with pytest.raises(InvalidValue, match="no encoding in e2m1"):
        to_bits(snan, E2M1)


def test_overflow_rules():
    big = np.array([1e30, -1e30, np.inf, -np.inf])
    assert to_bits(big, BF8).tolist() == [0x7C, 0xFC, 0x7C, 0xFC]  # inf
    assert to_bits(big, BF8, saturate=True).tolist() == [0x7B, 0xFB, 0x7B, 0xFB]  # +-57344
    assert to_bits(big, HF8).tolist() == [0x7F, 0xFF, 0x7F, 0xFF]  # NaN (no inf)
    assert to_bits(big, HF8, saturate=True).tolist() == [0x7E, 0xFE, 0x7E, 0xFE]  # +-448
    assert to_bits(big, E2M1).tolist() == [0x7, 0xF, 0x7, 0xF]  # +-6 always
    assert to_bits(big[:2], FP16, "rtz").tolist() == [0x7BFF, 0xFBFF]  # toward zero never overflows
    assert to_bits(big[:2], FP16, "rup").tolist() == [0x7C00, 0xFBFF]
    # ties at the overflow threshold: 65520 = max + half ulp rounds to inf, just below stays max
    assert to_bits(np.array([65520.0, 65519.998]), FP16).tolist() == [0x7C00, 0x7BFF]
    # E4M3: 464 is the tie between 448 (S.1111.110, even) and the NaN pattern: RNE keeps 448
    assert to_bits(np.array([464.0, 464.01]), HF8).tolist() == [0x7E, 0x7F]


# ------------------------------------------------ fp32 -> tf32 / bf16 by bit tricks

def _rne_trunc_bits(u: int, drop: int) -> int:
    """Independent integer RNE of an fp32 pattern to (32 - drop) bits (finite inputs)."""
    lsb = (u >> drop) & 1
    return ((u + (1 << (drop - 1)) - 1 + lsb) >> drop) << drop


@settings(max_examples=500, deadline=None)
@given(st.lists(st.integers(0, 2 ** 32 - 1), min_size=1, max_size=32))
def test_tf32_and_bf16_match_integer_rounding(us):
    u = np.array(us, dtype=np.uint32)
    x = u.view(np.float32)
    finite = np.isfinite(x)
    u, x = u[finite], x[finite]
    tf = to_bits(x, TF32)
    bf = to_bits(x, BF16)
    for ui, ti, bi in zip(u.tolist(), tf.tolist(), bf.tolist()):
        t = _rne_trunc_bits(ui, 13)
        b = _rne_trunc_bits(ui, 16)
        if (t >> 23) & 0xFF != 0xFF:  # did not overflow to the inf exponent
            assert ti == t
        if (b >> 23) & 0xFF != 0xFF:
            assert bi == b >> 16


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2 ** 64 - 1), min_size=1, max_size=32))
def test_fp64_to_fp32_matches_numpy_cast(us):
    x = np.array(us, dtype=np.uint64).view(np.float64)
    x = x[~np.isnan(x)]
    with np.errstate(all="ignore"):
        want = x.astype(np.float32).view(np.uint32)
    assert to_bits(x, FP32).tolist() == want.tolist()


# ------------------------------------------------ flush to zero, decode

def test_ftz_detects_tininess_after_rounding():
    # just below the smallest normal: rounds (unbounded exponent, 24 bits) to 2**-126 -> not tiny, kept
    x1 = Fraction(2) ** -126 - Fraction(2) ** -152
    assert round_fraction(x1, FP32, ftz=True) == 0x00800000
    # a bit further below: rounds to 2**-126 on the subnormal grid but is tiny after rounding -> flushed
    x2 = Fraction(2) ** -126 - Fraction(2) ** -150 + Fraction(2) ** -153
    assert round_fraction(x2, FP32) == 0x00800000
    assert round_fraction(x2, FP32, ftz=True) == 0
    assert round_fraction(-x2, FP32, ftz=True) == 0x80000000
    v = np.array([float(x1), float(x2), -float(x2), 1e-40, 1.0])
    assert to_bits(v, FP32, ftz=True).tolist() == [0x00800000, 0, 0x80000000, 0, 0x3F800000]


@pytest.mark.parametrize("fmt", SMALL + [TF32], ids=lambda f: f.name)
def test_decode_all_patterns(fmt):
    n = 1 << fmt.bits
    if fmt is TF32:
        pats = np.arange(0, 1 << 19, 7, dtype=np.uint64) << np.uint64(13)
    else:
        pats = np.arange(n, dtype=np.uint64)
    vec = from_bits(pats, fmt)
    for p, v in zip(pats.tolist()[:: max(1, len(pats) // 3000)], vec.tolist()[:: max(1, len(pats) // 3000)]):
        ind = _value(p >> (fmt.container_bits - fmt.bits), fmt.exp_bits, fmt.man_bits, fmt.nan)
        s = decode(p, fmt)
        if ind is None:
            assert np.isnan(v) or np.isinf(v)
            assert (np.isnan(v) and np.isnan(s)) or v == s
        else:
            assert Fraction(v) == ind and Fraction(s) == ind
            assert np.signbit(v) == bool(p >> (fmt.container_bits - 1)) == np.signbit(s)


def test_daz_and_roundtrip():
    sub = np.array([0x0001, 0x8001, 0x0400], dtype=np.uint16)
    assert from_bits(sub, FP16, daz=True).tolist() == [0.0, -0.0, 2.0 ** -14]
    assert np.signbit(from_bits(sub, FP16, daz=True)[1])
    # every finite bf16 and fp16 value survives a round trip
    for fmt in (BF16, FP16):
        pats = np.arange(1 << 16, dtype=np.uint64)
        vals = from_bits(pats, fmt)
        keep = np.isfinite(vals)
        assert (to_bits(vals[keep], fmt) == pats[keep]).all()


def test_bad_mode():
    with pytest.raises(InvalidValue, match="rounding mode"):
        to_bits(np.ones(2), BF16, "nearest")
    with pytest.raises(InvalidValue, match="rounding mode"):
        round_fraction(Fraction(1), BF16, "up")


f64_any = st.integers(0, 2 ** 64 - 1).map(lambda b: float(np.uint64(b).view(np.float64)))
f64_near = st.tuples(st.integers(-160, 20), st.integers(0, 2 ** 52 - 1), st.booleans()).map(
    lambda t: (-1 if t[2] else 1) * float(np.ldexp(1.0 + t[1] / 2.0 ** 52, t[0])))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(f64_any, f64_near, st.sampled_from([0.0, -0.0, 5e-324, 2.0 ** -126, 2.0 ** -149])),
                min_size=1, max_size=16),
       st.sampled_from(["rne", "rtz", "rup", "rdn"]), st.booleans(), st.booleans())
def test_vector_equals_exact_scalar(xs, mode, sat, ftz):
    """The vectorised converter and the exact rational one agree on every format, mode and flag."""
    a = np.array([x for x in xs if not np.isnan(x)], dtype=np.float64)
    for fmt in SMALL + [TF32, FP32]:
        vec = to_bits(a, fmt, mode, saturate=sat, ftz=ftz).tolist()
        for x, v in zip(a.tolist(), vec):
            if np.isinf(x):
                continue
            want = round_fraction(Fraction(x), fmt, mode, negative_zero=bool(np.signbit(x)), saturate=sat, ftz=ftz)
            assert v == want, (fmt.name, x, mode, sat, ftz)
