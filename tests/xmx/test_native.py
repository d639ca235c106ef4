"""The compiled stage/sequential kernel (llvmlite) is bit-identical to the numpy path, flagged elements included."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic.xmx import kernels as KN
from systolic.xmx import models as M
from systolic.xmx import native

pytestmark = pytest.mark.skipif(not native.available(), reason="llvmlite cannot JIT on this machine")

POOL = np.array([0.0, -0.0, 1.0, -1.0, 2.0 ** -133, -(2.0 ** -126), 2.0 ** 100, -(2.0 ** 127), 3.0e38, np.inf,
                 -np.inf, np.nan, 1.0 + 2.0 ** -7, 2.0 ** -24, 1.5, 0.75], dtype=np.float64)


def values(rng, shape, adversarial, bf16_like=True):
    x = rng.standard_normal(shape)
    if bf16_like:  # 8 significant bits, like bf16 inputs
        m, e = np.frexp(x)
        x = np.ldexp(np.round(m * 256) / 256, e)
    if adversarial:
        pick = rng.random(shape) < 0.3
        x = np.where(pick, POOL[rng.integers(0, len(POOL), shape)], x)
    return x.astype(np.float32).astype(np.float64)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 11), st.integers(1, 21), st.sampled_from([1, 2, 4, 8]), st.integers(1, 6),
       st.booleans(), st.integers(0, 2 ** 32 - 1), st.sampled_from(["stage", "sequential"]))
def test_native_equals_numpy(m, n, T, steps, adversarial, seed, model):
    rng = np.random.default_rng(seed)
    k = T * steps
    a, b = values(rng, (m, k), adversarial), values(rng, (k, n), adversarial)
    c = values(rng, (m, n), adversarial, bf16_like=False)
    mdl = M.get_model(model)
    want = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=mdl, native=False)
    got = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=mdl, native=True)
    np.testing.assert_array_equal(got, want)


def test_native_larger_block_with_ties():
    # bf16-like data makes exact fp32 ties common: round-to-odd must resolve them as the numpy path does
    rng = np.random.default_rng(5)
    a, b = values(rng, (13, 64), False), values(rng, (64, 37), False)
    c = values(rng, (13, 37), False, bf16_like=False)
    for T in (1, 2, 4):
        want = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=M.stage, native=False)
        got = KN.float_mma(a, b, c, ops_per_chan=T, k_per_instr=8 * T, model=M.stage, native=True)
        np.testing.assert_array_equal(got, want)


def test_native_round_to_odd_breaks_a_double_rounding_tie():
    # 1 + 2**-24 + 2**-80: binary64 rounds to the fp32 midpoint 1 + 2**-24; the exact value is above it, so the
    # fp32 result is 1 + 2**-23 (a plain double then float rounding would give 1.0)
    m, n = 4, 8
    a = np.tile([2.0 ** -24, 2.0 ** -80], (m, 1))
    b = np.ones((2, n))
    c = np.ones((m, n))
    for native_ in (True, False):
        got = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=M.stage, native=native_)
        assert np.all(got.view(np.float32) == np.float32(1 + 2.0 ** -23))


def test_many_flagged_elements_are_recomputed_in_chunks():
    # NaN in every row of A flags every element; infinities and overflow flag others: results equal the numpy path
    rng = np.random.default_rng(9)
    m, k, n = 40, 48, 33
    a = values(rng, (m, k), False)
    b = values(rng, (k, n), True)
    a[:, 5] = np.nan
    a[3, :] = np.inf
    c = values(rng, (m, n), True, bf16_like=False)
    want = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=M.stage, native=False)
    got = KN.float_mma(a, b, c, ops_per_chan=2, k_per_instr=16, model=M.stage, native=True)
    np.testing.assert_array_equal(got, want)
    assert np.all(got == M.DEFAULT_NAN)


@pytest.mark.skipif(not native.available(), reason="no JIT kernel on this CPU")
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 90), st.integers(0, 2**32 - 1))
@settings(max_examples=25, deadline=None)
def test_fma32_result_buffer_is_never_read_without_c(m, k, n, seed):
    """The sequential kernel's result buffer starts uninitialised when C is zero: fill it with NaNs and the bits
    must equal those from a zeroed buffer (numpy's float32 FMA-free reference is not bit-exact here; the
    oracle is the same kernel on a buffer the kernel cannot have mistaken for C)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    real = native._result_buffer
    try:
        native._result_buffer = lambda shape: np.full(shape, np.nan, np.float32)
        poisoned, _ = native.fma32_mma(a, b, None)
        native._result_buffer = lambda shape: np.zeros(shape, np.float32)
        zeroed, _ = native.fma32_mma(a, b, None)
    finally:
        native._result_buffer = real
    assert np.array_equal(poisoned.view(np.uint32), zeroed.view(np.uint32))
