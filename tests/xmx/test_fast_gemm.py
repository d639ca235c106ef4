"""The unchecked stage kernel (native.fast_mma) and its a-posteriori exactness test.

The fast path computes each stage in binary64 without per-operation checks and proves elements afterwards
(native.py: multiples of 2**L, |x| + T*P <= 2**(53+L)). These tests try to break that proof: exponent spans
that exceed binary64, ties at fp32 midpoints hidden below binary64's precision, tiny elements in rows and
columns, signed zeros, overflow, non-finite inputs. Oracles: the exact Fraction oracle of tests/xmx/oracle.py
(independent of the code under test) and the numpy path (itself property-tested against the spec path).
"""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic.numerics.formats import FP32
from systolic.numerics.rounding import round_fraction
from systolic.xmx import kernels as KN
from systolic.xmx import matmul
from systolic.xmx import models as M
from systolic.xmx import native

from . import oracle as O

pytestmark = pytest.mark.skipif(not native.available(), reason="llvmlite cannot JIT on this machine")


def f32bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def oracle_stage(a, b, c, T):
    """fp32 bits of the stage model per element, exactly (Fractions), from float values."""
    m, k = a.shape
    n = b.shape[1]
    enc = lambda v: (Fraction(float(v)), bool(np.signbit(v)))  # noqa: E731  (finite values only)
    out = np.empty((m, n), dtype=np.uint32)
    for i in range(m):
        for j in range(n):
            row = [enc(a[i, kk]) for kk in range(k)]
            col = [enc(b[kk, j]) for kk in range(k)]
            out[i, j] = O.channel(row, col, int(f32bits(c[i, j])), ("stage",), T, 8 * T)
    return out


def with_sig_bits(x, bits):
    """Round float64 values to ``bits`` significant bits (like bf16 = 8, fp16 = 11)."""
    mant, e = np.frexp(x)
    return np.ldexp(np.round(mant * (1 << bits)) / (1 << bits), e)


# ---------------------------------------------------------------- ties hidden below binary64's precision

@pytest.mark.parametrize("sign", [1, -1])
def test_midpoint_tie_broken_below_binary64_is_flagged_and_right(sign):
    # x = 1, p0 = 2**-24 (half an fp32 ulp of 1), p1 = +-2**-80: the exact sum lies just above/below the fp32
    # midpoint; binary64 rounds it onto the midpoint, where a plain fptrunc ties to even (1.0): wrong for +.
    m, n = 6, 8
    a = np.tile([2.0 ** -24, sign * 2.0 ** -40], (m, 1)).astype(np.float32)
    b = np.tile([[1.0], [2.0 ** -40]], (1, n)).astype(np.float32)
    c = np.ones((m, n))
    raw, flag = native.fast_mma(a, b, c, 2, sig_bits=(24, 24))
    want = np.float32(1 + 2.0 ** -23) if sign > 0 else np.float32(1.0)
    exact = round_fraction(1 + Fraction(2) ** -24 + sign * Fraction(2) ** -80, FP32, "rne")
    assert f32bits(want) == exact  # the oracle's own rounding agrees with the hand computation
    if sign > 0:
        # the unchecked result is wrong here, so the test must not prove these elements
        assert np.all(raw != want) and np.all(flag)
    got = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=M.stage, sig_bits=(24, 24))
    assert np.all(got == exact)


def test_exponent_span_beyond_binary64_in_one_stage():
    # x ~ 2**20 with a product of 2**-40 whose low bits matter only through cancellation with the next one
    a = np.array([[2.0 ** -20, 1.0], [1.0, 2.0 ** -20]] * 3, dtype=np.float32)
    b = np.array([[2.0 ** -20] * 8, [-(2.0 ** 20) + 2.0 ** -3] * 8], dtype=np.float32)
    c = np.full((6, 8), 2.0 ** 20)
    got = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=M.stage)
    np.testing.assert_array_equal(got, oracle_stage(a.astype(np.float64), b.astype(np.float64), c, 2))


# ---------------------------------------------------------------- the proof's test against the oracle

