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
from systolic.amx import kernels, spec
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
    kernels.DOT[mnemonic](c1, a, b, m, 4 * n, 4 * k)
    spec.DOT[mnemonic](c2, a, b, m, 4 * n, 4 * k)
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


@settings(max_examples=20, **SETTINGS)
@given(st.sampled_from(["tdpbf8ps", "tdpbhf8ps", "tdphbf8ps", "tdphf8ps"]), st.integers(1, 4), st.integers(1, 16),
       st.integers(1, 4), st.integers(0, 2**32), st.sampled_from(["bits", "special", "mixed"]), cprofiles)
def test_fp8_kernels_equal_spec(mnemonic, m, k, n, seed, profile, cprofile):
    c, a, b = _tiles(seed, m, k, n, "fp8", profile, cprofile)
    c1, c2 = _both(mnemonic, c, a, b, m, k, n)
    assert (c1 == c2).all()


def test_full_16x16x16_bf16_tile_equal_spec():
    c, a, b = _tiles(12345, 16, 16, 16, "bf16", "mixed", "mixed")
    c1, c2 = _both("tdpbf16ps", c, a, b, 16, 16, 16)
    assert (c1 == c2).all()


# ------------------------------------------------------------------ the fp32 operations themselves

fp32_bits = st.sampled_from([int(x) for x in FP32_SPECIAL]) | st.integers(0, 2**32 - 1)
# products of bf16 / fp16 values: fp32 patterns with a short significand
short_bits = (st.sampled_from([int(x) << 16 for x in BF16_SPECIAL]) | st.integers(0, 2**16 - 1).map(lambda v: v << 16)
              | st.sampled_from([fp.fp16_to_fp32(int(x)) for x in FP16_SPECIAL])
              | st.integers(0, 2**16 - 1).map(fp.fp16_to_fp32))


@settings(max_examples=3000, deadline=None)
@given(short_bits, short_bits, fp32_bits, st.booleans())
def test_fma_vec_equals_exact_fma(a, b, acc, negate):
    got = int(fp.fma_vec(np.uint32(a), np.uint32(b), np.uint32(acc), negate=negate))
    assert got == fp.fma(a, b, acc, negate=negate)


@settings(max_examples=3000, deadline=None)
@given(fp32_bits, fp32_bits)
def test_add_vec_equals_exact_add(x, y):
    assert int(fp.add_vec(np.uint32(x), np.uint32(y))) == fp.add(x, y)


fp8_bits = st.sampled_from([int(x) for x in FP8_SPECIAL]) | st.integers(0, 255)


@settings(max_examples=2000, deadline=None)
@given(fp8_bits, fp8_bits, fp8_bits, fp8_bits, fp32_bits, st.sampled_from(["bf8", "hf8"]))
def test_dot2_vec_equals_exact(a0, b0, a1, b1, acc, kind):
    f = fp.FP8_FORMATS[kind]
    x = [fp.fp8_to_fp32(v, f) for v in (a0, b0, a1, b1)]
    got = int(fp.dot2_add_vec(*(np.uint32(v) for v in x), np.uint32(acc)))
    assert got == fp.dot2_add(*x, acc)


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 2**16 - 1))
def test_narrow_conversions_vec_equal_scalar(h):
    assert int(fp.fp16_to_fp32_vec(np.uint32(h))) == fp.fp16_to_fp32(h)
    assert int(fp.fp8_to_fp32_vec(np.uint32(h & 0xFF), fp.FP8_FORMATS["bf8"])) == fp.fp8_to_fp32(h & 0xFF, fp.FP8_FORMATS["bf8"])
    assert int(fp.fp8_to_fp32_vec(np.uint32(h & 0xFF), fp.FP8_FORMATS["hf8"])) == fp.fp8_to_fp32(h & 0xFF, fp.FP8_FORMATS["hf8"])


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
