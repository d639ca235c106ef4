"""Integer XMX GEMMs on the host's AMX-INT8 unit (xmx.gemm._int_gemm_on_amx): the same bits as the emulator for
every integer precision pair (int2/int4/int8, signed and unsigned, mixed), and the switch that forces the
emulator (SYSTOLIC_NATIVE=0). On hosts without AMX: the plain call (no switch) takes the emulator's exact integer
GEMM (systolic.jit.int_gemm where llvmlite can JIT), and the switch."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic import counters, xmx
from systolic.amx.native import availability

NATIVE, WHY = availability()
DTYPES = {"int8": np.int8, "uint8": np.uint8, "int4": ml_dtypes.int4, "uint4": ml_dtypes.uint4,
          "int2": ml_dtypes.int2, "uint2": ml_dtypes.uint2}
RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1),
          "uint2": (0, 3)}
#: the DPAS precision names (visa-DPAS.md) the path records use
PREC = {"int8": "s8", "uint8": "u8", "int4": "s4", "uint4": "u4", "int2": "s2", "uint2": "u2"}


def _ints(rng, p, shape):
    lo, hi = RANGES[p]
    x = rng.integers(lo, hi + 1, shape)
    x.flat[:: max(1, x.size // 3)] = lo        # the extreme products (e.g. -128 * -128) in every case
    return x.astype(DTYPES[p])


def test_switch_forces_the_emulator(monkeypatch):
    monkeypatch.setenv("SYSTOLIC_NATIVE", "0")
    rng = np.random.default_rng(0)
    a, b = _ints(rng, "int4", (9, 40)), _ints(rng, "uint8", (40, 7))
    d = xmx.matmul(a, b)
    assert counters.path_taken("xmx.matmul s4xu8") == "emulator"
    want = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(d, want.astype(np.int32))


@pytest.mark.skipif(NATIVE, reason="this host runs AMX: the plain call takes AMX-INT8 (tested below)")
def test_without_amx_the_plain_call_takes_the_emulator(monkeypatch):
    """No switch set, no AMX: every precision pair runs on the emulator, through int_gemm where it can JIT."""
    from systolic.jit import int_gemm
    monkeypatch.delenv("SYSTOLIC_NATIVE", raising=False)
    monkeypatch.delenv("SYSTOLIC_NO_NATIVE", raising=False)
    calls = []
    real = int_gemm.gemm
    monkeypatch.setattr(int_gemm, "gemm", lambda *args: calls.append(1) or real(*args))
    rng = np.random.default_rng(1)
    for pa in sorted(DTYPES):
        for pb in sorted(DTYPES):
            a, b = _ints(rng, pa, (9, 37)), _ints(rng, pb, (37, 11))
            c = rng.integers(-2 ** 31, 2 ** 32, (9, 11))
            d = xmx.matmul(a, b, c)
            assert counters.path_taken(f"xmx.matmul {PREC[pa]}x{PREC[pb]}") == "emulator"
            want = (a.astype(np.int64) @ b.astype(np.int64) + c) & 0xFFFFFFFF
            np.testing.assert_array_equal(d.view(np.uint32), want.astype(np.uint32))
    assert len(calls) == (len(DTYPES) ** 2 if int_gemm.available() else 0)


@pytest.mark.native
@pytest.mark.skipif(not NATIVE, reason=f"native AMX unavailable: {WHY}")
@pytest.mark.skipif(os.environ.get("SYSTOLIC_NATIVE", "") == "0", reason="SYSTOLIC_NATIVE=0: the emulator only")
@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(DTYPES)), st.sampled_from(sorted(DTYPES)), st.integers(1, 40), st.integers(1, 300),
       st.integers(1, 40), st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_amx_int8_path_equals_emulator(pa, pb, m, k, n, with_c, seed):
    rng = np.random.default_rng(seed)
    a, b = _ints(rng, pa, (m, k)), _ints(rng, pb, (k, n))
    c = rng.integers(-2 ** 31, 2 ** 32, (m, n)) if with_c else None   # D or UD values: wrap-around included
    got = xmx.matmul(a, b, c)
    assert counters.path_taken(f"xmx.matmul {PREC[pa]}x{PREC[pb]}") == "amx-native"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_NATIVE", "0")
        want = xmx.matmul(a, b, c)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