def adversarial(rng, shape, bits, tiny_rate):
    x = with_sig_bits(rng.standard_normal(shape), bits)
    # tiny and huge elements stretch the exponent span of rows and columns (L and P of the proof)
    pick = rng.random(shape) < tiny_rate
    x = np.where(pick, x * np.ldexp(1.0, rng.integers(-60, 40, shape)), x)
    zero = rng.random(shape) < 0.05
    x = np.where(zero, np.where(rng.random(shape) < 0.5, 0.0, -0.0), x)
    return x.astype(np.float32)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 13), st.integers(1, 19), st.sampled_from([1, 2, 4]), st.integers(1, 5),
       st.sampled_from([8, 11, 24]), st.floats(0, 0.3), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_fast_equals_fraction_oracle(m, n, T, stages, bits, tiny_rate, with_c, seed):
    rng = np.random.default_rng(seed)
    k = T * stages
    a = adversarial(rng, (m, k), bits, tiny_rate)
    b = adversarial(rng, (k, n), bits, tiny_rate)
    c = (adversarial(rng, (m, n), 24, tiny_rate).astype(np.float64) * 64) if with_c else np.zeros((m, n))
    sb = (bits, bits)
    raw, flag = native.fast_mma(a, b, c, T, sig_bits=sb)
    want = oracle_stage(a.astype(np.float64), b.astype(np.float64), c, T)
    # every element the test proves is right; the full path is right everywhere
    np.testing.assert_array_equal(f32bits(raw)[~flag], want[~flag])
    got = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=M.stage, native=True, sig_bits=sb)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 20), st.integers(1, 30), st.sampled_from([1, 2, 4]), st.integers(1, 8),
       st.sampled_from(["stage", "sequential"]), st.floats(0, 0.5), st.integers(0, 2 ** 32 - 1))
def test_fast_equals_numpy_path(m, n, T, steps, model, tiny_rate, seed):
    rng = np.random.default_rng(seed)
    k = T * steps * 2
    a = adversarial(rng, (m, k), 8, tiny_rate)
    b = adversarial(rng, (k, n), 8, tiny_rate)
    c = adversarial(rng, (m, n), 24, tiny_rate).astype(np.float64)
    mdl = M.get_model(model)
    want = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=mdl, native=False)
    got = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=mdl, native=True, sig_bits=(8, 8))
    np.testing.assert_array_equal(got, want)


def test_specials_signed_zeros_and_overflow():
    rng = np.random.default_rng(3)
    m, k, n = 14, 32, 21
    a = adversarial(rng, (m, k), 8, 0.1)
    b = adversarial(rng, (k, n), 8, 0.1)
    a[0, :] = -0.0  # all-(-0) products with a -0 C: -0 results (columns of B with no negative sign)
    b[:, :5] = np.abs(b[:, :5])
    a[1, 3] = np.inf
    b[5, 2] = np.nan
    a[2, :] = 3.0e38  # overflow to infinity along the chain
    c = rng.standard_normal((m, n))
    c[0, :] = -0.0
    c = c.astype(np.float32).astype(np.float64)
    want = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=M.stage, native=False)
    got = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=M.stage, native=True, sig_bits=(8, 8))
    np.testing.assert_array_equal(got, want)
    # row 0: every product is -0 where the column of B has no negative sign and no NaN: -0 results
    neg0 = ~np.signbit(b).any(axis=0) & ~np.isnan(b).any(axis=0)
    assert neg0.any() and np.all(got[0, neg0] == 0x80000000)
    assert np.any((got[2] & 0x7F800000) == 0x7F800000)  # the 3e38 row overflows somewhere


def test_every_element_unproven_still_exact():
    # sig_bits=24 and products spanning 2**-60..2**40 leave almost nothing proven: the checked kernel and the
    # numpy path carry everything
    rng = np.random.default_rng(11)
    a = adversarial(rng, (9, 24), 24, 0.9)
    b = adversarial(rng, (24, 17), 24, 0.9)
    c = np.zeros((9, 17))
    raw, flag = native.fast_mma(a, b, c, 2)
    assert flag.mean() > 0.5
    want = oracle_stage(a.astype(np.float64), b.astype(np.float64), c, 2)
    got = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=M.stage)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- the proof's ingredients

