"""systolic.xmx.matmul: equal to composing DPAS calls tile by tile, and to the oracles."""

import ml_dtypes
import numpy as np
import pytest

from systolic.errors import InvalidValue, UnsupportedCombination
from systolic.xmx import GRF, dpas, matmul
from systolic.xmx import pack as PK
from systolic.xmx.kernels import dpas_fast
from systolic.xmx.rules import ops_per_chan

from . import oracle as O

PREC = {np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(np.float16): "fp16", np.dtype(np.int8): "s8",
        np.dtype(np.uint8): "u8", np.dtype(ml_dtypes.int4): "s4", np.dtype(ml_dtypes.uint2): "u2",
        np.dtype(ml_dtypes.float8_e5m2): "bf8", np.dtype(ml_dtypes.float8_e4m3fn): "hf8",
        np.dtype(ml_dtypes.float4_e2m1fn): "e2m1"}


def by_dpas(a, b, c, platform, model, p1, p2, fn=dpas):
    """The GEMM as an explicit chain of DPAS instructions on a register file (RC=8 x N tiles, K steps)."""
    g = GRF(platform)
    N = g.platform.exec_size
    gb = g.grf_bytes
    kd = 8 * ops_per_chan(p1, p2)
    m, k = a.shape
    n = b.shape[1]
    is_int = p1 in ("s8", "u8", "s4", "u4", "s2", "u2")
    acc_t = "int32" if is_int else "fp32"
    mp, kp, np_ = -(-m // 8) * 8, -(-k // kd) * kd, -(-n // N) * N
    A = np.zeros((mp, kp), dtype=a.dtype)
    A[:m, :k] = a
    B = np.zeros((kp, np_), dtype=b.dtype)
    B[:k, :n] = b
    C = np.zeros((mp, np_), dtype=np.int32 if is_int else np.float32)
    if c is not None:
        C[:m, :n] = c
    D = np.zeros_like(C)
    for i0 in range(0, mp, 8):
        for j0 in range(0, np_, N):
            g.write(32 * gb, PK.pack_acc(C[i0:i0 + 8, j0:j0 + N], acc_t))
            for k0 in range(0, kp, kd):
                g.write(0, PK.pack_src2(A[i0:i0 + 8, k0:k0 + kd], p2))
                g.write(16 * gb, PK.pack_src1(B[k0:k0 + kd, j0:j0 + N], p1))
                fn(g, dst=32 * gb, src0=32 * gb, src1=16 * gb, src2=0, dst_type=acc_t, src1_precision=p1,
                   src2_precision=p2, model=model)
            D[i0:i0 + 8, j0:j0 + N] = PK.unpack_acc(g.read(32 * gb, 8 * N * 4), acc_t, 8, N)
    return D[:m, :n]


def rand(rng, dtype, shape, scale=1.0):
    dt = np.dtype(dtype)
    if dt.kind in "iu" or PREC.get(dt, "").startswith(("s", "u")):
        info = ml_dtypes.iinfo(dt)
        return rng.integers(info.min, info.max + 1, size=shape).astype(dt)
    return (rng.standard_normal(shape) * scale).astype(dt)


@pytest.mark.parametrize("platform,dt,model", [
    ("pvc", ml_dtypes.bfloat16, "stage"), ("dg2", ml_dtypes.bfloat16, "exact"), ("bmg", np.float16, "sequential"),
    ("pvc", np.float16, "block(8,20)"), ("dg2", np.int8, "stage"), ("pvc", np.uint8, "stage"),
    ("dg2", ml_dtypes.int4, "stage"), ("xe3p", ml_dtypes.float8_e5m2, "stage"),
    ("xe3p", ml_dtypes.float4_e2m1fn, "exact")])
def test_matmul_equals_composed_dpas(platform, dt, model):
    rng = np.random.default_rng(0)
    m, k, n = 11, 70, 19   # ragged: padding in every dimension
    a, b = rand(rng, dt, (m, k)), rand(rng, dt, (k, n))
    p = PREC[np.dtype(dt)]
    is_int = p[0] in "su"
    c = rng.integers(-1000, 1000, (m, n)).astype(np.int32) if is_int else rng.standard_normal((m, n)).astype(np.float32)
    got = matmul(a, b, c, device=platform, model=model)
    want = by_dpas(a, b, c, platform, model, p, p, fn=dpas_fast)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    if is_int:
        exact = (a.astype(np.int64) @ b.astype(np.int64) + c) & 0xFFFFFFFF
        np.testing.assert_array_equal(got.view(np.uint32), exact.astype(np.uint32))


def test_matmul_equals_spec_path_chain():
    rng = np.random.default_rng(1)
    a = rand(rng, ml_dtypes.bfloat16, (8, 32))
    b = rand(rng, ml_dtypes.bfloat16, (32, 16))
    c = rng.standard_normal((8, 16)).astype(np.float32)
    for model in ("stage", "exact"):
        got = matmul(a, b, c, device="pvc", model=model)
        np.testing.assert_array_equal(got.view(np.uint32), by_dpas(a, b, c, "pvc", model, "bf16", "bf16").view(np.uint32))


def test_matmul_exact_model_vs_fraction_oracle():
    rng = np.random.default_rng(2)
    a = rand(rng, np.float16, (3, 32), 4.0)
    b = rand(rng, np.float16, (32, 5), 4.0)
    got = matmul(a, b, device="pvc", model="exact")
    ab, bb = a.view(np.uint16).astype(np.int64), b.view(np.uint16).astype(np.int64)
    want = O.matmul_bits(ab.tolist(), bb.tolist(), [[0] * 5] * 3, "fp16", ("exact",), 2, 16, False)
    np.testing.assert_array_equal(got.view(np.uint32), np.array(want, dtype=np.uint32))


def test_tf32_precision_and_mixed_ints():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((9, 20)).astype(np.float32)
    b = rng.standard_normal((20, 17)).astype(np.float32)
    got = matmul(a, b, device="pvc", precision="tf32", model="stage")
    np.testing.assert_array_equal(got.view(np.uint32), by_dpas(a, b, None, "pvc", "stage", "tf32", "tf32",
                                                                 fn=dpas_fast).view(np.uint32))
    ai = rand(rng, np.int8, (5, 40))
    bi = rand(rng, ml_dtypes.uint2, (40, 9))
    got = matmul(ai, bi, device="dg2")
    np.testing.assert_array_equal(got, (ai.astype(np.int64) @ bi.astype(np.int64)).astype(np.int32))


def test_matmul_errors():
    bf = np.zeros((4, 4), dtype=ml_dtypes.bfloat16)
    with pytest.raises(UnsupportedCombination):
        matmul(np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32), device="dg2", precision="tf32")
    with pytest.raises(UnsupportedCombination):
        matmul(bf, np.zeros((4, 4), np.float16))
    with pytest.raises(InvalidValue):
        matmul(np.zeros((4, 4), np.float64), np.zeros((4, 4), np.float64))
    with pytest.raises(InvalidValue):
        matmul(bf, np.zeros((5, 4), dtype=ml_dtypes.bfloat16))
    with pytest.raises(InvalidValue):
        matmul(bf, bf, c=np.zeros((3, 3), np.float32))
    with pytest.raises(UnsupportedCombination):
        matmul(np.zeros((4, 4), ml_dtypes.float8_e5m2), np.zeros((4, 4), ml_dtypes.float8_e5m2), device="pvc")


