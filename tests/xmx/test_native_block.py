"""The compiled block(L, F) kernel (systolic.xmx.native_block) behind xmx.matmul, against the spec path.

Oracles, none of them the code under test:
* the spec path: ``models.accumulate`` (one DPAS channel, exact Fractions) chained over the GEMM's instructions
  from C, per element, on inputs decoded by the independent decoder of tests/xmx/oracle.py;
* the independent Fraction oracle ``oracle.matmul_bits`` (its own block definition, written apart from models.py);
* the numpy path (``SYSTOLIC_NO_NATIVE``), itself property-tested against the spec path.
Inputs are bit patterns with specials over-represented: signed zeros, denormals (flushed or kept per the
platform's and model's rule), infinities, NaNs with payloads, values near overflow; K is rarely a multiple of
the instruction's K or of L, so zero padding and short blocks are exercised.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from systolic import counters, jit
from systolic.xmx import matmul
from systolic.xmx import models as M
from systolic.xmx import native_block as NB
from systolic.xmx import native_block_ir as IR
from systolic.xmx.platform import get_platform
from systolic.xmx.rules import ops_per_chan

from . import oracle as O

pytestmark = pytest.mark.skipif(not NB.available(), reason="llvmlite cannot JIT on this machine")

#: precision -> (numpy dtype of the inputs, bits per element, platform that takes it)
PREC = {"bf16": (ml_dtypes.bfloat16, 16, "pvc"), "fp16": (np.float16, 16, "pvc"), "tf32": (np.float32, 32, "pvc"),
        "bf8": (ml_dtypes.float8_e5m2, 8, "xe3p"), "hf8": (ml_dtypes.float8_e4m3fn, 8, "xe3p")}
#: block sizes drawn (each (K per DPAS, L, width) is one JIT compilation: few, to keep the tests fast)
LS = [1, 3, 8, 16, 64]


def special_bits(fmt_bits: int, exp_bits: int, man_bits: int):
    """A strategy of element bit patterns: uniform, or one of the special classes of the format."""
    sign = st.sampled_from([0, 1 << (fmt_bits - 1)])
    top = (1 << exp_bits) - 1
    classes = st.one_of(
        st.integers(0, (1 << fmt_bits) - 1),                                   # anything
        sign,                                                                  # +-0
        st.builds(lambda s, m: s | m, sign, st.integers(1, (1 << man_bits) - 1)),                  # denormals
        st.builds(lambda s: s | (top << man_bits), sign),                                          # +-inf (IEEE)
        st.builds(lambda s, m: s | (top << man_bits) | m, sign, st.integers(1, (1 << man_bits) - 1)),  # NaNs
        st.builds(lambda s, e, m: s | (e << man_bits) | m, sign, st.integers(top - 3, top - 1),
                  st.integers(0, (1 << man_bits) - 1)),                                            # near overflow
        st.builds(lambda s, e, m: s | (e << man_bits) | m, sign, st.integers(1, 3),
                  st.integers(0, (1 << man_bits) - 1)),                                            # tiny normals
    )
    return classes


FMT_FIELDS = {"bf16": (16, 8, 7), "fp16": (16, 5, 10), "tf32": (32, 8, 23), "bf8": (8, 5, 2), "hf8": (8, 4, 3),
              "fp32": (32, 8, 23)}


@st.composite
def cases(draw, precs=("bf16", "fp16", "tf32")):
    prec = draw(st.sampled_from(precs))
    m, k, n = draw(st.integers(1, 4)), draw(st.integers(1, 40)), draw(st.integers(1, 11))
    elem = special_bits(*FMT_FIELDS[prec])
    plain = st.integers(0, (1 << FMT_FIELDS[prec][0]) - 1)
    mix = draw(st.sampled_from(["specials", "plain"]))
    pick = elem if mix == "specials" else plain
    a = np.array(draw(st.lists(pick, min_size=m * k, max_size=m * k)), dtype=np.uint64).reshape(m, k)
    b = np.array(draw(st.lists(pick, min_size=k * n, max_size=k * n)), dtype=np.uint64).reshape(k, n)
    if prec == "tf32":   # matmul rounds float32 to tf32 (RNE); tf32 elements are the top 19 bits
        a, b = a & ~np.uint64(0x1FFF), b & ~np.uint64(0x1FFF)
    c = None
    if draw(st.booleans()):
        c = np.array(draw(st.lists(special_bits(*FMT_FIELDS["fp32"]), min_size=m * n, max_size=m * n)),
                     dtype=np.uint64).reshape(m, n)
    L = draw(st.sampled_from(LS))
    F = draw(st.integers(0, M.MAX_FRACTION_BITS))
    denormals = draw(st.sampled_from([None, "keep", "flush", "flush-all"]))
    nan_bits = draw(st.sampled_from([M.DEFAULT_NAN, 0xFFC00000, 0x7F800001, 0x7FFFFFFF]))
    return prec, a, b, c, M.block(L, F, denormals=denormals, nan_bits=nan_bits)


def as_array(bits: np.ndarray, prec: str) -> np.ndarray:
    dtype, width, _ = PREC[prec]
    u = {8: np.uint8, 16: np.uint16, 32: np.uint32}[width]
    return bits.astype(u).view(dtype)


def decoded(bits, prec, flush):
    """Exact element values as Python floats (-0.0 kept; NaN; infinities), by the test oracle's own decoder."""
    v, neg = O.decode(int(bits), prec, flush)
    if v is O.NAN:
        return math.nan
    if isinstance(v, float):
        return v
    return -0.0 if v == 0 and neg else float(v)


