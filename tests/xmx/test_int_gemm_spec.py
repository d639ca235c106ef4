"""The no-AMX integer GEMM paths, forced with SYSTOLIC_NATIVE=0 on every host (AMX CI hosts included), proven equal
to the spec paths.

* ``xmx.matmul`` on integers runs the emulator, whose exact integer GEMM is ``systolic.jit.int_gemm`` (PMADDWD
  pairs, int32 lanes wrapping) where llvmlite can JIT: equal to the GEMM as an explicit chain of spec ``dpas``
  instructions on a register file (visa-DPAS.md), for all 36 precision pairs (u2/s2/u4/s4/u8/s8 for A and B),
  at every vector width int_gemm may be built for, K = 1, K odd (int_gemm pads K to pairs), K not a multiple of
  the DPAS K depth, M and N not multiples of the register block; C at the int32 limits (and UD values), with a
  cell forced to wrap past them.
* ``amx.matmul`` on int8/uint8 runs the emulator (int_gemm): equal to ``method="spec"`` (the spec TileMachine
  backend, instruction by instruction), the same edge shapes.

The spec paths are slow (tenths of a second per instruction here), so the shapes stay within a few instructions;
tests/native/test_int_gemm.py covers large shapes against an exact int64 oracle.
"""

from __future__ import annotations

import contextlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic import amx, counters, xmx
from systolic.jit import int_gemm

from .test_gemm import by_dpas

DTYPES = {"s8": np.int8, "u8": np.uint8, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4, "s2": ml_dtypes.int2,
          "u2": ml_dtypes.uint2}
