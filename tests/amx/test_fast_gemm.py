"""The register-blocked bf16 / fp16 kernel of amx.matmul on hosts without AMX (amx.gemm_jit.FastJob: compiled packing,
6 x 8 blocks of even/odd chains, C += even + odd per 16-dword K tile) equals the vectorised numpy chains (an
independent implementation of the same SDM pseudocode) and the instruction loop, bit for bit: at every vector width
the kernels are built for (SYSTOLIC_VECTOR_BITS), with the emulator forced (SYSTOLIC_NATIVE=0), with K, M and N not
multiples of the tile / register block / cache blocks (the blocks shrunk so small shapes cross them), on one and
two threads, with inf / NaN inputs (their rows and columns go to the numpy chains), overflowing products, bf16
denormal inputs (DAZ) and NaN / inf / denormal C values."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic import counters
from systolic.amx import gemm_jit, matmul

pytestmark = pytest.mark.skipif(not gemm_jit.available(), reason="llvmlite cannot JIT on this machine")

BF = ml_dtypes.bfloat16
DEVICE = {"bf16": "sapphirerapids", "fp16": "graniterapids"}        # AMX-FP16 from Granite Rapids on


def _inputs(rng, m, k, n, kind, profile):
    """Values the fast kernel takes (no chain value can be tiny): normal numbers between 2**-20 and 2**20 (or up to
    2**120 for bf16 'huge': products overflow to inf, inf - inf to NaN), with 'specials' some zeros, infinities,
    NaNs and (bf16) denormals in A and B, and NaN / inf / denormal values in C."""
    dt = BF if kind == "bf16" else np.float16
    hi = 120 if (profile == "huge" and kind == "bf16") else (14 if kind == "fp16" else 20)
    lo = -10 if kind == "fp16" else -20

    def draw(shape, top):
        return rng.standard_normal(shape) * 2.0 ** rng.integers(lo, top + 1, shape)
    a, b = draw((m, k), hi).astype(dt), draw((k, n), hi).astype(dt)
    c = draw((m, n), min(2 * hi, 100) if hi > 20 else 20).astype(np.float32)
    if profile == "specials":
        sp = [0.0, -0.0, np.inf, -np.inf, np.nan]
        for x in (a, b):
            pick = rng.random(x.shape) < 0.05
            x[pick] = np.array(rng.choice(sp, pick.sum()), dtype=dt)
        if kind == "bf16":                     # denormal bf16 inputs: DAZ reads them as signed zeros
            a.view(np.uint16)[rng.random(a.shape) < 0.05] = 0x8001
        cb = c.view(np.uint32)
        pick = rng.random(c.shape) < 0.1
        cb[pick] = rng.choice(np.array([0x7FC12345, 0xFF812345, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF],
                                       np.uint32), pick.sum())
    return a, b, c


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 30), k=st.integers(1, 120), n=st.integers(1, 70), kind=st.sampled_from(["bf16", "fp16"]),
       width=st.sampled_from(["128", "256", "512"]), small_blocks=st.booleans(), threads=st.sampled_from([1, 2]),
       profile=st.sampled_from(["normal", "huge", "specials"]), with_c=st.booleans(), seed=st.integers(0, 2 ** 32 - 1))
def test_fast_kernel_equals_numpy_chains(m, k, n, kind, width, small_blocks, threads, profile, with_c, seed):
    rng = np.random.default_rng(seed)
    a, b, c = _inputs(rng, m, k, n, kind, profile)
    c = c if with_c else None
    runs = []
    real = gemm_jit.FastJob.run
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_NATIVE", "0")
        mp.setenv("SYSTOLIC_VECTOR_BITS", width)
        mp.setattr(gemm_jit.FastJob, "run", lambda self: runs.append(1) or real(self))
        mp.setattr(gemm_jit, "FAST_SMALL_WORK", 0)            # threads even for these small shapes
        if small_blocks:                                       # K blocks of one tile, M blocks of one register block
            mp.setattr(gemm_jit, "FAST_KC", 16)
            mp.setattr(gemm_jit, "FAST_MC", 1)
        got = matmul(a, b, c, device=DEVICE[kind], threads=threads)
    mn = "tdpbf16ps" if kind == "bf16" else "tdpfp16ps"
    assert counters.path_taken(f"amx.matmul {mn}") == "emulator"
    assert runs == [1]                                         # the register-blocked kernel ran
    want = matmul(a, b, c, method="numpy", device=DEVICE[kind])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("kind", ["bf16", "fp16"])
@pytest.mark.parametrize("shape", [(7, 70, 9), (13, 33, 17)])   # K: tiles of 16 dwords and a partial one
def test_fast_kernel_equals_the_instruction_loop(kind, shape):
    m, k, n = shape
    a, b, c = _inputs(np.random.default_rng(k), m, k, n, kind, "specials")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_NATIVE", "0")
        got = matmul(a, b, c, device=DEVICE[kind])
    want = matmul(a, b, c, method="instructions", device=DEVICE[kind])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_tiny_values_take_the_checked_kernel():
    """Where a chain value can be tiny (FTZ possible), the register-blocked kernel is not used."""
    a = np.full((4, 8), 2.0 ** -70, BF)
    runs = []
    real = gemm_jit.FastJob.run
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gemm_jit.FastJob, "run", lambda self: runs.append(1) or real(self))
        got = matmul(a, a.T.copy())
    assert runs == []
    np.testing.assert_array_equal(got.view(np.uint32), matmul(a, a.T.copy(), method="instructions").view(np.uint32))