def spec_gemm(a, b, c, prec, model, platform="pvc"):
    """fp32 bits of the GEMM by the spec path: models.accumulate per DPAS instruction, chained from C, on K
    zero-padded to a multiple of the instruction's K (docs/xmx.md: the padding products are +0)."""
    P = get_platform(platform)
    ops = ops_per_chan(prec, prec)
    kd = 8 * ops
    m, k = a.shape
    n = b.shape[1]
    kp = -(-k // kd) * kd
    flush = model.flushes(prec, P)
    A = [[decoded(a[i, kk], prec, flush) if kk < k else 0.0 for kk in range(kp)] for i in range(m)]
    B = [[decoded(b[kk, j], prec, flush) if kk < k else 0.0 for kk in range(kp)] for j in range(n)]
    out = np.empty((m, n), dtype=np.uint32)
    for i in range(m):
        for j in range(n):
            acc_bits = 0 if c is None else int(c[i, j])
            for k0 in range(0, kp, kd):
                acc = decoded(acc_bits, "fp32", False)
                prods = [M.exact_product(A[i][kk], B[j][kk]) for kk in range(k0, k0 + kd)]
                stages = [prods[s:s + ops] for s in range(0, kd, ops)]
                acc_bits = M.accumulate(model, acc, stages)
            out[i, j] = acc_bits
    return out


def run_matmul(prec, a, b, c, model, platform="pvc"):
    x, y = as_array(a, prec), as_array(b, prec)
    cc = None if c is None else c.astype(np.uint32).view(np.float32)
    res = matmul(x, y, cc, device=platform, model=model, precision="tf32" if prec == "tf32" else None)
    return np.asarray(res).view(np.uint32), counters.path_taken(f"xmx.matmul {prec}x{prec}")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_compiled_block_gemm_equals_spec_path(case):
    prec, a, b, c, model = case
    got, path = run_matmul(prec, a, b, c, model)
    assert path == "jit-block"
    np.testing.assert_array_equal(got, spec_gemm(a, b, c, prec, model))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(precs=("bf8", "hf8")))
def test_compiled_block_gemm_fp8_equals_independent_oracle(case):
    """fp8 on xe3p (32 products per DPAS), against the Fraction oracle written apart from models.py."""
    prec, a, b, c, model = case
    model = M.block(model.block_size, model.fraction_bits, denormals=model.denormals)   # the oracle's NaN
    got, path = run_matmul(prec, a, b, c, model, platform="xe3p")
    assert path == "jit-block"
    ops = ops_per_chan(prec, prec)
    kd = 8 * ops
    m, k = a.shape
    kp = -(-k // kd) * kd
    ap = np.zeros((m, kp), dtype=np.uint64)
    ap[:, :k] = a
    bp = np.zeros((kp, b.shape[1]), dtype=np.uint64)
    bp[:k] = b
    cb = np.zeros((m, b.shape[1]), dtype=np.uint64) if c is None else c
    flush = model.flushes(prec, get_platform("xe3p"))
    want = O.matmul_bits(ap.tolist(), bp.tolist(), cb.tolist(), prec, ("block", model.block_size,
                         model.fraction_bits), ops, kd, flush)
    np.testing.assert_array_equal(got, np.array(want, dtype=np.uint32))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(["bf16", "fp16", "tf32"]), st.integers(1, 70), st.integers(1, 300), st.integers(1, 70),
       st.sampled_from(LS), st.integers(0, 44), st.integers(0, 2 ** 32 - 1))
