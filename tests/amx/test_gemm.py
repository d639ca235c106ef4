"""systolic.amx.matmul equals looping the instructions on a TileMachine (its definition), bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from systolic.amx import matmul, gemm_jit
from systolic.errors import InvalidOpcode, InvalidValue
from amx_values import BF16_SPECIAL, FP16_SPECIAL, FP32_SPECIAL, mixed

BF = ml_dtypes.bfloat16
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _float_inputs(seed, M, K, N, kind, profile):
    rng = np.random.default_rng(seed)
    special = BF16_SPECIAL if kind == "bf16" else FP16_SPECIAL
    dt = BF if kind == "bf16" else np.float16

    def normal(r, n):
        scale = {"tiny": 2.0 ** -60, "huge": 2.0 ** 60}.get(profile, 1.0) if kind == "bf16" else 1.0
        return (r.standard_normal(n) * scale).astype(dt).view(np.uint16)
    prof = "normal" if profile in ("tiny", "huge") else profile
    a = mixed(rng, (M, K), special, prof, normal).view(dt)
    b = mixed(rng, (K, N), special, prof, normal).view(dt)
    c = mixed(rng, (M, N), FP32_SPECIAL, "mixed" if profile == "mixed" else "normal",
              lambda r, n: (r.standard_normal(n) * (2.0 ** -100 if profile == "tiny" else 1)).astype(np.float32)
              .view(np.uint32)).view(np.float32)
    return a, b, c


@settings(max_examples=25, **SETTINGS)
@given(st.integers(1, 40), st.integers(1, 80), st.integers(1, 40), st.integers(0, 2**32),
       st.sampled_from(["normal", "mixed", "tiny", "huge", "bits"]))
def test_bf16_matmul_equals_instruction_loop(M, K, N, seed, profile):
    a, b, c = _float_inputs(seed, M, K, N, "bf16", profile)
    ref = matmul(a, b, c, method="instructions").view(np.uint32)
    assert (matmul(a, b, c).view(np.uint32) == ref).all()
    assert (matmul(a, b, c, method="numpy").view(np.uint32) == ref).all()


@settings(max_examples=10, **SETTINGS)
@given(st.integers(1, 20), st.integers(1, 70), st.integers(1, 20), st.integers(0, 2**32),
       st.sampled_from(["normal", "mixed", "bits"]))
def test_fp16_matmul_equals_instruction_loop(M, K, N, seed, profile):
    a, b, c = _float_inputs(seed, M, K, N, "fp16", profile)
    ref = matmul(a, b, c, device="graniterapids", method="instructions").view(np.uint32)
    assert (matmul(a, b, c, device="graniterapids").view(np.uint32) == ref).all()


@settings(max_examples=30, **SETTINGS)
@given(st.integers(1, 40), st.integers(1, 300), st.integers(1, 40), st.integers(0, 2**32),
       st.sampled_from([np.int8, np.uint8]), st.sampled_from([np.int8, np.uint8]), st.booleans())
def test_int8_matmul_equals_instruction_loop(M, K, N, seed, da, db, extreme):
    rng = np.random.default_rng(seed)
    if extreme:
        a = rng.choice([0, 0x7F, 0x80, 0xFF], (M, K)).astype(np.uint8).view(da)
        b = rng.choice([0, 0x7F, 0x80, 0xFF], (K, N)).astype(np.uint8).view(db)
    else:
        a = rng.integers(0, 256, (M, K), dtype=np.uint8).view(da)
        b = rng.integers(0, 256, (K, N), dtype=np.uint8).view(db)
    c = rng.choice([0x7FFFFFFF, -0x80000000, -1, 0, 12345], (M, N)).astype(np.int32)
    assert (matmul(a, b, c) == matmul(a, b, c, method="instructions")).all()


def test_int8_large_k_exact_against_python_ints():
    """K = 4096 of 255 * 255 needs the chunked BLAS path; Python ints are the oracle."""
    a = np.full((3, 4096), 255, np.uint8)
    b = np.full((4096, 2), 255, np.uint8)
    c = np.array([[0x7FFFFFFF, 0]] * 3, np.int32)
    got = matmul(a, b, c)
    for v, c0 in zip(got[0], (0x7FFFFFFF, 0)):
        t = (c0 + 4096 * 255 * 255) & 0xFFFFFFFF
        assert int(v) == (t - (1 << 32) if t >> 31 else t)


def test_k_blocking_is_visible_in_bf16():
    """K = 34: a 32-element tile then a 2-element tile; C carries between them (hand-computed).

    Tile 1: even chain 2^24 + 16 * 1 = 2^24 + 16 exact after 1 + ... (all ones: each step adds 1 to 2^24:
    2^24 + 1 rounds back to 2^24 under RNE), so the even chain stays 2^24; odd chain sums 16 ones = 16.
    t = 2^24 + 16; C = 0 + t. Tile 2: even 1, odd 1 -> t = 2; C = 2^24 + 18.
    """
    a = np.ones((1, 34), BF)
    a[0, 0] = 2.0 ** 12
    b = np.ones((34, 1), BF)
    b[0, 0] = 2.0 ** 12
    out = matmul(a, b)
    assert out[0, 0] == np.float32(2.0 ** 24 + 18)
    assert matmul(a, b, method="instructions")[0, 0] == out[0, 0]


def test_matmul_errors():
    with pytest.raises(InvalidValue):
        matmul(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
    with pytest.raises(InvalidValue):
        matmul(np.zeros((2, 3), np.int8), np.zeros((4, 2), np.int8))
    with pytest.raises(InvalidValue):
        matmul(np.zeros((2, 3), np.int8), np.zeros((3, 2), np.int8), np.zeros((2, 2), np.float32))
    with pytest.raises(InvalidOpcode):
        matmul(np.zeros((2, 2), np.float16), np.zeros((2, 2), np.float16), device="sapphirerapids")
    with pytest.raises(InvalidValue):
        matmul(np.zeros((2, 2), np.int8), np.zeros((2, 2), np.int8), method="magic")


def test_compiled_kernel_is_available_on_x86():
    import platform
    if platform.machine().lower() in ("x86_64", "amd64"):
        assert gemm_jit.available()


def test_ftz_window_in_every_path():
    """Even chain: 0 + 1 * 2^-126 = 2^-126, then + (-1.5 * 2^-25) * 2^-126: the exact 2^-126 - 1.5 * 2^-151
    rounds to 24 bits as 2^-126 - 2^-150, tiny, so FTZ makes it +0 (the denormal-grid rounding says 2^-126)."""
    a = np.array([[1.0, 0.0, -1.5 * 2.0 ** -25, 0.0]] * 3, BF)
    b = np.array([[2.0 ** -126] * 9, [0.0] * 9, [2.0 ** -126] * 9, [0.0] * 9], BF)
    for method in ("auto", "numpy", "instructions", "spec"):
        out = matmul(a, b, method=method)
        assert (out.view(np.uint32) == 0).all(), method


def test_empty_k_returns_c_untouched():
    c = np.array([[1e-45, -0.0]], np.float32)       # a denormal: no instruction runs, so no DAZ either
    out = matmul(np.zeros((1, 0), BF), np.zeros((0, 2), BF), c)
    assert (out.view(np.uint32) == c.view(np.uint32)).all()
    assert (matmul(np.zeros((1, 0), BF), np.zeros((0, 2), BF), c, method="instructions").view(np.uint32)
            == c.view(np.uint32)).all()


def test_docs_first_program():
    """The example at the top of docs/amx.md: one TDPBF16PS equals matmul of the same 16 x 32 x 16."""
    from systolic.amx import TileConfig, TileMachine
    from systolic.packing import vnni_pack
    m = TileMachine("sapphirerapids")
    m.ldtilecfg(TileConfig(palette=1, tiles={0: (16, 64), 1: (16, 64), 2: (16, 64)}))
    a = np.random.default_rng(0).standard_normal((16, 32)).astype(BF)
    b = np.random.default_rng(1).standard_normal((32, 16)).astype(BF)
    mem = np.zeros(4096, np.uint8)
    mem[1024:2048] = a.view(np.uint8).reshape(-1)
    mem[2048:3072] = vnni_pack(b, 16).astype("<u4").view(np.uint8).reshape(-1)
    m.tilezero(0)
    m.tileloadd(1, mem, 1024, 64)
    m.tileloadd(2, mem, 2048, 64)
    m.tdpbf16ps(0, 1, 2)
    m.tilestored(0, mem, 0, 64)
    c = mem[:1024].view(np.float32).reshape(16, 16)
    assert (c.view(np.uint32) == matmul(a, b).view(np.uint32)).all()
    # and against plain float64 arithmetic, loosely: the AMX result is a rounding of the exact product
    assert np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_fp16_signalling_nan_payload_matches_the_instructions():
    a = np.array([[1.0, 1.0], [1.0, 2.0]], np.float16)
    a.view(np.uint16)[0, 0] = 0x7D55          # signalling NaN with a payload
    a.view(np.uint16)[1, 1] = 0xFE01          # quiet negative NaN with a payload
    b = np.array([[1.0, 2.0], [3.0, 4.0]], np.float16)
    ref = matmul(a, b, device="graniterapids", method="instructions").view(np.uint32)
    assert (matmul(a, b, device="graniterapids").view(np.uint32) == ref).all()
    # the fp16 payload moves to the top of the fp32 fraction and the NaN is quieted: 0x7D55 -> 0x7FEAA000
    assert ref.ravel().tolist() == [0x7FEAA000, 0x7FEAA000, 0xFFC02000, 0xFFC02000]
