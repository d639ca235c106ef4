"""The fast path is bit-identical to the spec path (DESIGN principle 2).

Random and adversarial tiles (+-0, denormals, inf, NaN payloads, cancellation,
overflow, int8 extremes, accumulators near wraparound) and every shape from
1 x 1 x 1 to 16 x 16 x 16 go through both the numpy kernels and the SDM
transcription; the resulting tile images must be equal byte for byte
(including the zeroed bytes outside the destination's rows/colsb).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck

from systolic.amx import fp_x86 as fp
from systolic.amx import isa
from amx_values import BF16_SPECIAL, FP16_SPECIAL, FP32_SPECIAL, FP8_SPECIAL, mixed

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _normal16(kind):
    def gen(rng, n):
        x = rng.standard_normal(n) * np.exp2(rng.integers(-4, 5, n))
        if kind == "bf16":
            import ml_dtypes
            return x.astype(ml_dtypes.bfloat16).view(np.uint16)
        return x.astype(np.float16).view(np.uint16)
    return gen


def _normal32(rng, n):
    return (rng.standard_normal(n) * 8).astype(np.float32).view(np.uint32)


def _tiles(seed, m, k, n, elem, profile, cprofile):
    rng = np.random.default_rng(seed)
    a = np.zeros((16, 64), np.uint8)
    b = np.zeros((16, 64), np.uint8)
    c = np.zeros((16, 64), np.uint8)
    if elem == "int8":
        ext = np.array([0, 1, 0x7F, 0x80, 0x81, 0xFF], np.uint8)
        a[:m, :4 * k] = mixed(rng, (m, 4 * k), ext, profile)
        b[:k, :4 * n] = mixed(rng, (k, 4 * n), ext, profile)
        wrap = np.array([0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0, 0x7FFFFF00], np.uint32)
        c[:m, :4 * n] = mixed(rng, (m, n), wrap, cprofile).view(np.uint8).reshape(m, 4 * n)
    else:
        if elem in ("bf16", "fp16"):
            special = BF16_SPECIAL if elem == "bf16" else FP16_SPECIAL
            av = mixed(rng, (m, 2 * k), special, profile, _normal16(elem))
            bv = mixed(rng, (k, 2 * n), special, profile, _normal16(elem))
            if profile == "cancel":  # each dword's two products cancel exactly
                av[:, 1::2] = av[:, 0::2] ^ np.uint16(0x8000)
                bv[:, 1::2] = bv[:, 0::2]
            a[:m, :4 * k] = av.view(np.uint8).reshape(m, 4 * k)
            b[:k, :4 * n] = bv.view(np.uint8).reshape(k, 4 * n)
        else:
            a[:m, :4 * k] = mixed(rng, (m, 4 * k), FP8_SPECIAL, profile)
            b[:k, :4 * n] = mixed(rng, (k, 4 * n), FP8_SPECIAL, profile)
        c[:m, :4 * n] = mixed(rng, (m, n), FP32_SPECIAL, cprofile, _normal32).view(np.uint8).reshape(m, 4 * n)
    return c, a, b


def _both(mnemonic, c, a, b, m, k, n):
    c1, c2 = c.copy(), c.copy()
    isa.get(mnemonic).fast(c1, a, b, m, 4 * n, 4 * k)
    isa.get(mnemonic).spec(c2, a, b, m, 4 * n, 4 * k)
    return c1, c2


dims = st.sampled_from([1, 2, 3, 7, 16]) | st.integers(1, 16)
profiles = st.sampled_from(["bits", "special", "mixed", "normal", "cancel"])
cprofiles = st.sampled_from(["bits", "special", "mixed", "normal"])


@settings(max_examples=60, **SETTINGS)
@given(st.sampled_from(["tdpbssd", "tdpbsud", "tdpbusd", "tdpbuud"]), dims, dims, dims, st.integers(0, 2**32),
       st.sampled_from(["bits", "special", "mixed"]), st.sampled_from(["bits", "special", "mixed"]))
def test_int8_kernels_equal_spec(mnemonic, m, k, n, seed, profile, cprofile):
    c, a, b = _tiles(seed, m, k, n, "int8", profile, cprofile)
    c1, c2 = _both(mnemonic, c, a, b, m, k, n)
    assert (c1 == c2).all()


@settings(max_examples=40, **SETTINGS)
@given(st.sampled_from(["tdpbf16ps", "tdpfp16ps", "tcmmimfp16ps", "tcmmrlfp16ps"]), st.integers(1, 6),
       st.integers(1, 16), st.integers(1, 6), st.integers(0, 2**32), profiles, cprofiles)
def test_float16_kernels_equal_spec(mnemonic, m, k, n, seed, profile, cprofile):
    elem = "bf16" if mnemonic == "tdpbf16ps" else "fp16"
    c, a, b = _tiles(seed, m, k, n, elem, profile, cprofile)
    c1, c2 = _both(mnemonic, c, a, b, m, k, n)
    assert (c1 == c2).all()


@settings(max_examples=60, **SETTINGS)
@given(st.sampled_from(["tdpbf8ps", "tdpbhf8ps", "tdphbf8ps", "tdphf8ps"]), st.integers(1, 5), st.integers(1, 16),
       st.integers(1, 5), st.integers(0, 2**32), st.sampled_from(["bits", "special", "mixed"]), cprofiles)
def test_fp8_kernels_equal_spec(mnemonic, m, k, n, seed, profile, cprofile):
    c, a, b = _tiles(seed, m, k, n, "fp8", profile, cprofile)
    c1, c2 = _both(mnemonic, c, a, b, m, k, n)
    assert (c1 == c2).all()


def test_full_16x16x16_bf16_tile_equal_spec():
    c, a, b = _tiles(12345, 16, 16, 16, "bf16", "mixed", "mixed")
    c1, c2 = _both("tdpbf16ps", c, a, b, 16, 16, 16)
    assert (c1 == c2).all()


# ------------------------------------------------------------------ the fp32 operations themselves

def _fp32_batch(rng, n, short):
    """n fp32 patterns: specials, random bits, and values just around 2^-126 (the FTZ window)."""
    if short:  # fp32 images of bf16 / fp16 values (what the chains multiply)
        bf = (mixed(rng, (n,), BF16_SPECIAL, "mixed").astype(np.uint32) << 16)
        hf = fp.fp16_to_fp32_vec(mixed(rng, (n,), FP16_SPECIAL, "mixed"))
        tiny = np.array([0xB3400000, 0x33400000, 0xB3800000, 0xB3000000, 0x33C00000, 0x00800000, 0x80800000,
                         0x00C00000, 0x3F800000, 0xBF800000], np.uint32)
        pick = rng.integers(0, 3, n)
        return np.where(pick == 0, bf, np.where(pick == 1, hf, tiny[rng.integers(0, tiny.size, n)]))
    near = (0x00800000 + rng.integers(-3, 4, n)).astype(np.uint32) | (rng.integers(0, 2, n).astype(np.uint32) << 31)
    pick = rng.integers(0, 3, n)
    return np.where(pick == 0, mixed(rng, (n,), FP32_SPECIAL, "mixed", _normal32),
                    np.where(pick == 1, rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32), near))


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32), st.booleans())
def test_fma_vec_equals_exact_fma(seed, negate):
    rng = np.random.default_rng(seed)
    a, b, acc = _fp32_batch(rng, 400, True), _fp32_batch(rng, 400, True), _fp32_batch(rng, 400, False)
    got = fp.fma_vec(a, b, acc, negate=negate)
    assert [int(g) for g in got] == [fp.fma(int(x), int(y), int(z), negate=negate) for x, y, z in zip(a, b, acc)]


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32))
def test_add_vec_equals_exact_add(seed):
    rng = np.random.default_rng(seed)
    x, y = _fp32_batch(rng, 400, False), _fp32_batch(rng, 400, False)
    got = fp.add_vec(x, y)
    assert [int(g) for g in got] == [fp.add(int(p), int(q)) for p, q in zip(x, y)]


def test_narrow_conversions_vec_equal_scalar():
    h = np.arange(1 << 16, dtype=np.uint32)
    assert [int(x) for x in fp.fp16_to_fp32_vec(h[::7])] == [fp.fp16_to_fp32(int(v)) for v in h[::7]]
    for kind in ("bf8", "hf8"):
        f = fp.FP8_FORMATS[kind]
        assert [int(x) for x in fp.fp8_to_fp32_vec(h[:256], f)] == [fp.fp8_to_fp32(int(v), f) for v in h[:256]]


def test_ftz_window_below_min_normal():
    """acc = 2^-126, a*b = -1.5*2^-151: exact 2^-126 - 1.5*2^-151 rounds (24 bits, unbounded exponent) to
    2^-126 - 2^-150, which is tiny: FTZ gives +0, although the denormal-grid rounding would give 2^-126."""
    a = fp.bf16_to_fp32(0xB340)   # -1.5 * 2^-25
    b = fp.bf16_to_fp32(0x0080)   # 2^-126
    assert fp.fma(a, b, 0x00800000) == 0x00000000
    assert int(fp.fma_vec(np.uint32(a), np.uint32(b), np.uint32(0x00800000))) == 0
    a2 = fp.bf16_to_fp32(0xB380)  # -2^-24: x = 2^-126 - 2^-150 exactly: tiny, flushed
    assert fp.fma(a2, b, 0x00800000) == 0 and int(fp.fma_vec(np.uint32(a2), np.uint32(b), np.uint32(0x00800000))) == 0
    a3 = fp.bf16_to_fp32(0xB300)  # -2^-25 -> x = 2^-126 - 2^-151: the tie rounds to even 2^-126
    assert fp.fma(a3, b, 0x00800000) == 0x00800000
    assert int(fp.fma_vec(np.uint32(a3), np.uint32(b), np.uint32(0x00800000))) == 0x00800000
    assert fp.add(0x00800001, 0x80000001) == 0x00800001  # y is denormal: DAZ -> x + (-0) = x
