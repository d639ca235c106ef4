"""The integer fast path of ``to_bits`` is bit-identical to the general (frexp/ldexp) path.

``to_bits`` takes the fast path for float32/float64 input converted to fp32, tf32, bf16, fp16 and bf8; the general
path ``_to_bits_f64`` is called directly here as the reference, on the float64 widening of the input (what
``to_bits`` always did). Every mode x saturate x ftz x NaN rule is checked on adversarial inputs: raw bit patterns
(NaNs with payloads, infinities, subnormals), and values at, around and between every rounding boundary of the
target (exact values, ties, quarter points where FTZ's tininess-after-rounding changes, the overflow threshold).
The independent oracles (ml_dtypes, numpy casts, integer tricks, exact rationals) are in test_rounding.py, which
now runs through the fast path too.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from systolic.numerics import BF8, BF16, E2M1, FP16, FP32, FP64, HF8, TF32, decode_fraction, rounding, to_bits

FAST = [FP32, TF32, BF16, FP16, BF8]
DTYPES = [np.float32, np.float64]
UINT = {np.float32: np.uint32, np.float64: np.uint64}
COMBOS = list(itertools.product(rounding.MODES, (False, True), (False, True), ("quiet", "canonical")))


def _general(a: np.ndarray, fmt, mode, sat, ftz, nan) -> np.ndarray:
    with np.errstate(all="ignore"):
        return rounding._to_bits_f64(a.astype(np.float64), fmt, mode, sat, ftz, nan)


def _check_all_combos(a: np.ndarray, fmt) -> None:
    assert rounding._fast_applies(a.dtype, fmt)
    for mode, sat, ftz, nan in COMBOS:
        want = _general(a, fmt, mode, sat, ftz, nan)
        got = to_bits(a, fmt, mode, saturate=sat, ftz=ftz, nan=nan)
        assert got.dtype == want.dtype and got.shape == want.shape
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (fmt.name, a.dtype.name, mode, sat, ftz, nan,
                               [hex(int(a.view(UINT[a.dtype.type]).flat[i])) for i in bad[:4]],
                               [hex(int(want.flat[i])) for i in bad[:4]], [hex(int(got.flat[i])) for i in bad[:4]])


def _next_value(t: int, fmt) -> Fraction:
    """The value after non-negative finite pattern ``t`` (2**(emax+1) after the largest finite one)."""
    if t == rounding._max_bits(fmt):
        return Fraction(2) ** (fmt.emax + 1)
    return decode_fraction(t + 1, fmt)


def _boundary_pattern(dtype, fmt, t: int, quarter: int, delta: int, negative: bool) -> int:
    """A source pattern ``delta`` source ulps from t's value + quarter/4 of the gap to the next value of fmt:
    quarter 0 is a value of fmt, 2 a tie, 1 and 3 where FTZ's unbounded-exponent rounding turns."""
    lo = decode_fraction(t, fmt)
    q = lo + (_next_value(t, fmt) - lo) * quarter / 4
    with np.errstate(all="ignore"):  # exact except where too fine for float32 (any input will do)
        p = int(np.array(float(q), dtype=dtype).view(UINT[dtype])) + delta
    p = min(max(p, 0), (1 << (8 * np.dtype(dtype).itemsize - 1)) - 1)
    return p | ((1 << (8 * np.dtype(dtype).itemsize - 1)) if negative else 0)


def _key_patterns(fmt) -> st.SearchStrategy[int]:
    """Target patterns where things happen: zero, subnormals, the smallest normal, 1.0, the largest finite."""
    m = fmt.man_bits
    maxb = rounding._max_bits(fmt)
    one = fmt.bias << m
    return st.one_of(st.integers(0, maxb), st.sampled_from([0, 1, 2, (1 << m) - 2, (1 << m) - 1, 1 << m,
                                                             (1 << m) + 1, one - 1, one, maxb - 1, maxb]),
                     st.integers(0, (1 << m) + 3), st.integers(maxb - 3, maxb))


