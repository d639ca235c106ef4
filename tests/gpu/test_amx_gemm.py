"""``systolic.amx.matmul(..., backend="cuda")`` is bit-identical to the CPU path (backend="cpu").

The CPU path is itself proven equal to looping the instructions on a TileMachine (tests/amx/test_gemm.py) and
to silicon (tests/native); here the GPU kernels are compared with it bit for bit on random and adversarial
inputs: denormals, +-0, infinities, NaN payloads (quiet and signalling), exact cancellation, overflow, values
around 2^-126 (the FTZ check path), raw random bit patterns, int8 extremes and accumulators at the int32 wrap,
every sign mix, edge shapes (partial tiles, odd K, K beyond one mma chunk). Plus the int8 result against exact
Python integers, and the exact GPU kernel against the fast one.
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest

from systolic.amx import matmul
from systolic.errors import BackendUnavailable, InvalidOpcode, InvalidValue

from .conftest import assert_same_bits, needs_gpu

BF16 = np.dtype(ml_dtypes.bfloat16)
SHAPES = [(1, 1, 1), (1, 2, 1), (3, 5, 7), (16, 32, 16), (17, 66, 33), (70, 130, 150), (129, 96, 65),
          (128, 256, 128), (200, 1000, 72)]


# ------------------------------------------------------------------------------------------ inputs

def f16_bits(rng, shape, profile, bf16: bool) -> np.ndarray:
    """16-bit float bit patterns of a profile (bf16: 8-bit exponent, fp16: 5-bit)."""
    eb, mb = (8, 7) if bf16 else (5, 10)
    emax = (1 << eb) - 1
    sign = rng.integers(0, 2, shape).astype(np.uint16) << 15
    man = rng.integers(0, 1 << mb, shape).astype(np.uint16)
    if profile == "normal":
        x = rng.standard_normal(shape).astype(np.float32)
        return x.astype(BF16 if bf16 else np.float16).view(np.uint16)
    if profile == "raw":
        return rng.integers(0, 1 << 16, shape).astype(np.uint16)
    if profile == "wide":
        e = rng.integers(1, emax, shape)
    elif profile == "tiny":                                # products and sums around 2^-126 (bf16) / fp16 denormals
        e = rng.integers(0, min(24, emax), shape)
    elif profile == "overflow":
        e = rng.integers(emax - 6, emax, shape)
    else:
        raise ValueError(profile)
    return sign | (e.astype(np.uint16) << mb) | man


def sprinkle(rng, bits, bf16: bool, frac=0.08) -> np.ndarray:
    """Put specials at random places: +-0, +-inf, quiet and signalling NaNs with payloads, denormals, max."""
    eb, mb = (8, 7) if bf16 else (5, 10)
    exp = ((1 << eb) - 1) << mb
    specials = np.array([0, 0x8000, exp, 0x8000 | exp, exp | 1, exp | (1 << (mb - 1)) | 3, 0x8000 | exp | 5,
                         1, 0x8001, (1 << mb) - 1, exp - 1, 0x8000 | (exp - 1)], np.uint16)
    out = bits.copy()
    where = rng.random(bits.shape) < frac
    out[where] = rng.choice(specials, int(where.sum()))
    return out


def c_bits(rng, shape, profile) -> np.ndarray:
    if profile == "zero":
        return np.zeros(shape, np.uint32)
    if profile == "normal":
        return rng.standard_normal(shape).astype(np.float32).view(np.uint32)
    if profile == "raw":
        return rng.integers(0, 1 << 32, shape, dtype=np.uint64).astype(np.uint32)
    if profile == "tiny":
        e = rng.integers(0, 4, shape).astype(np.uint32)
        return (rng.integers(0, 2, shape).astype(np.uint32) << 31) | (e << 23) | rng.integers(0, 1 << 23, shape).astype(np.uint32)
    if profile == "mixed":
        x = rng.standard_normal(shape).astype(np.float32).view(np.uint32)
        sp = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7F800001, 0x7FC00123, 0xFFA00000, 1, 0x80000001,
                       0x00800000, 0x7F7FFFFF], np.uint32)
        w = rng.random(shape) < 0.1
        x[w] = rng.choice(sp, int(w.sum()))
        return x
    raise ValueError(profile)


def float_case(seed, shape, kind, pa, pb, pc, specials):
    rng = np.random.default_rng(seed)
    M, K, N = shape
    bf = kind == "bf16"
    a = f16_bits(rng, (M, K), pa, bf)
    b = f16_bits(rng, (K, N), pb, bf)
    if specials:
        a, b = sprinkle(rng, a, bf), sprinkle(rng, b, bf)
    dt = BF16 if bf else np.dtype(np.float16)
    c = c_bits(rng, (M, N), pc).view(np.float32)
    return a.view(dt), b.view(dt), c


def cpu_for(kind):
    return "sapphirerapids" if kind == "bf16" else "graniterapids"


# ------------------------------------------------------------------------------------------ float

PROFILES = [("normal", "normal", "zero", False), ("normal", "normal", "normal", True), ("wide", "wide", "mixed", True),
            ("tiny", "tiny", "tiny", False), ("tiny", "normal", "tiny", True), ("overflow", "overflow", "normal", False),
            ("raw", "raw", "raw", False), ("wide", "tiny", "zero", False)]


@needs_gpu
@pytest.mark.parametrize("kind", ["bf16", "fp16"])
@pytest.mark.parametrize("prof", PROFILES, ids=lambda p: "-".join(str(x) for x in p))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_float_equals_cpu(kind, prof, shape):
    seed = zlib.crc32(repr((kind, prof, shape)).encode())
    a, b, c = float_case(seed, shape, kind, *prof)
    want = matmul(a, b, c, device=cpu_for(kind), backend="cpu")
    got = matmul(a, b, c, device=cpu_for(kind), backend="cuda")
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    assert_same_bits(got, want, f"{kind} {prof} {shape}")


@needs_gpu
@pytest.mark.parametrize("kind", ["bf16", "fp16"])
@pytest.mark.parametrize("prof", PROFILES[:4], ids=lambda p: "-".join(str(x) for x in p))
def test_float_without_c_equals_cpu(kind, prof):
    a, b, _ = float_case(77, (90, 140, 70), kind, *prof)
    assert_same_bits(matmul(a, b, device=cpu_for(kind), backend="cuda"), matmul(a, b, device=cpu_for(kind), backend="cpu"))


@needs_gpu
@pytest.mark.parametrize("kind", ["bf16", "fp16"])
def test_float_cancellation_and_signed_zeros(kind):
    """Rows that cancel exactly (x, -x pairs), -0 chains from flushed tiny products, C = -0."""
    rng = np.random.default_rng(7)
    dt = BF16 if kind == "bf16" else np.dtype(np.float16)
    M, K, N = 33, 96, 40
    x = rng.standard_normal((M, K // 2)).astype(np.float32).astype(dt)
    a = np.empty((M, K), dt)
    a[:, 0::2], a[:, 1::2] = x, x
    b = np.ones((K, N), np.float32)
    b[1::2] = -1
    b = b.astype(dt)
    c = np.full((M, N), -0.0, np.float32)
    want = matmul(a, b, c, device=cpu_for(kind), backend="cpu")
    assert_same_bits(matmul(a, b, c, device=cpu_for(kind), backend="cuda"), want)
    tiny = np.full((M, K), 2.0 ** -70, np.float32).astype(dt) if kind == "bf16" else np.full((M, K), 2.0 ** -14, dt)
    neg = -np.full((K, N), 2.0 ** -70 if kind == "bf16" else 2.0 ** -14, np.float32).astype(dt)
    want = matmul(tiny, neg, c, device=cpu_for(kind), backend="cpu")
    assert_same_bits(matmul(tiny, neg, c, device=cpu_for(kind), backend="cuda"), want)


@needs_gpu
@pytest.mark.parametrize("variant", ["128x128_8x8", "128x128_8x8cs", "128x64_8x4", "128x64_8x4cs", "64x128_4x8",
                                     "64x64_4x4"])
def test_every_tile_variant_gives_the_same_bits(variant):
    from systolic.gpu import amx_kernels as G
    saved = G.float_variant()
    try:
        G.set_float_variant(fast=variant)
        for prof in (("normal", "normal", "normal", False), ("wide", "wide", "mixed", True)):
            a, b, c = float_case(11, (150, 200, 190), "bf16", *prof)
            assert_same_bits(matmul(a, b, c, backend="cuda"), matmul(a, b, c, backend="cpu"), variant)
    finally:
        G.set_float_variant(**saved)


@needs_gpu
@pytest.mark.parametrize("check", ["64x64_4x4", "64x64_4x4cs", "128x64_8x4", "128x64_8x4cs"])
def test_every_check_variant_gives_the_same_bits(check):
    from systolic.gpu import amx_kernels as G
    saved = G.float_variant()
    try:
        G.set_float_variant(check=check)
        a, b, c = float_case(12, (150, 200, 190), "bf16", "tiny", "tiny", "tiny", True)
        assert_same_bits(matmul(a, b, c, backend="cuda"), matmul(a, b, c, backend="cpu"), check)
    finally:
        G.set_float_variant(**saved)


@needs_gpu
@pytest.mark.parametrize("kind", ["bf16", "fp16"])
def test_exact_kernel_equals_cpu_everywhere(kind):
    """The slow kernel (x86 rules at every step, used for rows/columns with inf/NaN) on whole matrices."""
    from systolic.gpu.amx_kernels import exact_matmul
    for prof in PROFILES:
        a, b, c = float_case(3, (40, 90, 50), kind, *prof)
        assert_same_bits(exact_matmul(a, b, c, cpu=cpu_for(kind)), matmul(a, b, c, device=cpu_for(kind), backend="cpu"),
                         str(prof))


# ------------------------------------------------------------------------------------------ int8

INT8_SHAPES = SHAPES + [(64, 4096, 64), (130, 257, 300)]


def int8_case(seed, shape, sa, sb, profile):
    rng = np.random.default_rng(seed)
    M, K, N = shape
    da, db = (np.int8 if sa else np.uint8), (np.int8 if sb else np.uint8)

    def gen(sh, dt):
        if profile == "extreme":
            vals = np.array([0, 1, 0x7F, 0x80, 0x81, 0xFF], np.uint8)
            return rng.choice(vals, sh).view(dt)
        return rng.integers(0, 256, sh).astype(np.uint8).view(dt)
    a, b = gen((M, K), da), gen((K, N), db)
    if profile == "extreme":
        c = rng.choice(np.array([2 ** 31 - 1, -2 ** 31, 2 ** 31 - 100000, -2 ** 31 + 5, 0], np.int64),
                       (M, N)).astype(np.int32)
    else:
        c = rng.integers(-2 ** 31, 2 ** 31, (M, N), dtype=np.int64).astype(np.int32)
    return a, b, c


@needs_gpu
@pytest.mark.parametrize("signs", [(True, True), (True, False), (False, True), (False, False)],
                         ids=["ss", "su", "us", "uu"])
@pytest.mark.parametrize("profile", ["random", "extreme"])
@pytest.mark.parametrize("shape", INT8_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_int8_equals_cpu(signs, profile, shape):
    a, b, c = int8_case(zlib.crc32(repr((signs, profile, shape)).encode()), shape, *signs, profile)
    want = matmul(a, b, c, backend="cpu")
    got = matmul(a, b, c, backend="cuda")
    assert got.dtype == np.int32
    assert_same_bits(got, want, f"{signs} {profile} {shape}")


@needs_gpu
@pytest.mark.parametrize("signs", [(True, True), (False, False), (False, True)], ids=["ss", "uu", "us"])
def test_int8_against_python_integers(signs):
    """Independent oracle: exact integers, wrapped to int32 (SDM TDPB*D: products exact, sums mod 2^32)."""
    a, b, c = int8_case(5, (9, 37, 11), *signs, "extreme")
    got = matmul(a, b, c, backend="cuda")
    A, B, C = a.astype(object), b.astype(object), c.astype(object)
    for i in range(9):
        for j in range(11):
            s = int(C[i, j]) + sum(int(A[i, k]) * int(B[k, j]) for k in range(37))
            s = (s + 2 ** 31) % 2 ** 32 - 2 ** 31
            assert int(got[i, j]) == s


@needs_gpu
@pytest.mark.parametrize("K", [1, 3, 17, 700, 4099])
def test_int8_every_sign_mix_and_odd_k(K):
    """K not a multiple of cuBLAS's 4 (padded with zeros), every sign mix (unsigned operands shifted into int8,
    the shift added back as rank-one terms), C at the wrap."""
    for signs in ((True, True), (True, False), (False, True), (False, False)):
        a, b, c = int8_case(31 + K, (150, K, 190), *signs, "extreme")
        assert_same_bits(matmul(a, b, c, backend="cuda"), matmul(a, b, c, backend="cpu"), f"{signs} K={K}")
        assert_same_bits(matmul(a, b, backend="cuda"), matmul(a, b, backend="cpu"), f"{signs} K={K} no C")


@needs_gpu
def test_int8_k_beyond_one_chunk():
    """K > 131056: several cuBLAS calls, each adding into the last with beta = 1 (no partial sum inside one
    call may pass 2^31); the sums wrap modulo 2^32 several times, and so does C + the sum: the epilogue's
    wrap-around is what is checked against the CPU path."""
    from systolic.gpu.int_gemm import K_CHUNK
    K = K_CHUNK + 1000
    for a0, b0 in ((255, 255), (-128, -128), (255, -128), (-128, 255)):
        a = np.full((20, K), a0, np.uint8 if a0 > 0 else np.int8)
        b = np.full((K, 24), b0, np.uint8 if b0 > 0 else np.int8)
        b[::3] = b0 - 1 if b0 > 0 else b0 + 1
        c = np.full((20, 24), 2 ** 31 - 7, np.int32)
        assert_same_bits(matmul(a, b, c, backend="cuda"), matmul(a, b, c, backend="cpu"), f"{a0} {b0}")


# ------------------------------------------------------------------------------------------ arrays in, arrays out

@needs_gpu
def test_cupy_in_cupy_out_zero_copy_inputs():
    import cupy as cp
    a, b, c = float_case(21, (64, 96, 80), "bf16", "normal", "normal", "normal", False)
    want = matmul(a, b, c, backend="cpu")
    gc = cp.asarray(c)
    got = matmul(a, b, gc)                               # "auto": c lives on the GPU -> cuda
    assert isinstance(got, cp.ndarray)
    assert_same_bits(got, want)
    a8, b8, c8 = int8_case(22, (64, 128, 64), True, False, "random")
    got = matmul(cp.asarray(a8), cp.asarray(b8), cp.asarray(c8))
    assert isinstance(got, cp.ndarray)
    assert_same_bits(got, matmul(a8, b8, c8, backend="cpu"))


@needs_gpu
def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    a, b, c = float_case(23, (50, 70, 90), "bf16", "wide", "wide", "mixed", True)
    want = matmul(a, b, c, backend="cpu")
    ta = torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).cuda()
    tb = torch.from_numpy(b.view(np.int16).copy()).view(torch.bfloat16).cuda()
    tc = torch.from_numpy(c.copy()).cuda()
    got = matmul(ta, tb, tc)
    assert isinstance(got, torch.Tensor) and got.is_cuda and got.dtype == torch.float32
    assert_same_bits(got.cpu().numpy(), want)
    # a transposed (non-contiguous) view is taken with one device copy, same bits
    tbt = tb.t().contiguous().t()
    assert not tbt.is_contiguous()
    assert_same_bits(matmul(ta, tbt, tc).cpu().numpy(), want)
    h = torch.from_numpy(a.astype(np.float16)).cuda()
    g = torch.from_numpy(b.astype(np.float16)).cuda()
    assert_same_bits(matmul(h, g, device="graniterapids").cpu().numpy(),
                     matmul(a.astype(np.float16), b.astype(np.float16), device="graniterapids", backend="cpu"))
    i8 = torch.randint(-128, 128, (40, 64), dtype=torch.int8).cuda()
    u8 = torch.randint(0, 256, (64, 30), dtype=torch.uint8).cuda()
    assert_same_bits(matmul(i8, u8).cpu().numpy(), matmul(i8.cpu().numpy(), u8.cpu().numpy(), backend="cpu"))


@needs_gpu
def test_zero_copy_intake():
    import cupy as cp
    from systolic.gpu.runtime import intake
    x = cp.arange(64, dtype=cp.int8).reshape(8, 8)
    it = intake(x)
    assert it.data.data.ptr == x.data.ptr and not it.copied and it.kind == "cupy"
    torch = pytest.importorskip("torch")
    t = torch.zeros((8, 8), dtype=torch.bfloat16, device="cuda")
    it = intake(t)
    assert it.data.data.ptr == t.data_ptr() and not it.copied and it.dtype == BF16
    it = intake(t.t())
    assert it.copied


# ------------------------------------------------------------------------------------------ same errors

@needs_gpu
@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_same_errors_on_both_backends(backend):
    a = np.zeros((4, 6), BF16)
    with pytest.raises(InvalidValue, match="a \\(M, K\\) and b \\(K, N\\)"):
        matmul(a, np.zeros((5, 3), BF16), backend=backend)
    with pytest.raises(InvalidValue, match="no AMX instruction"):
        matmul(a, np.zeros((6, 3), np.float16), backend=backend)
    with pytest.raises(InvalidOpcode):
        matmul(np.zeros((4, 6), np.float16), np.zeros((6, 3), np.float16), backend=backend)  # SPR lacks AMX-FP16
    with pytest.raises(InvalidValue, match="c must be"):
        matmul(a, np.zeros((6, 3), BF16), np.zeros((4, 3), np.int32), backend=backend)
    with pytest.raises(InvalidValue, match="threads"):
        matmul(a, np.zeros((6, 3), BF16), threads=0, backend=backend)


@needs_gpu
def test_cpu_only_methods_are_refused_on_cuda():
    with pytest.raises(InvalidValue, match="method"):
        matmul(np.zeros((2, 2), np.int8), np.zeros((2, 2), np.int8), method="instructions", backend="cuda")


@needs_gpu
def test_empty_shapes_return_c_untouched():
    c = np.array([[1e-40, -0.0]], np.float32)                # a denormal: no TMUL runs, so no DAZ either
    got = matmul(np.zeros((1, 0), BF16), np.zeros((0, 2), BF16), c, backend="cuda")
    assert_same_bits(got, c)


def test_unknown_backend_is_a_typed_error():
    with pytest.raises(InvalidValue, match="backend"):
        matmul(np.zeros((2, 2), np.int8), np.zeros((2, 2), np.int8), backend="tpu")


def test_cuda_without_gpu_is_backend_unavailable(monkeypatch):
    from systolic.gpu import runtime
    monkeypatch.setenv(runtime.DISABLE_ENV, "1")
    runtime.availability(refresh=True)
    try:
        with pytest.raises(BackendUnavailable, match="disabled"):
            matmul(np.zeros((2, 2), np.int8), np.zeros((2, 2), np.int8), backend="cuda")
        # numpy inputs under "auto" keep running on the CPU
        assert matmul(np.ones((2, 4), np.int8), np.ones((4, 2), np.int8))[0, 0] == 4
    finally:
        monkeypatch.delenv(runtime.DISABLE_ENV)
        runtime.availability(refresh=True)


@needs_gpu
def test_cuda_calls_count_the_cpu_paths_tmuls():
    """amx.matmul(backend="cuda") records the TMULs the CPU path records (systolic.counters), through the
    general path, the cached int8 launch path (torch and CuPy) and the float kernels."""
    import cupy as cp
    torch = pytest.importorskip("torch")
    from systolic import counters
    a8, b8, c8 = int8_case(41, (40, 100, 36), True, False, "random")
    af, bf, cf = float_case(42, (40, 70, 36), "bf16", "normal", "normal", "normal", False)
    with counters.recording() as want:
        matmul(a8, b8, c8, backend="cpu")
        matmul(af, bf, cf, backend="cpu")
    assert want.total("amx") > 0
    for to in (np.asarray, cp.asarray, lambda x: torch.from_numpy(x).cuda()):
        with counters.recording() as got:
            matmul(to(a8), to(b8), to(c8), backend="cuda")
            matmul(af, bf, cf, backend="cuda")
        assert got.by("amx", "op", "m", "n", "k_dwords") == want.by("amx", "op", "m", "n", "k_dwords"), to