@settings(max_examples=50, deadline=None)
@given(st.sampled_from([("bf16", 8), ("fp16", 11), ("fp32", 24)]), st.integers(0, 2 ** 32 - 1))
def test_elem_lsb_is_a_true_granularity(fmt_bits, seed):
    name, bits = fmt_bits
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 1 << 32, 256, dtype=np.uint64).astype(np.uint32)
    if name == "bf16":
        x = (raw >> 16).astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    elif name == "fp16":
        x = (raw >> 16).astype(np.uint16).view(np.float16).astype(np.float32)
    else:
        x = raw.view(np.float32)
    x = x[np.isfinite(x)]
    L = native._elem_lsb(x, bits)
    for v, e in zip(x.tolist(), L.tolist()):
        if v == 0:
            continue
        q = Fraction(v) / Fraction(2) ** int(e)
        assert q.denominator == 1, (v, e)


def test_line_stats_granularity_and_maximum():
    x = np.array([[0.0, 3.0, -0.375, 2.0 ** -133], [0.0, -0.0, 0.0, 0.0]], dtype=np.float32)
    lsb, mx = native._line_stats(x, 8, 1)
    # row 0: 2**-133 (a bf16 subnormal, 1 significant bit) is a multiple of 2**(-133-7); all the others too
    assert lsb[0] <= -133 and all((Fraction(float(v)) / Fraction(2) ** int(lsb[0])).denominator == 1
                                  for v in x[0])
    assert mx[0] == 3.0 and mx[1] == 0.0 and lsb[1] >= 600


# ---------------------------------------------------------------- through matmul, tiling edges

@settings(max_examples=15, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 50), st.sampled_from(["bf16", "fp16"]),
       st.integers(0, 2 ** 32 - 1))
def test_matmul_fast_vs_numpy_path_odd_shapes(m, n, k, prec, seed):
    rng = np.random.default_rng(seed)
    dt = ml_dtypes.bfloat16 if prec == "bf16" else np.float16
    a = (rng.standard_normal((m, k)) * np.ldexp(1.0, rng.integers(-12, 6, (m, k)))).astype(dt)
    b = (rng.standard_normal((k, n)) * np.ldexp(1.0, rng.integers(-12, 6, (k, n)))).astype(dt)
    c = rng.standard_normal((m, n)).astype(np.float32)
    got = matmul(a, b, c, device="pvc", model="stage")
    # the numpy path on the same zero-padded K
    kd = 16
    kp = -(-k // kd) * kd
    av = np.zeros((m, kp), dtype=np.float32)
    av[:, :k] = a.astype(np.float32)
    bv = np.zeros((kp, n), dtype=np.float32)
    bv[:k] = b.astype(np.float32)
    want = KN.float_mma(av, bv, c.astype(np.float64), ops_per_chan=2, k_per_instr=kd, model=M.stage,
                        native=False)
    np.testing.assert_array_equal(got.view(np.uint32), want)


# ---------------------------------------------------------------- one product per step: binary32 FMA chains

def oracle_chain_T1(a, b, c, model):
    m, k = a.shape
    n = b.shape[1]
    enc = lambda v: (Fraction(float(v)), bool(np.signbit(v)))  # noqa: E731
    out = np.empty((m, n), dtype=np.uint32)
    for i in range(m):
        for j in range(n):
            out[i, j] = O.channel([enc(a[i, kk]) for kk in range(k)], [enc(b[kk, j]) for kk in range(k)],
                                  int(f32bits(c[i, j])), (model,), 1, 8)
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 14), st.integers(1, 20), st.integers(1, 24), st.sampled_from(["stage", "sequential"]),
       st.sampled_from([8, 11, 24]), st.integers(-140, 120), st.integers(0, 2 ** 32 - 1))