def _inputs(dtype, fmt) -> st.SearchStrategy[np.ndarray]:
    width = 8 * np.dtype(dtype).itemsize
    raw = st.integers(0, (1 << width) - 1)
    man = 52 if width == 64 else 23
    exp_all = ((1 << (11 if width == 64 else 8)) - 1) << man
    sign = 1 << (width - 1)
    special = st.tuples(st.integers(0, (1 << man) - 1), st.booleans()).map(
        lambda t: exp_all | t[0] | (sign if t[1] else 0))  # inf and NaNs with any payload
    source_edges = st.tuples(st.sampled_from([0, 1, 2, (1 << man) - 1, 1 << man, exp_all - 1]), st.booleans()).map(
        lambda t: t[0] | (sign if t[1] else 0))  # zeros, source subnormals, the largest finite
    near = st.builds(lambda t, q, d, s: _boundary_pattern(dtype, fmt, t, q, d, s),
                     _key_patterns(fmt), st.integers(0, 3), st.integers(-2, 2), st.booleans())
    pats = st.one_of(st.lists(st.one_of(near, raw, special, source_edges), min_size=1, max_size=24),
                     st.lists(near, min_size=1, max_size=24))  # boundary values only: often no tiny input
    return pats.map(lambda ps: np.array(ps, dtype=UINT[dtype]).view(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("fmt", FAST, ids=lambda f: f.name)
@settings(max_examples=40)
@given(data=st.data())
def test_fast_equals_general(dtype, fmt, data):
    a = data.draw(_inputs(dtype, fmt))
    _check_all_combos(a, fmt)
    # the same values without any input below fmt's smallest normal: the fast path's other branch
    with np.errstate(invalid="ignore"):
        rest = a[~(np.abs(a) < fmt.min_normal)]
    if rest.size:
        _check_all_combos(rest, fmt)


def _window(dtype, value: float, half: int) -> np.ndarray:
    """All patterns of ``dtype`` within ``half`` steps of |value|'s, both signs."""
    u = UINT[dtype]
    with np.errstate(all="ignore"):
        p = int(np.array(value, dtype=dtype).view(u))
    pats = np.arange(max(p - half, 0), p + half + 1, dtype=np.uint64)
    pats = np.concatenate([pats, pats | np.uint64(1 << (8 * np.dtype(dtype).itemsize - 1))])
    return pats.astype(u).view(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("fmt", FAST, ids=lambda f: f.name)
def test_exhaustive_windows_around_boundaries(dtype, fmt):
    """Every input pattern near the target's critical values: rounding, FTZ and overflow thresholds."""
    sub, nrm = fmt.min_subnormal, fmt.min_normal
    keys = [0.0, sub / 2, sub, 1.5 * sub, nrm - sub, nrm - sub / 2, nrm - sub / 4, nrm, 1.0,
            fmt.max, float((fmt.max_fraction + Fraction(2) ** (fmt.emax + 1)) / 2),  # the overflow threshold
            2.0 ** (fmt.emax + 1), np.inf, np.nan]
    a = np.concatenate([_window(dtype, k, 300) for k in keys])
    _check_all_combos(a, fmt)


@pytest.mark.parametrize("fmt", [BF16, FP16], ids=lambda f: f.name)
def test_exhaustive_float32_low_bits(fmt):
    """All float32 inputs whose high bits sit on the target's boundaries (every bit the rounding drops)."""
    if fmt is BF16:  # the high half is the bf16 pattern: largest subnormal, min normal, 1.0, max, inf (then NaNs)
        highs = [0x007F, 0x0080, 0x3F80, 0x7F7F, 0x7F80]
        shift, low = 16, 1 << 16
    else:  # fp16 drops 13 bits: the fp32 patterns of fp16's min normal, its largest subnormal's neighbourhood,
        # 1.0 and the largest finite (the overflow threshold lies in its window)
        pat = lambda v: int(np.float32(v).view(np.uint32)) >> 13  # noqa: E731
        highs = [pat(2.0 ** -14) - 1, pat(2.0 ** -14), pat(2.0 ** -15), pat(2.0 ** -25), pat(1.0), pat(65504.0),
                 pat(65536.0) - 1]
        shift, low = 13, 1 << 13
    pats = (np.array(highs, dtype=np.uint64)[:, None] << np.uint64(shift)) + np.arange(low, dtype=np.uint64)
    pats = pats.ravel()
    pats = np.concatenate([pats, pats | np.uint64(1 << 31)]).astype(np.uint32)
    _check_all_combos(pats.view(np.float32), fmt)


def test_dispatch():
    for dt in DTYPES:
        for fmt in FAST:
            assert rounding._fast_applies(np.dtype(dt), fmt)
        for fmt in (HF8, E2M1, FP64):  # no infinity, or nothing to narrow: the general path
            assert not rounding._fast_applies(np.dtype(dt), fmt)
    assert not rounding._fast_applies(np.dtype(np.float16), FP16)
    assert not rounding._fast_applies(np.dtype(">f8"), BF16)  # foreign byte order: not a plain view


def test_shapes_strides_and_byte_order():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 10)) * 1e4
    for fmt in FAST:
        want = _general(x, fmt, "rne", False, False, "quiet")
        assert to_bits(x, fmt).tolist() == want.tolist()
        assert to_bits(x[:, ::3], fmt).tolist() == want[:, ::3].tolist()  # non-contiguous view
        assert to_bits(x.T, fmt).tolist() == want.T.tolist()
        assert to_bits(x.astype(">f8"), fmt).tolist() == want.tolist()  # general path, same answer
        z = to_bits(np.float32(-1.5), fmt)
        assert z.shape == () and int(z) == int(_general(np.array(np.float32(-1.5)), fmt, "rne", False, False,
                                                                   "quiet"))
        assert to_bits(np.zeros((0, 3)), fmt).shape == (0, 3)


@pytest.mark.parametrize("x", [1e-7, np.float32(7.34684e-40), np.array(3e-8), 1.5, -0.0, np.float64(np.inf)])
@pytest.mark.parametrize("fmt", [FP16, BF16, FP32, TF32])
def test_scalars_and_0d_inputs_give_0d_arrays(x, fmt):
    # review: a scalar below the smallest normal crashed the fast path (item assignment into a numpy scalar)
    got = rounding.to_bits(x, fmt, "rup")
    assert isinstance(got, np.ndarray) and got.shape == ()
    want = rounding._to_bits_f64(np.asarray(x, dtype=np.float64).reshape(1), fmt, "rup", False, False, "quiet")
    assert int(got) == int(want[0])