RANGES = {"s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15), "s2": (-2, 1), "u2": (0, 3)}
PRECS = sorted(DTYPES)
C_LIMITS = [-2 ** 31, 2 ** 31 - 1, -1, 0, 2 ** 32 - 1]       # D and UD accumulator values at the limits


def _kdepth(pa: str, pb: str) -> int:
    """K per DPAS (systems depth 8 x ops per channel: 8 for two sub-byte precisions, else 4)."""
    sub = ("u2", "s2", "u4", "s4")
    return 8 * (8 if pa in sub and pb in sub else 4)


def _operands(rng, pa, pb, m, k, n, c_mode):
    """A, B (extremes included), C: none, random D/UD values, or values at the int32 limits; cell (0, 0) is made to
    wrap past INT32_MAX or INT32_MIN (the largest-magnitude elements in row 0 of A and column 0 of B)."""
    (la, ha), (lb, hb) = RANGES[pa], RANGES[pb]
    a = rng.integers(la, ha + 1, (m, k))
    b = rng.integers(lb, hb + 1, (k, n))
    big_a = la if abs(la) > ha else ha
    big_b = lb if abs(lb) > hb else hb
    a[0, :], b[:, 0] = big_a, big_b
    if c_mode == "none":
        c = None
    else:
        c = rng.integers(-2 ** 31, 2 ** 32, (m, n)) if c_mode == "random" else rng.choice(C_LIMITS, (m, n))
        c[0, 0] = 2 ** 31 - 1 if big_a * big_b > 0 else -2 ** 31
    return a.astype(DTYPES[pa]), b.astype(DTYPES[pb]), c


def _exact(a, b, c):
    r = a.astype(np.int64) @ b.astype(np.int64)
    if c is not None:
        r = r + c
    return r


def _bits32(x) -> np.ndarray:
    return (np.asarray(x, np.int64) & 0xFFFFFFFF).astype(np.uint32)


@contextlib.contextmanager
def forced_emulator(width: str):
    """The emulator forced (SYSTOLIC_NATIVE=0, SYSTOLIC_NO_NATIVE unset), int_gemm built for ``width`` bits, and
    int_gemm.gemm's calls counted (the list yielded)."""
    calls = []
    real = int_gemm.gemm
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_NATIVE", "0")
        mp.delenv("SYSTOLIC_NO_NATIVE", raising=False)
        mp.setenv("SYSTOLIC_VECTOR_BITS", width)
        mp.setattr(int_gemm, "gemm", lambda *args: calls.append(1) or real(*args))
        yield calls


@settings(max_examples=24, deadline=None)
@given(pa=st.sampled_from(PRECS), pb=st.sampled_from(PRECS), m=st.integers(1, 8), n=st.integers(1, 16),
       kpick=st.integers(0, 5), c_mode=st.sampled_from(["none", "random", "limits"]),
       width=st.sampled_from(["128", "256", "512"]), seed=st.integers(0, 2 ** 32 - 1))
def test_xmx_int_emulator_equals_spec_dpas_chain(pa, pb, m, n, kpick, c_mode, width, seed):
    kd = _kdepth(pa, pb)
    k = [1, 2, 3, kd - 1, kd + 1, 2 * kd - 3][kpick]
    rng = np.random.default_rng(seed)
    a, b, c = _operands(rng, pa, pb, m, k, n, c_mode)
    with forced_emulator(width) as calls:
        got = xmx.matmul(a, b, c, device="pvc")
    assert counters.path_taken(f"xmx.matmul {pa}x{pb}") == "emulator"
    assert len(calls) == (1 if int_gemm.available() else 0)
    c32 = None if c is None else _bits32(c).view(np.int32)
    want = by_dpas(a, b, c32, "pvc", "stage", pb, pa)          # by_dpas takes (B precision, A precision)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(got.view(np.uint32), _bits32(_exact(a, b, c)))
    if c is not None:                                          # the forced cell really wrapped
        assert not -2 ** 31 <= _exact(a, b, c)[0, 0] < 2 ** 31


@settings(max_examples=40, deadline=None)
@given(pa=st.sampled_from(PRECS), pb=st.sampled_from(PRECS), m=st.integers(1, 30), n=st.integers(1, 70),
       k=st.one_of(st.just(1), st.integers(1, 200)), c_mode=st.sampled_from(["none", "random", "limits"]),
       width=st.sampled_from(["128", "256", "512"]), seed=st.integers(0, 2 ** 32 - 1))
def test_xmx_int_emulator_equals_exact_sum_mod_2_32(pa, pb, m, n, k, c_mode, width, seed):
    """Wider shapes (several register blocks of every width) against the exact int64 sum modulo 2**32."""
    rng = np.random.default_rng(seed)
    a, b, c = _operands(rng, pa, pb, m, k, n, c_mode)
    with forced_emulator(width) as calls:
        got = xmx.matmul(a, b, c)
    assert counters.path_taken(f"xmx.matmul {pa}x{pb}") == "emulator"
    assert len(calls) == (1 if int_gemm.available() else 0)
    np.testing.assert_array_equal(got.view(np.uint32), _bits32(_exact(a, b, c)))


@settings(max_examples=16, deadline=None)
@given(pa=st.sampled_from(["s8", "u8"]), pb=st.sampled_from(["s8", "u8"]), m=st.integers(1, 20),
       n=st.integers(1, 20), k=st.sampled_from([1, 2, 3, 5, 63, 65, 130]),
       c_mode=st.sampled_from(["none", "random", "limits"]), width=st.sampled_from(["128", "256", "512"]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_amx_int8_emulator_equals_spec_backend(pa, pb, m, n, k, c_mode, width, seed):
    """K = 1, K not a multiple of a dword (padded) nor of the 64-byte tile-K block."""
    rng = np.random.default_rng(seed)
    a, b, c = _operands(rng, pa, pb, m, k, n, c_mode)
    c32 = None if c is None else _bits32(c).view(np.int32)
    with forced_emulator(width) as calls:
        got = amx.matmul(a, b, c32)
    mn = {("s8", "s8"): "tdpbssd", ("s8", "u8"): "tdpbsud", ("u8", "s8"): "tdpbusd", ("u8", "u8"): "tdpbuud"}[(pa, pb)]
    assert counters.path_taken(f"amx.matmul {mn}") == "emulator"
    assert len(calls) == (1 if int_gemm.available() else 0)
    want = amx.matmul(a, b, c32, method="spec")
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(got.view(np.uint32), _bits32(_exact(a, b, c)))