def test_fma32_chain_equals_fraction_oracle(m, n, k, model, bits, scale, seed):
    # scale pushes the products into fp32's subnormal range, near overflow, or anywhere between
    rng = np.random.default_rng(seed)
    a = adversarial(rng, (m, k), bits, 0.2)
    b = adversarial(rng, (k, n), bits, 0.2)
    half = scale // 2
    with np.errstate(over="ignore", under="ignore"):
        a = (a.astype(np.float64) * 2.0 ** half).astype(np.float32)
        b = (b.astype(np.float64) * 2.0 ** (scale - half)).astype(np.float32)
        a = np.where(np.isfinite(a), a, np.float32(3.0e38))
        b = np.where(np.isfinite(b), b, np.float32(-3.0e38))
        c = (adversarial(rng, (m, n), 24, 0.3).astype(np.float64) * 2.0 ** scale).astype(np.float32)
    c = np.where(np.isfinite(c), c, np.float32(0)).astype(np.float64)
    want = oracle_chain_T1(a.astype(np.float64), b.astype(np.float64), c, model)
    got = KN.float_mma(a, b, c, ops_per_chan=1, k_per_instr=8, model=M.get_model(model), native=True)
    np.testing.assert_array_equal(got, want)


def test_fma32_subnormals_signed_zero_and_specials():
    n = 9
    a = np.array([[2.0 ** -75, 2.0 ** -75], [-0.0, -0.0], [np.inf, 1.0]], dtype=np.float32)
    b = np.array([[2.0 ** -74] * n, [2.0 ** -75] * n], dtype=np.float32)
    b[:, 0] = -b[:, 0]
    c = np.array([[0.0] * n, [-0.0] * n, [1.0] * n])
    got = KN.float_mma(a, b, c, ops_per_chan=1, k_per_instr=8, model=M.stage, native=True)
    # row 0: 2**-149 (the smallest subnormal, kept, not flushed), then + 2**-150 = 1.5 * 2**-149, a tie that
    # goes to the even 2 * 2**-149; column 0: the negative of it
    assert got[0, 1] == 2 and got[0, 0] == 0x80000002
    # row 1: -0 + (-0 * +x) + (-0 * +x) = -0; column 0: -0 * -x = +0, so +0
    assert np.all(got[1, 1:] == 0x80000000) and got[1, 0] == 0
    # row 2: an infinity: the model's infinity, not a hardware NaN
    assert np.all(got[2] == np.where(b[0] > 0, 0x7F800000, 0xFF800000))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_tf32_rounding_shortcut_equals_element_bits(seed):
    from systolic.xmx import gemm as G
    from systolic.xmx import pack as PK
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32)
    # ties and near-ties at the 13th bit, every exponent including subnormals, the largest finite values
    low = np.array([0x1000, 0x0FFF, 0x1001, 0x3000, 0x2000, 0x1FFF, 0], dtype=np.uint32)
    u[:2048] = (u[:2048] & np.uint32(0xFFFFE000)) | low[rng.integers(0, low.size, 2048)]
    u[:64] = np.uint32(0x7F7FF000) | (u[:64] & np.uint32(0x80000FFF))
    x = u.view(np.float32)
    got = G._tf32_rne(x)
    want = PK.element_bits(x, "tf32").view(np.float32)
    fin = ~np.isnan(x)
    np.testing.assert_array_equal(got[fin].view(np.uint32), want[fin].view(np.uint32))
    assert np.all(np.isnan(got[~fin])) and np.all(np.isnan(want[~fin]))


@pytest.mark.parametrize("T, bits", [(2, 8), (2, 11), (4, 4), (8, 2)])
def test_many_chunks_with_tiny_elements_equal_numpy_path(T, bits):
    # K = 256: eight chunks of the kernel's test; tiny elements in some chunks of some rows and columns, a
    # nonzero C, and stage sums that cancel, so that some elements are proven and others are not
    rng = np.random.default_rng(100 + T)
    m, k, n = 20, 256, 24

    def data(shape):  # values of `bits` significant bits; 2% of them 2**-6 .. 2**-16 times smaller
        x = with_sig_bits(rng.standard_normal(shape), bits)
        tiny = rng.random(shape) < 0.02
        return np.where(tiny, x * np.ldexp(1.0, rng.integers(-16, -6, shape)), x).astype(np.float32)

    a, b = data((m, k)), data((k, n))
    b[:, 3] = -b[:, 2]
    c = (rng.standard_normal((m, n)) * 16).astype(np.float32).astype(np.float64)
    raw, flag = native.fast_mma(a, b, c, T, sig_bits=(bits, bits))
    if T == 2:  # bf16/fp16-like data: the test proves most elements (checked, so the comparison below bites)
        assert flag.mean() < 0.5
    want = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=M.stage, native=False)
    np.testing.assert_array_equal(f32bits(raw)[~flag], want[~flag])
    got = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=M.stage, native=True,
                       sig_bits=(bits, bits))
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- Veltkamp rounding: its two extra conditions