def test_compiled_block_gemm_equals_numpy_path_larger(prec, m, k, n, L, F, seed):
    """Shapes past the register block and the panel width (row and column tails, many instructions and
    threads), data with wide exponent spans: the compiled path against the numpy path."""
    rng = np.random.default_rng(seed)
    dtype = PREC[prec][0]
    scale = lambda shape: np.ldexp(1.0, rng.integers(-40, 40, shape))  # noqa: E731
    with np.errstate(over="ignore"):   # fp16 overflows to infinities: wanted
        x = (rng.standard_normal((m, k)) * scale((m, k))).astype(dtype)
        y = (rng.standard_normal((k, n)) * scale((k, n))).astype(dtype)
        c = (rng.standard_normal((m, n)) * scale((m, n))).astype(np.float32)
    model = M.block(L, F)
    kw = {"precision": "tf32"} if prec == "tf32" else {}
    got = matmul(x, y, c, model=model, **kw)
    assert counters.path_taken(f"xmx.matmul {prec}x{prec}") == "jit-block"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYSTOLIC_NO_NATIVE", "1")
        want = matmul(x, y, c, model=model, **kw)
    assert counters.path_taken(f"xmx.matmul {prec}x{prec}") == "emulator"
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_models_it_does_not_take_go_to_the_numpy_path():
    """ftz_result=True and a nan_bits that is no NaN pattern are left to the numpy path, which is exact."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 20)).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal((20, 5)).astype(ml_dtypes.bfloat16)
    x[0, 0] = np.nan
    x[1, 1] = ml_dtypes.bfloat16(1e-39)
    for model in (M.block(8, 24, ftz_result=True), M.block(8, 24, nan_bits=0x00000001)):
        assert not NB.applies(model)
        got = matmul(x, y, model=model)
        assert counters.path_taken("xmx.matmul bf16xbf16") == "emulator"
        want = spec_gemm(x.view(np.uint16).astype(np.uint64), y.view(np.uint16).astype(np.uint64), None, "bf16",
                         model)
        np.testing.assert_array_equal(got.view(np.uint32), want)


@pytest.mark.parametrize("width", [128, 256, 512])
def test_every_vector_width_equals_numpy_path(monkeypatch, width):
    """The kernel built for SSE, AVX2 and AVX-512 lanes (forced by SYSTOLIC_VECTOR_BITS; on a host without
    AVX-512 LLVM splits the 512-bit vectors, so the AVX-512 construction runs here too)."""
    rng = np.random.default_rng(width)
    with np.errstate(over="ignore"):   # fp16 overflows to infinities: wanted
        x = (rng.standard_normal((11, 45)) * np.ldexp(1.0, rng.integers(-30, 30, (11, 45)))).astype(np.float16)
        y = (rng.standard_normal((45, 37)) * np.ldexp(1.0, rng.integers(-30, 30, (45, 37)))).astype(np.float16)
    x[0, :3] = [np.inf, np.nan, -0.0]
    y[5, 2] = -np.inf
    model = M.block(5, 13)
    monkeypatch.setenv("SYSTOLIC_VECTOR_BITS", str(width))
    assert NB.kernel_shape()[0] == width // 64
    got = matmul(x, y, model=model)
    assert counters.path_taken("xmx.matmul fp16xfp16") == "jit-block"
    monkeypatch.setenv("SYSTOLIC_NO_NATIVE", "1")
    want = matmul(x, y, model=model)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_avx512_kernel_compiles_to_zmm_code():
    """The 512-bit construction is AVX-512 code for an AVX-512 CPU (assembly only: runs on any host)."""
    FV, R, V = 8, *NB.BLOCK[512]
    asm = jit.emit_asm(IR.block_module(kd=16, L=8, FV=FV, R=R, V=V), cpu="sapphirerapids", amx=False)
    assert "zmm" in asm and "vrndscalepd" in asm


def test_blocks_restart_at_each_instruction():
    assert IR.blocks(16, 5) == [(0, 5), (5, 5), (10, 5), (15, 1)]
    assert IR.blocks(8, 64) == [(0, 8)]
    assert IR.blocks(16, 16) == [(0, 16)]


@pytest.mark.parametrize("L", [1, 8])
def test_blocks_far_below_fp32_keep_their_sign(L):
    """Blocks whose every term lies far below fp32's range (bf16 products down to 2**-266): the exact block sum
    rounds to a zero of its own sign (-0 for a negative sum, even with +0 terms), so the alignment must use the
    true largest exponent however small it is."""
    x = np.full((2, 16), 2.0 ** -110, dtype=ml_dtypes.bfloat16)
    y = np.full((16, 3), -(2.0 ** -120), dtype=ml_dtypes.bfloat16)
    x[1, ::2] = ml_dtypes.bfloat16(2.0 ** -133)             # bf16 denormals: kept with denormals="keep"
    y[::3, 1] = 0.0
    model = M.block(L, 3, denormals="keep")
    got, path = run_matmul("bf16", x.view(np.uint16).astype(np.uint64), y.view(np.uint16).astype(np.uint64), None,
                           model)
    assert path == "jit-block"
    want = spec_gemm(x.view(np.uint16).astype(np.uint64), y.view(np.uint16).astype(np.uint64), None, "bf16", model)
    assert (want[:, [0, 2]] == 0x80000000).all()    # column 1 ends with a block of +0 products: +0
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(1, 32, 1), (200, 16, 3), (3, 48, 200), (37, 16, 37)])
@pytest.mark.parametrize("threads", [1, 3])
def test_narrow_shapes_and_job_splits(shape, threads):
    """A narrow B is computed transposed (same products, same K order per element); few panels are split over
    rows too: both against the numpy path."""
    from systolic.xmx import kernels as KN
    m, k, n = shape
    rng = np.random.default_rng(m * 1000 + n)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32)
    model = M.block(3, 9)
    got = NB.gemm(a, b, c, 16, model, threads=threads)
    want = KN.float_mma(a.astype(np.float64), b.astype(np.float64), c.astype(np.float64), ops_per_chan=2,
                        k_per_instr=16, model=model)
    np.testing.assert_array_equal(got, want)
