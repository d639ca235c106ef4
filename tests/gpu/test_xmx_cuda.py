"""``systolic.xmx.matmul(..., backend="cuda")`` returns the CPU path's bits, the CPU path's errors, and the
caller's array kind.

Oracles: the CPU path (``backend="cpu"``, itself proven against the Fraction oracle in tests/xmx), and for
small cases the independent Fraction oracle of tests/xmx/oracle.py directly. Inputs: random values, random
bit patterns (NaN payloads, infinities, denormals of every format), signed zeros, cancellation, overflow,
operands with a huge exponent spread (they defeat the fast kernel's proof and go through the GPU's robust
kernel, and three-level cancellation through the CPU's exact path: the tests check that each path ran), every
platform's denormal rule, every integer precision pair, K past the integer kernel's 32768 split, numpy / CuPy /
PyTorch inputs.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from systolic import errors
from systolic.xmx import matmul

from .conftest import GPU, assert_same_bits, needs_gpu

FLOAT_DT = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16, "tf32": np.float32, "bf8": ml_dtypes.float8_e5m2,
            "hf8": ml_dtypes.float8_e4m3fn, "e2m1": ml_dtypes.float4_e2m1fn}
INT_DT = {"s8": np.int8, "u8": np.uint8, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4, "s2": ml_dtypes.int2,
          "u2": ml_dtypes.uint2}
INT_RANGE = {"s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15), "s2": (-2, 1), "u2": (0, 3)}


def platform_for(p):
    return "xe3p" if p in ("bf8", "hf8", "e2m1") else "pvc"


def prec_kw(p):
    return {"precision": "tf32"} if p == "tf32" else {}


def rand_vals(rng, p, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(FLOAT_DT[p])


def rand_bits(rng, p, shape):
    """Uniformly random bit patterns of the format (every NaN payload, infinities, denormals)."""
    if p == "tf32":
        return rng.integers(0, 2 ** 32, shape, dtype=np.uint64).astype(np.uint32).view(np.float32)
    if p in ("bf16", "fp16"):
        return rng.integers(0, 2 ** 16, shape, dtype=np.uint16).view(FLOAT_DT[p])
    if p == "e2m1":
        return rng.integers(0, 16, shape, dtype=np.uint8).view(FLOAT_DT[p])
    return rng.integers(0, 256, shape, dtype=np.uint8).view(FLOAT_DT[p])


def spread_vals(rng, p, shape):
    """Values with a wide exponent spread and mixed signs: binary64 cannot hold every stage exactly."""
    lim = {"bf16": 60, "fp16": 14, "tf32": 60, "bf8": 14, "hf8": 7, "e2m1": 2}[p]
    v = rng.standard_normal(shape) * np.exp2(rng.integers(-lim, lim + 1, shape))
    return v.astype(np.float32).astype(FLOAT_DT[p])


def both(a, b, c=None, **kw):
    got = matmul(a, b, c, backend="cuda", **kw)
    want = matmul(a, b, c, backend="cpu", **kw)
    return got, want


# ------------------------------------------------------------------------------------------ without a GPU

@pytest.mark.skipif(GPU, reason="this machine has a usable CUDA backend")
def test_cuda_backend_unavailable_is_typed():
    a = np.ones((4, 16), dtype=ml_dtypes.bfloat16)
    with pytest.raises(errors.BackendUnavailable) as ei:
        matmul(a, a.T.copy(), backend="cuda")
    assert "CUDA backend is unavailable" in str(ei.value)


def test_auto_backend_on_host_arrays_is_the_cpu_path():
    a = np.arange(32, dtype=np.int8).reshape(2, 16)
    b = np.arange(48, dtype=np.int8).reshape(16, 3)
    out = matmul(a, b, backend="auto")
    assert isinstance(out, np.ndarray)
    assert_same_bits(out, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "auto on numpy")


def test_unknown_backend_is_invalid_value():
    a = np.ones((2, 16), dtype=np.int8)
    with pytest.raises(errors.InvalidValue):
        matmul(a, a.T.copy(), backend="tpu")


# ------------------------------------------------------------------------------------------ floats

MODELS = ("stage", "sequential")
SHAPES = [(37, 100, 45), (130, 200, 260)]


@needs_gpu
@pytest.mark.parametrize("p", list(FLOAT_DT))
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("shape", SHAPES)
def test_random_values(p, model, shape):
    rng = np.random.default_rng(hash((p, model, shape)) % 2 ** 32)
    m, k, n = shape
    a, b = rand_vals(rng, p, (m, k)), rand_vals(rng, p, (k, n))
    c = (rng.standard_normal((m, n)) * 4).astype(np.float32)
    for cc in (None, c):
        got, want = both(a, b, cc, device=platform_for(p), model=model, **prec_kw(p))
        assert isinstance(got, np.ndarray) and got.dtype == np.float32
        assert_same_bits(got, want, f"{p} {model} {shape} C={cc is not None}")


@needs_gpu
@pytest.mark.parametrize("p", list(FLOAT_DT))
@pytest.mark.parametrize("model", MODELS)
def test_random_bit_patterns(p, model):
    """Every bit pattern: NaN payloads of both signs, infinities, denormals, zeros; C with specials too."""
    rng = np.random.default_rng(7 + len(p) + len(model))
    m, k, n = 40, 96, 72
    a, b = rand_bits(rng, p, (m, k)), rand_bits(rng, p, (k, n))
    c = rand_bits(rng, "tf32", (m, n))
    for cc in (None, c):
        got, want = both(a, b, cc, device=platform_for(p), model=model, **prec_kw(p))
        assert_same_bits(got, want, f"bits {p} {model}")


@needs_gpu
@pytest.mark.parametrize("platform", ["dg2", "pvc", "bmg", "lnl"])
@pytest.mark.parametrize("p", ["bf16", "fp16", "tf32"])
@pytest.mark.parametrize("denormals", [None, "flush", "keep", "flush-all"])
def test_denormal_rules(platform, p, denormals):
    """Inputs full of the format's denormals under every platform's rule and every override."""
    if p == "tf32" and platform == "dg2":
        pytest.skip("dg2 has no tf32 DPAS (tested as an error below)")
    from systolic.xmx.models import NumericsModel
    rng = np.random.default_rng(11)
    m, k, n = 24, 64, 40
    fmt_min = {"bf16": 2.0 ** -126, "fp16": 2.0 ** -14, "tf32": 2.0 ** -126}[p]
    a = (rng.standard_normal((m, k)) * fmt_min * 0.7).astype(np.float32).astype(FLOAT_DT[p])
    b = (rng.standard_normal((k, n)) * 2.0 ** 20).astype(np.float32).astype(FLOAT_DT[p])
    c = (rng.standard_normal((m, n)) * 2.0 ** -120).astype(np.float32)
    for name in MODELS:
        mdl = NumericsModel(name, denormals=denormals)
        got, want = both(a, b, c, device=platform, model=mdl, **prec_kw(p))
        assert_same_bits(got, want, f"{platform} {p} {mdl.label}")


@needs_gpu
@pytest.mark.parametrize("p", ["bf16", "fp16", "bf8", "hf8", "e2m1"])
def test_signed_zeros_and_padding(p):
    """-0 results need every term -0; the K padding (+0 products) turns -0 into +0 exactly as padded DPAS."""
    plat = platform_for(p)
    for k in (16, 64, 5, 70):
        a = np.full((9, k), -0.0, dtype=np.float32).astype(FLOAT_DT[p])
        b = np.full((k, 11), 0.0, dtype=np.float32).astype(FLOAT_DT[p])
        b[::2] = -0.0
        c = np.full((9, 11), -0.0, dtype=np.float32)
        c[::2] = 0.0
        for model in MODELS:
            for cc in (None, c):
                got, want = both(a, b, cc, device=plat, model=model)
                assert_same_bits(got, want, f"zeros {p} k={k} {model}")


@needs_gpu
def test_overflow_inf_nan_rules():
    """Overflow to +-inf, inf - inf and inf * 0 give the model's NaN 0x7FC00000; an inf C propagates."""
    big = np.float32(3.0e38)
    a = np.full((8, 32), 2.0 ** 120, dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = np.full((32, 16), 2.0 ** 7, dtype=np.float32).astype(ml_dtypes.bfloat16)
    b[:, 1] = -b[:, 1]
    b[3, 2] = np.inf
    b[4, 2] = -np.inf
    b[:, 3] = 0
    a[0, :] = np.inf
    c = np.zeros((8, 16), dtype=np.float32)
    c[1, 4] = np.inf
    c[2, 5] = big
    for model in MODELS:
        got, want = both(a, b, c, device="bmg", model=model)
        assert_same_bits(got, want, f"overflow {model}")
        g = got.view(np.uint32)
        assert g[0, 3] == 0x7FC00000 and g[1, 2] == 0x7FC00000
        assert np.isinf(got[1, 0]) and got[1, 0] > 0 and np.isinf(got[1, 1]) and got[1, 1] < 0


@needs_gpu
@pytest.mark.parametrize("p", ["bf16", "fp16", "bf8", "hf8"])
def test_exponent_spread_goes_through_the_robust_kernel(p, stage_kernel):
    """Stages whose exact sums need more than binary64's 53 bits: the binary64 kernel's proof fails, the GPU's
    TwoSum / round-to-odd kernel recomputes those elements; the result is still the CPU's. (bf16 takes the
    FP32-pipe kernel by default, whose certificate needs no 53-bit bound: it is run here too, unflagged.)"""
    from systolic.gpu import xmx_kernels as XK
    rng = np.random.default_rng(5)
    a, b = spread_vals(rng, p, (48, 128)), spread_vals(rng, p, (128, 40))
    for kernel in ("simt", "fp32"):
        stage_kernel(kernel)
        got, want = both(a, b, device=platform_for(p), model="stage")
        assert_same_bits(got, want, f"spread {p} {kernel}")
        if p in ("bf16", "fp16") and kernel == "simt":
            assert XK.last_run["flagged"] > 0, XK.last_run


@needs_gpu
def test_three_level_cancellation_goes_to_the_cpu_path():
    """x + p0 + p1 with p0 = -x exactly and a tiny p1 whose error terms cancel again: the TwoSum kernel's
    second cascade is inexact, the element is recomputed by the CPU's exact path."""
    from systolic.gpu import xmx_kernels as XK
    m, k, n = 4, 16, 8
    a = np.zeros((m, k), dtype=np.float32)
    b = np.zeros((k, n), dtype=np.float32)
    # stage 0: 1 + 2**-60 (two products) -> C-like accumulator 1; stage 1: -1 + 2**-80 ... mixed scales
    a[:, 0], b[0, :] = 2.0 ** 60, 2.0 ** 60
    a[:, 1], b[1, :] = 2.0 ** -60, 2.0 ** -53
    a[:, 2], b[2, :] = -(2.0 ** 60), 2.0 ** 60
    a[:, 3], b[3, :] = 2.0 ** -100, 2.0 ** -54
    a[:, 4], b[4, :] = 3.0, 2.0 ** -120
    a[:, 5], b[5, :] = -(2.0 ** 30), 2.0 ** -60
    a = a.astype(ml_dtypes.bfloat16)
    b = b.astype(ml_dtypes.bfloat16)
    c = np.full((m, n), 2.0 ** -40, dtype=np.float32)
    c[1] = -(2.0 ** 100)
    got, want = both(a, b, c, device="bmg", model="stage")
    assert_same_bits(got, want, "cancellation")
    assert XK.last_run["flagged"] > 0


@needs_gpu
def test_against_the_fraction_oracle():
    """Small cases against tests/xmx/oracle.py directly (independent of both paths)."""
    from tests.xmx import oracle
    from systolic.xmx import models as MD
    rng = np.random.default_rng(3)
    for p, plat, model in (("bf16", "pvc", "stage"), ("fp16", "bmg", "stage"), ("bf16", "bmg", "sequential"),
                           ("hf8", "xe3p", "stage"), ("tf32", "pvc", "stage")):
        m, k, n = 3, 32 if p != "hf8" else 64, 5
        a = np.concatenate([rand_vals(rng, p, (m, k // 2)), spread_vals(rng, p, (m, k - k // 2))], axis=1)
        b = np.concatenate([rand_vals(rng, p, (k // 2, n)), spread_vals(rng, p, (k - k // 2, n))], axis=0)
        c = (rng.standard_normal((m, n))).astype(np.float32)
        if p == "tf32":  # the oracle reads tf32 bits (low 13 bits ignored): give it tf32 values
            a = (a.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
            b = (b.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
        got = matmul(a, b, c, device=plat, model=model, backend="cuda", **prec_kw(p)).view(np.uint32)
        want = oracle_gemm(oracle, MD, a, b, c, p, plat, model)
        np.testing.assert_array_equal(got, want)


def oracle_gemm(oracle, MD, a, b, c, p, plat, model):
    from systolic.xmx import get_platform
    from systolic.xmx.rules import ops_per_chan
    P = get_platform(plat)
    flush = MD.get_model(model, P).flushes(p, P)
    ops = ops_per_chan(p, p)
    view = {2: np.uint16, 4: np.uint32, 1: np.uint8}[np.dtype(a.dtype).itemsize]
    ab, bb = np.ascontiguousarray(a).view(view), np.ascontiguousarray(b).view(view)
    out = oracle.matmul_bits(ab.tolist(), bb.tolist(), c.view(np.uint32).tolist(), p, (model,), ops, 8 * ops, flush)
    return np.array(out, dtype=np.uint32)


@needs_gpu
def test_models_without_a_gpu_kernel_are_still_identical():
    rng = np.random.default_rng(2)
    a, b = rand_vals(rng, "bf16", (10, 32)), rand_vals(rng, "bf16", (32, 12))
    for model in ("exact", "block(8,24)"):
        got, want = both(a, b, device="pvc", model=model)
        assert_same_bits(got, want, model)


@needs_gpu
def test_large_bf16_and_fp16_stage():
    rng = np.random.default_rng(9)
    for p in ("bf16", "fp16"):
        a, b = rand_vals(rng, p, (256, 2048)), rand_vals(rng, p, (2048, 384))
        got, want = both(a, b, device="pvc", model="stage")
        assert_same_bits(got, want, f"large {p}")


# ------------------------------------------------------------------------------------------ integers

@needs_gpu
@pytest.mark.parametrize("pa", list(INT_DT))
@pytest.mark.parametrize("pb", list(INT_DT))
def test_integer_pairs(pa, pb):
    rng = np.random.default_rng(len(pa) * 7 + len(pb))
    m, k, n = 33, 200, 70
    a = rng.integers(*INT_RANGE[pa], (m, k), endpoint=True).astype(INT_DT[pa])
    b = rng.integers(*INT_RANGE[pb], (k, n), endpoint=True).astype(INT_DT[pb])
    a[0] = INT_RANGE[pa][0]
    b[:, 0] = INT_RANGE[pb][1]
    c = rng.integers(-2 ** 31, 2 ** 31, (m, n), dtype=np.int64).astype(np.int32)
    for cc in (None, c):
        got, want = both(a, b, cc)
        assert got.dtype == np.int32
        assert_same_bits(got, want, f"{pa} x {pb}")
        exact = (a.astype(np.int64) @ b.astype(np.int64) + (0 if cc is None else cc.astype(np.int64)))
        np.testing.assert_array_equal(got, (exact & 0xFFFFFFFF).astype(np.uint32).view(np.int32))


@needs_gpu
def test_integer_wraparound_and_k_split():
    """K = 40000 > the 32768 split, u8 x u8 at 255: the true sum overflows int32 and wraps modulo 2**32;
    C near the ends of the uint32 range."""
    m, k, n = 5, 40000, 9
    a = np.full((m, k), 255, dtype=np.uint8)
    b = np.full((k, n), 255, dtype=np.uint8)
    b[:, 1] = 0
    c = np.full((m, n), 2 ** 32 - 1, dtype=np.int64)
    c[1] = -(2 ** 31)
    got, want = both(a, b, c)
    assert_same_bits(got, want, "wrap")
    exact = a.astype(np.int64) @ b.astype(np.int64) + c
    np.testing.assert_array_equal(got, (exact & 0xFFFFFFFF).astype(np.uint32).view(np.int32))


# ------------------------------------------------------------------------------------------ array kinds

@needs_gpu
def test_cupy_and_torch_inputs_come_back_in_kind():
    import cupy as cp
    rng = np.random.default_rng(4)
    a, b = rand_vals(rng, "fp16", (20, 48)), rand_vals(rng, "fp16", (48, 30))
    want = matmul(a, b, device="pvc", model="stage")
    got = matmul(cp.asarray(a), cp.asarray(b), device="pvc", model="stage", backend="auto")
    assert isinstance(got, cp.ndarray)
    assert_same_bits(got, want, "cupy fp16")
    torch = pytest.importorskip("torch")
    ab, bb = rand_vals(rng, "bf16", (20, 48)), rand_vals(rng, "bf16", (48, 30))
    ta = torch.from_numpy(ab.view(np.int16)).view(torch.bfloat16).cuda()
    tb = torch.from_numpy(bb.view(np.int16)).view(torch.bfloat16).cuda()
    got = matmul(ta, tb, device="pvc", model="stage", backend="auto")
    assert isinstance(got, torch.Tensor) and got.is_cuda and got.dtype == torch.float32
    assert_same_bits(got, matmul(ab, bb, device="pvc", model="stage"), "torch bf16")
    t32a = torch.from_numpy(rng.standard_normal((20, 16)).astype(np.float32)).cuda()
    t32b = torch.from_numpy(rng.standard_normal((16, 30)).astype(np.float32)).cuda()
    got = matmul(t32a, t32b, precision="tf32", model="stage", backend="cuda")
    assert_same_bits(got, matmul(t32a.cpu().numpy(), t32b.cpu().numpy(), precision="tf32", model="stage"), "tf32")
    i8a = torch.randint(-128, 128, (20, 64), dtype=torch.int8).cuda()
    i8b = torch.randint(-128, 128, (64, 30), dtype=torch.int8).cuda()
    got = matmul(i8a, i8b, backend="auto")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.int32
    assert_same_bits(got, matmul(i8a.cpu().numpy(), i8b.cpu().numpy()), "torch int8")


# ------------------------------------------------------------------------------------------ errors

BAD = [
    (lambda: (np.ones((4, 16), ml_dtypes.bfloat16), np.ones((15, 4), ml_dtypes.bfloat16)), {}),
    (lambda: (np.ones((4, 16), np.float32), np.ones((16, 4), np.float32)), {"device": "dg2", "precision": "tf32"}),
    (lambda: (np.ones((4, 16), np.int8), np.ones((16, 4), ml_dtypes.bfloat16)), {}),
    (lambda: (np.ones((4, 16), ml_dtypes.float8_e5m2), np.ones((16, 4), ml_dtypes.float8_e5m2)), {"device": "pvc"}),
    (lambda: (np.ones((4, 16), ml_dtypes.bfloat16), np.ones((16, 4), ml_dtypes.bfloat16)), {"model": "nope"}),
    (lambda: (np.ones((4, 16), ml_dtypes.bfloat16), np.ones((16, 4), ml_dtypes.bfloat16)), {"row_block": 0}),
    (lambda: (np.ones((4, 16), ml_dtypes.bfloat16), np.ones((16, 4), ml_dtypes.bfloat16)),
     {"c": np.full((4, 4), 0.1, dtype=np.float64)}),
    (lambda: (np.ones((4, 16), ml_dtypes.bfloat16), np.ones((16, 4), ml_dtypes.bfloat16)),
     {"c": np.zeros((3, 4), dtype=np.float32)}),
    (lambda: (np.ones((4, 16), np.int8), np.ones((16, 4), np.int8)), {"c": np.full((4, 4), 2 ** 33)}),
    (lambda: (np.ones((4, 16), np.int8), np.ones((16, 4), np.int8)), {"c": np.zeros((4, 4), np.float32)}),
    (lambda: (np.ones((4, 16), np.float64), np.ones((16, 4), np.float64)), {}),
]


@needs_gpu
@pytest.mark.parametrize("case", range(len(BAD)))
def test_same_errors_as_the_cpu_path(case):
    make, kw = BAD[case]
    a, b = make()
    kw = dict(kw)
    c = kw.pop("c", None)
    with pytest.raises(errors.SystolicError) as cpu:
        matmul(a, b, c, backend="cpu", **kw)
    with pytest.raises(errors.SystolicError) as gpu:
        matmul(a, b, c, backend="cuda", **kw)
    assert type(gpu.value) is type(cpu.value)
    assert str(gpu.value) == str(cpu.value)


@needs_gpu
def test_empty_and_k_zero():
    a = np.zeros((0, 16), dtype=ml_dtypes.bfloat16)
    b = np.zeros((16, 5), dtype=ml_dtypes.bfloat16)
    got, want = both(a, b)
    assert got.shape == want.shape == (0, 5)
    a = np.zeros((3, 0), dtype=ml_dtypes.bfloat16)
    b = np.zeros((0, 5), dtype=ml_dtypes.bfloat16)
    c = np.full((3, 5), -0.0, dtype=np.float32)
    got, want = both(a, b, c)
    assert_same_bits(got, want, "k=0")


@pytest.fixture
def stage_kernel():
    """Choose the T = 2 stage kernel: "fp32" (xmx_stage32, a variant) or "simt" (binary64)."""
    from systolic.gpu import xmx_kernels as XK
    old = XK.stage32_variant, XK.stage32_max_sig

    def use(kernel, variant=XK.STAGE32_VARIANT, max_sig=XK.STAGE32_MAX_SIG):
        XK.stage32_variant = variant if kernel == "fp32" else None
        XK.stage32_max_sig = max_sig
    yield use
    XK.stage32_variant, XK.stage32_max_sig = old


@needs_gpu
@pytest.mark.parametrize("kernel", ["fp32", "simt"])
@pytest.mark.parametrize("p", ["bf16", "fp16", "bf8", "hf8", "e2m1"])
def test_both_stage_kernels(kernel, p, stage_kernel):
    """The FP32-pipe stage kernel (T = 2) and the binary64 one give the CPU's bits on random values, random bit
    patterns and exponent spreads (the other tests run the default choice). Operands whose products are not
    all exact in binary32 (denormals, inf / NaN, wide spreads) take the binary64 kernel whatever is chosen."""
    from systolic.gpu import xmx_kernels as XK
    rng = np.random.default_rng(13)
    stage_kernel(kernel)
    for what, (a, b) in (("random", (rand_vals(rng, p, (70, 160)), rand_vals(rng, p, (160, 90)))),
                         ("bits", (rand_bits(rng, p, (33, 64)), rand_bits(rng, p, (64, 47)))),
                         ("spread", (spread_vals(rng, p, (40, 128)), spread_vals(rng, p, (128, 72))))):
        c = (rng.standard_normal((a.shape[0], b.shape[1])) * 8).astype(np.float32)
        got, want = both(a, b, c, device=platform_for(p), model="stage")
        assert_same_bits(got, want, f"{kernel} {p} {what}")
        if what == "random":
            fp32 = kernel == "fp32" and p == "bf16"                 # fp16 takes the binary64 kernel by default
            assert XK.last_run["path"] == ("stage-fp32" if fp32 else "stage-simt"), XK.last_run
        if what == "bits":
            assert XK.last_run["path"] == "stage-simt"            # inf / NaN / denormal inputs


@needs_gpu
@pytest.mark.parametrize("variant", __import__("systolic.gpu.xmx_source", fromlist=["x"]).STAGE32_VARIANTS)
@pytest.mark.parametrize("p", ["bf16", "fp16"])
def test_fp32_stage_kernel_edges(p, variant, stage_kernel):
    """xmx_stage32 where its certificate is tested hardest: long K (many stages redone by the exact sum of three:
    about 0.1% of bf16 stages, 2% of fp16 ones), exact cancellation to +-0 with C = +-0 (the zero-sign rule: flagged, then
    the robust kernel), overflow to inf, fp32 subnormal results, partial tiles."""
    from systolic.gpu import xmx_kernels as XK
    stage_kernel("fp32", variant, max_sig=11)                       # fp16 too (2% of its stages redone)
    rng = np.random.default_rng(29 + variant[0] + variant[-1])
    a, b = rand_vals(rng, p, (130, 4096)), rand_vals(rng, p, (4096, 70))
    got, want = both(a, b, device="pvc", model="stage")
    assert XK.last_run["path"] == "stage-fp32"
    assert_same_bits(got, want, "long K")
    # cancellation: rows of A repeat a pair (x, x), columns of B are (y, -y): every stage sums to exactly 0
    x = rand_vals(rng, p, (40, 32))
    a = np.repeat(x, 2, axis=1)
    y = rand_vals(rng, p, (32, 24))
    b = np.stack([y, -y], axis=1).reshape(64, 24)
    for c in (None, np.full((40, 24), -0.0, np.float32), np.full((40, 24), 0.0, np.float32)):
        got, want = both(a, b, c, device="pvc", model="stage")
        assert XK.last_run["path"] == "stage-fp32"
        assert_same_bits(got, want, "cancellation")
    def near(shape, e):                                # +-(1 + u) * 2**e: a bounded exponent range
        v = (1 + rng.random(shape)) * np.where(rng.random(shape) < 0.5, -1.0, 1.0) * 2.0 ** e
        return v.astype(np.float32).astype(FLOAT_DT[p])
    e = 59 if p == "bf16" else 7                       # bf16: products up to 2**124, sums past FLT_MAX
    a, b = np.abs(near((24, 64), e)), np.abs(near((64, 20), e))
    c = np.full((24, 20), 3.4e38, np.float32)
    got, want = both(a, b, c, device="pvc", model="stage")
    assert XK.last_run["path"] == "stage-fp32"
    assert_same_bits(got, want, "overflow / near FLT_MAX")
    if p == "bf16":                                    # fp32 subnormal results (products multiples of 2**-138)
        a, b = near((36, 64), -62), near((64, 28), -62)
        got, want = both(a, b, device="pvc", model="stage")
        assert XK.last_run["path"] == "stage-fp32"
        assert_same_bits(got, want, "subnormal results")


@needs_gpu
def test_every_integer_pair_against_python_ints():
    """The integer GEMM (cuBLAS, unsigned operands shifted) against Python-integer sums, with partial tiles
    in M, N and K and every sign mix, sub-byte precisions included."""
    rng = np.random.default_rng(21)
    for pa, pb in (("s8", "s8"), ("u8", "s8"), ("s8", "u8"), ("u8", "u8"), ("s4", "u2"), ("u4", "u8")):
        m, k, n = 300, 200, 150
        a = rng.integers(*INT_RANGE[pa], (m, k), endpoint=True).astype(INT_DT[pa])
        b = rng.integers(*INT_RANGE[pb], (k, n), endpoint=True).astype(INT_DT[pb])
        c = rng.integers(-2 ** 31, 2 ** 31, (m, n), dtype=np.int64).astype(np.int32)
        got = matmul(a, b, c, backend="cuda")
        exact = a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)
        np.testing.assert_array_equal(got, (exact & 0xFFFFFFFF).astype(np.uint32).view(np.int32), f"{pa} {pb}")


@needs_gpu
@pytest.mark.parametrize("variant", __import__("systolic.gpu.xmx_source", fromlist=["x"]).STAGE_VARIANTS)
def test_every_stage_variant(variant, stage_kernel):
    """Each compiled variant of the binary64 stage kernel (rounding by Veltkamp, on the integer pipe or by the
    magic constant; 1 or 2 blocks per SM) gives the CPU's bits."""
    from systolic.gpu import xmx_kernels as XK
    rng = np.random.default_rng(17)
    stage_kernel("simt")
    old = XK.stage_variant
    XK.stage_variant = variant
    try:
        for a, b in ((rand_vals(rng, "bf16", (70, 160)), rand_vals(rng, "bf16", (160, 150))),
                     (rand_bits(rng, "bf16", (33, 64)), rand_bits(rng, "bf16", (64, 47))),
                     (spread_vals(rng, "bf16", (40, 128)), spread_vals(rng, "bf16", (128, 72)))):
            a[0, :3] = -0.0
            c = (rng.standard_normal((a.shape[0], b.shape[1])) * 2.0 ** -130).astype(np.float32)
            got, want = both(a, b, c, device="bmg", model="stage")
            assert_same_bits(got, want, f"variant {variant}")
    finally:
        XK.stage_variant = old


@needs_gpu
@pytest.mark.parametrize("da,db", [(np.int8, np.int8), (np.uint8, np.int8), (np.int8, np.uint8),
                                   (np.uint8, np.uint8)])
@pytest.mark.parametrize("with_c", [False, True])
def test_int8_torch_inputs_take_the_amx_cached_path(da, db, with_c):
    """s8/u8 torch CUDA inputs the AMX kernel reads in place go through its cached launch path: same bits as the
    CPU path (C at the int32 wrap), and last_run says which path ran (else the test would pass on the general one)."""
    torch = pytest.importorskip("torch")
    from systolic.gpu import xmx_kernels as XK
    rng = np.random.default_rng(7)
    lo_a, hi_a = np.iinfo(da).min, np.iinfo(da).max
    lo_b, hi_b = np.iinfo(db).min, np.iinfo(db).max
    a = rng.integers(lo_a, hi_a + 1, (256, 384)).astype(da)   # M % 128 == K % 128 == 0: the fast path fits
    b = rng.integers(lo_b, hi_b + 1, (384, 192)).astype(db)
    c = rng.integers(2 ** 31 - 5000, 2 ** 31, (256, 192)).astype(np.int64).astype(np.int32) if with_c else None
    want = matmul(a, b, c, device="pvc", backend="cpu")
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    tc = None if c is None else torch.from_numpy(c).cuda()
    got = matmul(ta, tb, tc, device="pvc", backend="cuda")
    assert XK.last_run["path"] == "amx-int8-fast", XK.last_run
    assert isinstance(got, torch.Tensor) and got.is_cuda
    assert_same_bits(got.cpu().numpy(), want)


@needs_gpu
def test_int8_cached_call_keeps_errors_and_counts():
    """The second identical s8 call takes the cache; a C of another shape, a bad platform and a bad row_block
    still raise the XMX path's typed errors; each call counts its DPAS."""
    torch = pytest.importorskip("torch")
    from systolic import counters
    from systolic.gpu import xmx_kernels as XK
    rng = np.random.default_rng(11)
    a = rng.integers(-128, 128, (128, 256)).astype(np.int8)
    b = rng.integers(-128, 128, (256, 64)).astype(np.int8)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    want = matmul(a, b, device="pvc", backend="cpu")
    with counters.recording() as rec:
        for _ in range(2):
            got = matmul(ta, tb, device="pvc", backend="cuda")
            assert XK.last_run["path"] == "amx-int8-fast"
            assert_same_bits(got.cpu().numpy(), want)
    assert rec.total("dpas") == 2 * (128 // 8) * (64 // 16) * (256 // 32)   # RC-8 tiles x N/exec x K/(8*ops)
    bad_c = torch.zeros((64, 64), dtype=torch.int32, device="cuda")
    for kw in ({"c": bad_c}, {"platform": "nope"}, {"row_block": 0}):
        with pytest.raises(errors.SystolicError) as e1:
            matmul(a, b, device=kw.get("platform", "pvc"), backend="cpu",
                   **{k: (v.cpu().numpy() if k == "c" else v) for k, v in kw.items() if k != "platform"})
        with pytest.raises(type(e1.value)):
            matmul(ta, tb, device=kw.get("platform", "pvc"), backend="cuda",
                   **{k: v for k, v in kw.items() if k != "platform"})


def test_bad_arguments_raise_the_cpu_paths_error_with_or_without_a_gpu():
    """backend='cuda' checks the arguments before it looks for a GPU: a K mismatch or an unknown platform is the
    CPU path's error on any machine (before, a machine without CuPy said BackendUnavailable instead)."""
    a = np.zeros((4, 32), np.int8)
    for b, kw in ((np.zeros((33, 4), np.int8), {}), (np.zeros((32, 4), np.int8), {"device": "nope"})):
        with pytest.raises(errors.SystolicError) as cpu_err:
            matmul(a, b, backend="cpu", **kw)
        with pytest.raises(type(cpu_err.value)) as gpu_err:
            matmul(a, b, backend="cuda", **kw)
        assert str(gpu_err.value) == str(cpu_err.value)


@needs_gpu
def test_counts_only_calls_that_run():
    """A call whose C is wrong raises before anything is counted, on both paths; a good s8 call counts its DPAS
    and no AMX TMULs (it runs on the integer GEMM the AMX engine shares)."""
    torch = pytest.importorskip("torch")
    from systolic import counters
    rng = np.random.default_rng(12)
    a = rng.integers(-128, 128, (64, 128)).astype(np.int8)
    b = rng.integers(-128, 128, (128, 32)).astype(np.int8)
    fa, fb = rand_vals(rng, "bf16", (16, 32)), rand_vals(rng, "bf16", (32, 16))
    for backend in ("cpu", "cuda"):
        with counters.recording() as rec:
            with pytest.raises(errors.SystolicError):
                matmul(fa, fb, np.zeros((3, 3), np.float32), device="pvc", backend=backend)
            with pytest.raises(errors.SystolicError):
                matmul(a, b, np.zeros((3, 3), np.int32), device="pvc", backend=backend)
        assert rec.total() == 0, (backend, rec.counts)
    for run in (lambda x, y, **k: matmul(x, y, device="pvc", **k),):
        with counters.recording() as cpu:
            run(a, b, backend="cpu")
        with counters.recording() as gpu:
            run(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), backend="cuda")
        assert gpu.total("dpas") == cpu.total("dpas") > 0
        assert gpu.total("amx") == 0