def test_fp32_subnormal_stage_results_with_bits_below_2_pow_minus_149():
    # products of bf16 values near 2**-70 land in fp32's subnormal range with bits below 2**-149: fp32 rounds
    # them to the subnormal grid, Veltkamp's 24-bit rounding would not; the test (L >= -149) must catch them
    rng = np.random.default_rng(21)
    m, k, n = 6, 32, 8
    a = with_sig_bits(rng.uniform(1, 2, (m, k)), 8) * 2.0 ** -70 * rng.choice([-1, 1], (m, k))
    b = with_sig_bits(rng.uniform(1, 2, (k, n)), 8) * 2.0 ** -74 * rng.choice([-1, 1], (k, n))
    a, b = a.astype(np.float32), b.astype(np.float32)
    c = np.zeros((m, n))
    raw, flag = native.fast_mma(a, b, c, 2, sig_bits=(8, 8))
    want = oracle_stage(a.astype(np.float64), b.astype(np.float64), c, 2)
    assert flag.all(), "sums on fp32's subnormal grid with bits below 2**-149 must not be proven"
    got = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=M.stage, sig_bits=(8, 8))
    np.testing.assert_array_equal(got, want)
    # the results really are subnormal and need fp32's subnormal rounding
    v = want.view(np.float32)
    assert np.all((np.abs(v) < 2.0 ** -126) & (v != 0))


def test_stage_overflowing_then_cancelled_is_not_finite():
    # stage 1: x = 0 + 2**127*1.5 + 2**127*1.5 = 3*2**127 >= 2**128: the model overflows to +inf and stays
    # infinite (inf - big = inf); binary64 plus Veltkamp would carry 3*2**127 and come back to a finite value
    m, k, n = 6, 32, 8
    a = np.full((m, k), 1.5, dtype=np.float32)
    b = np.zeros((k, n), dtype=np.float32)
    b[0:2] = 2.0 ** 127
    b[2:4] = -(2.0 ** 127)
    c = np.zeros((m, n))
    raw, flag = native.fast_mma(a, b, c, 2, sig_bits=(8, 8))
    assert flag.all()
    want = oracle_stage(a.astype(np.float64), b.astype(np.float64), c, 2)
    got = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=M.stage, sig_bits=(8, 8))
    np.testing.assert_array_equal(got, want)
    assert np.all(~np.isfinite(want.view(np.float32)))


@pytest.mark.parametrize("case", ["inf_times_zero_chunk", "negative_nan"])
def test_nan_results_are_the_models_nan_not_x86s(case):
    # inf * 0 (an infinity in A against an all-zero 32-element chunk of B) makes x86's default NaN, sign bit set,
    # and so does a -NaN input; the model writes 0x7FC00000. Such elements must fail the kernel's test (review).
    a = np.ones((16, 32), dtype=ml_dtypes.bfloat16)
    b = np.zeros((32, 16), dtype=ml_dtypes.bfloat16) if case == "inf_times_zero_chunk" else \
        np.ones((32, 16), dtype=ml_dtypes.bfloat16)
    a[3, 5] = np.inf if case == "inf_times_zero_chunk" else -np.nan
    got = matmul(a, b, device="pvc").view(np.uint32)
    assert np.all(got[3] == 0x7FC00000)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = KN.float_mma(a64, b64, None, ops_per_chan=2, k_per_instr=16, model=M.stage, native=False)
    np.testing.assert_array_equal(got, want)