@pytest.mark.parametrize("da,db", [(np.uint8, np.uint8), (np.int8, np.uint8), (np.uint8, np.int8),
                                   (ml_dtypes.uint4, np.int8), (ml_dtypes.int2, ml_dtypes.uint4)])
def test_int_gemm_centering_and_chunks_exact(da, db):
    # K = 2500 spans several float32 chunks; extremes of each range; C near the int32 limits wraps
    rng = np.random.default_rng(4)
    ia, ib = ml_dtypes.iinfo(da), ml_dtypes.iinfo(db)
    a = rng.choice([ia.min, ia.max, 0, 1], size=(6, 2500)).astype(da)
    b = rng.choice([ib.min, ib.max, 1], size=(2500, 9)).astype(db)
    c = rng.choice([-(2 ** 31), 2 ** 31 - 1, 0], size=(6, 9)).astype(np.int32)
    got = matmul(a, b, c, device="dg2")
    want = ((a.astype(np.int64) @ b.astype(np.int64) + c) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(got, want)


def test_matmul_argument_rules():
    """Review findings: row_block, empty M/N, and C outside the accumulator are typed errors or exact."""
    import ml_dtypes
    from systolic.errors import InvalidValue
    a = np.ones((2, 4), ml_dtypes.bfloat16)
    b = np.ones((4, 3), ml_dtypes.bfloat16)
    assert matmul(a, b, row_block=1).tolist() == [[4.0] * 3] * 2
    for bad in (-3, 0, 2.5, True):
        with pytest.raises(InvalidValue, match="row_block"):
            matmul(a, b, row_block=bad)
    assert matmul(np.zeros((0, 4), ml_dtypes.bfloat16), b).shape == (0, 3)
    assert matmul(np.zeros((0, 4), np.int8), np.zeros((4, 3), np.int8)).shape == (0, 3)
    assert matmul(a, b, c=np.full((2, 3), 0.5)).tolist() == [[4.5] * 3] * 2  # float64 C exact in fp32: fine
    with pytest.raises(InvalidValue, match="exact fp32"):
        matmul(a, b, c=np.full((2, 3), 0.1))
    with pytest.raises(InvalidValue, match="32-bit accumulator"):
        matmul(np.ones((2, 4), np.int8), np.ones((4, 2), np.int8), np.full((2, 2), 2 ** 40, np.int64))
