"""systolic.jit.int_gemm, the exact integer GEMM of hosts without AMX (PMADDWD pairs, int32 lanes wrapping): equal to
the exact product modulo 2**32 (an int64 / Python-int oracle), at both vector widths, and behind amx.matmul /
xmx.matmul equal to their numpy paths (SYSTOLIC_NO_NATIVE)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic import amx, xmx
from systolic.jit import int_gemm

pytestmark = pytest.mark.skipif(not int_gemm.available(), reason="llvmlite cannot JIT on this machine")


def _exact(a, b, c):
    acc = a.astype(object) @ b.astype(object) if a.shape[1] else np.zeros((a.shape[0], b.shape[1]), object)
    if c is not None:
        acc = acc + np.asarray(c).astype(object)
    return (acc % (1 << 32)).astype(np.uint64).astype(np.uint32).view(np.int32)


@pytest.mark.parametrize("width", ["128", "256", "512"])
@settings(max_examples=20, deadline=None)
@given(st.integers(1, 30), st.integers(0, 90), st.integers(1, 40), st.sampled_from([(-128, 127), (0, 255), (-8, 7)]),
       st.sampled_from([(-128, 127), (0, 255), (-2, 1)]), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_int_gemm_is_the_exact_sum_mod_2_32(width, m, k, n, ra, rb, with_c, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(ra[0], ra[1] + 1, (m, k))
    b = rng.integers(rb[0], rb[1] + 1, (k, n))
    if k:
        a[0, :] = ra[0] if abs(ra[0]) > ra[1] else ra[1]   # the largest products, all one sign: int32 wraps
        b[:, 0] = rb[0] if abs(rb[0]) > rb[1] else rb[1]
    c = rng.integers(-2 ** 31, 2 ** 32, (m, n)) if with_c else None
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_VECTOR_BITS", width)
        got = int_gemm.gemm(a, b, c)
    np.testing.assert_array_equal(got, _exact(a, b, c))


def test_wraps_like_the_accumulator():
    a = np.full((2, 1 << 17), -128, np.int8)           # 2**17 * 2**14 = 2**31: one past INT32_MAX
    got = int_gemm.gemm(a, a.T.copy(), None)
    assert got[0, 0] == -2 ** 31


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_engines_equal_their_numpy_paths(monkeypatch, dt):
    rng = np.random.default_rng(1)
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max + 1, (37, 301)).astype(dt)
    b = rng.integers(-128, 128, (301, 45)).astype(np.int8)
    c = rng.integers(-2 ** 31, 2 ** 31, (37, 45)).astype(np.int32)
    got_amx, got_xmx = amx.matmul(a, b, c, method="numpy"), xmx.matmul(a, b, c)
    monkeypatch.setenv("SYSTOLIC_NO_NATIVE", "1")
    np.testing.assert_array_equal(got_amx, amx.matmul(a, b, c, method="numpy"))
    np.testing.assert_array_equal(got_xmx, xmx.matmul(a, b, c))


@pytest.mark.parametrize("width", ["128", "256", "512"])
@settings(max_examples=12, deadline=None)
@given(st.integers(1, 40), st.integers(1, 70), st.integers(1, 60), st.sampled_from([np.int8, np.uint8, np.int16]),
       st.sampled_from([np.int8, np.uint8]), st.sampled_from([1, 2]), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_blocks_and_threads_change_no_bit(width, m, k, n, da, db, threads, strided, seed):
    """K blocks of 3 pair rows and M blocks of one register block (so small shapes cross every cache block), one or
    two threads (the small-product cut-off off), int8 / uint8 / int16 sources read in place, strided views; the
    extremes (-128 x -128, 255 x 255 ...) in row 0 / column 0."""
    rng = np.random.default_rng(seed)
    lo_a, hi_a = (-128, 127) if da == np.int8 else (0, 255) if da == np.uint8 else (-255, 255)
    lo_b, hi_b = (-128, 127) if db == np.int8 else (0, 255)
    a = rng.integers(lo_a, hi_a + 1, (m, 2 * k if strided else k)).astype(da)
    b = rng.integers(lo_b, hi_b + 1, (k, n)).astype(db)
    if strided:
        a = a[:, ::2]                                       # a view: rows contiguous no more
    a[0, :] = lo_a if abs(lo_a) > hi_a else hi_a
    b[:, 0] = lo_b if abs(lo_b) > hi_b else hi_b
    c = rng.integers(-2 ** 31, 2 ** 31, (m, n)).astype(np.int32)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_VECTOR_BITS", width)
        mp.setattr(int_gemm, "KC", 3)
        mp.setattr(int_gemm, "MC", 1)
        mp.setattr(int_gemm, "SMALL_WORK", 0)
        got = int_gemm.gemm(a, b, c, threads=threads)
    np.testing.assert_array_equal(got, _exact(a, b, c))
