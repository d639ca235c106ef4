"""joint_matrix_mad against the instructions it stands for: DPAS chains placed on a register file and run one by
one (``systolic.xmx.dpas(path="fast")``, the engine's instruction path) as IGC's ``DEFINE_MAD_LARGE_SLICE`` writes them,
and AMX tile sequences on the TileMachine (``amx="tiles"``). Random float data, so the roundings matter."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from systolic import sycl, xmx
from systolic.sycl import matrix as jm
from systolic.xmx import pack as PK

BF = np.dtype(ml_dtypes.bfloat16)
NAME = {np.dtype(np.float32): "fp32", BF: "bf16", np.dtype(np.float16): "fp16", np.dtype(np.int32): "int32"}


def dpas_tile(plat, a, b, c, ctype, dtype, prec):
    """One DPAS: D (rc x N, dtype) = C (ctype) + A (rc x K) B (K x N), via the GRF."""
    g = xmx.GRF(plat)
    gb = g.grf_bytes
    g.write(0, PK.pack_src2(a, prec))
    g.write(16 * gb, PK.pack_src1(b, prec))
    g.write(32 * gb, PK.pack_acc(c, ctype))
    xmx.dpas(g, dst=48 * gb, src0=32 * gb, src1=16 * gb, src2=0, dst_type=dtype, src0_type=ctype,
             src1_precision=prec, src2_precision=prec, rc=a.shape[0], device=plat, path="fast")
    return PK.unpack_acc(g.read(48 * gb, a.shape[0] * b.shape[1] * PK.acc_dtype(dtype).itemsize), dtype,
                         a.shape[0], b.shape[1])


def igc_mad(plat, a, b, c, ctype, dtype, prec, mid):
    """IGC's decomposition: 8-row x N tiles; K in steps of one DPAS; the partial sum held in type ``mid``."""
    P = xmx.get_platform(plat)
    N = P.exec_size
    ks = 16 if prec in ("bf16", "fp16") else (8 if prec == "tf32" else 32)
    M, K = a.shape
    out = np.empty((M, b.shape[1]), PK.acc_dtype(dtype))
    for m0 in range(0, M, 8):
        rc = min(8, M - m0)
        for n0 in range(0, b.shape[1], N):
            acc, at = c[m0:m0 + rc, n0:n0 + N], ctype
            for s, k0 in enumerate(range(0, K, ks)):
                t = dtype if k0 + ks >= K else mid
                acc = dpas_tile(plat, a[m0:m0 + rc, k0:k0 + ks], b[k0:k0 + ks, n0:n0 + N], acc, at, t, prec)
                at = t
            out[m0:m0 + rc, n0:n0 + N] = acc
    return out


def run_mad(dev, a, b, c, td, ta_T=None):
    q = sycl.queue(dev)
    sg = q.get_device().get_info("sub_group_sizes")[0]
    M, K = a.shape
    N = b.shape[1]
    d = np.zeros((M, N), td)
    pa, pb, pc, pd = (sycl.ptr(np.ascontiguousarray(x)) for x in (a, b, c, d))
    Ta = ta_T or a.dtype.type

    def kernel(it):
        s = it.get_sub_group()
        A = jm.joint_matrix(s, Ta, jm.use.a, M, K, jm.layout.row_major)
        B = jm.joint_matrix(s, Ta, jm.use.b, K, N, jm.layout.row_major)
        C = jm.joint_matrix(s, c.dtype.type, jm.use.accumulator, M, N)
        D = jm.joint_matrix(s, np.dtype(td).type, jm.use.accumulator, M, N)
        jm.joint_matrix_load(s, A, pa, K)
        jm.joint_matrix_load(s, B, pb, N)
        jm.joint_matrix_load(s, C, pc, N, jm.layout.row_major)
        jm.joint_matrix_mad(s, D, A, B, C)
        jm.joint_matrix_store(s, D, pd, N, jm.layout.row_major)
    q.parallel_for(sycl.nd_range((1, sg), (1, sg)), kernel)
    return np.asarray(pd).reshape(M, N)


def bits(x):
    x = np.ascontiguousarray(x)
    return x.view({2: np.uint16, 4: np.uint32}[x.dtype.itemsize])


CASES = [("pvc", (32, 64, 32), BF, BF), ("pvc", (32, 64, 32), np.float32, BF), ("pvc", (32, 64, 32), BF, np.float32),
         ("pvc", (1, 64, 32), np.float32, BF), ("pvc", (1, 64, 32), BF, np.float32),
         ("pvc", (16, 16, 16), BF, BF), ("pvc", (8, 16, 16), BF, BF), ("pvc", (32, 64, 16), np.float16, np.float16),
         ("bmg", (32, 64, 32), np.float16, np.float32), ("dg2", (32, 32, 16), np.float32, np.float32),
         ("pvc", (5, 16, 16), np.float32, np.float32)]


@pytest.mark.parametrize("dev,shape,tc,td", CASES, ids=lambda v: str(v))
def test_mad_equals_igc_dpas_chain(dev, shape, tc, td):
    M, N, K = shape
    rng = np.random.default_rng(M * 1000 + N + K)
    ta = np.float16 if tc == np.float16 or td == np.float16 or dev == "bmg" else BF
    a = rng.standard_normal((M, K)).astype(ta)
    b = rng.standard_normal((K, N)).astype(ta)
    c = (rng.standard_normal((M, N)) * 4).astype(tc)
    got = run_mad(dev, a, b, c, td)
    prec = NAME[np.dtype(ta)]
    mid = {(32, 64, 32): NAME[np.dtype(tc)], (1, 64, 32): NAME[np.dtype(td)]}.get(shape, NAME[np.dtype(tc)])
    want = igc_mad(dev, a, b, c, NAME[np.dtype(tc)], NAME[np.dtype(td)], prec, mid)
    assert np.array_equal(bits(got), bits(want))


def test_intermediate_rounding_is_observable():
    """The 32x64x32 bf16-accumulator chain rounds between the K halves: the same data through one fp32 chain
    differs somewhere (so the test above can tell the two apart)."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((32, 32)).astype(BF)
    b = rng.standard_normal((32, 64)).astype(BF)
    c = rng.standard_normal((32, 64)).astype(BF)
    got = run_mad("pvc", a, b, c, BF)
    once = xmx.matmul(a, b, c.astype(np.float32), device="pvc").astype(BF)
    assert not np.array_equal(bits(got), bits(once))


def test_tf32_mad_equals_dpas():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 8)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float32)
    c = rng.standard_normal((8, 16)).astype(np.float32)
    got = run_mad("pvc", a, b, c, np.float32, ta_T=jm.precision.tf32)
    a_t = xmx.pack.decode(PK.element_bits(a, "tf32"), "tf32").astype(np.float32)
    want = dpas_tile("pvc", a_t, b.astype(np.float32), c, "fp32", "fp32", "tf32")
    assert np.array_equal(bits(got), bits(want))


@pytest.mark.parametrize("dev,ta", [("spr", BF), ("spr", np.int8), ("gnr", np.float16), ("spr", np.uint8)])
def test_amx_tiles_equal_fast(dev, ta):
    """The same kernel with amx='tiles' (tile intrinsics on the TileMachine) and amx='fast' (amx.matmul)."""
    rng = np.random.default_rng(5)
    M, N, K = 16, 16, (64 if np.dtype(ta).itemsize == 1 else 32)
    if np.dtype(ta).kind in "iu":
        a = rng.integers(0 if ta == np.uint8 else -128, 128, (M, 2 * K)).astype(ta)
        b = rng.integers(-128, 128, (2 * K, N)).astype(np.int8)
        c = rng.integers(-1000, 1000, (M, N)).astype(np.int32)
    else:
        a = rng.standard_normal((M, 2 * K)).astype(ta)
        b = rng.standard_normal((2 * K, N)).astype(ta)
        c = rng.standard_normal((M, N)).astype(np.float32)
    outs = []
    for how in ("fast", "tiles"):
        q = sycl.queue(dev, amx=how)
        d = c.copy()
        pa, pb, pd = sycl.ptr(a.copy()), sycl.ptr(b.copy()), sycl.ptr(d)

        def kernel(it):
            s = it.get_sub_group()
            A = jm.joint_matrix(s, a.dtype.type, jm.use.a, M, K, jm.layout.row_major)
            B = jm.joint_matrix(s, b.dtype.type, jm.use.b, K, N, jm.layout.row_major)
            C = jm.joint_matrix(s, c.dtype.type, jm.use.accumulator, M, N)
            jm.joint_matrix_load(s, C, pd, N, jm.layout.row_major)
            for k in range(2):
                jm.joint_matrix_load(s, A, pa + k * K, 2 * K)
                jm.joint_matrix_load(s, B, pb + k * K * N, N)
                jm.joint_matrix_mad(s, C, A, B, C)
            jm.joint_matrix_store(s, C, pd, N, jm.layout.row_major)
        q.parallel_for(sycl.nd_range((1, 1), (1, 1)), kernel)
        outs.append(d)
    assert np.array_equal(bits(outs[0]), bits(outs[1]))


def test_deferred_chain_equals_step_by_step():
    """A K loop of fp32 mads is computed as one engine GEMM; reading C between the steps (apply) forces each
    step: both give the same bits, and both equal xmx.matmul over the whole K."""
    rng = np.random.default_rng(11)
    M, N, K = 16, 32, 64
    a = rng.standard_normal((M, K)).astype(BF)
    b = rng.standard_normal((K, N)).astype(BF)
    res = []
    for force in (False, True):
        q = sycl.queue("pvc")
        d = np.zeros((M, N), np.float32)
        pa, pb, pd = sycl.ptr(a), sycl.ptr(b), sycl.ptr(d)

        def kernel(it):
            s = it.get_sub_group()
            m0 = (it.get_global_id(0) - it.get_local_id(0)) * 8
            n0 = (it.get_global_id(1) - it.get_local_id(1)) // 16 * 16
            A = jm.joint_matrix(s, BF.type, jm.use.a, 8, 16, jm.layout.row_major)
            B = jm.joint_matrix(s, BF.type, jm.use.b, 16, 16, jm.layout.row_major)
            C = jm.joint_matrix(s, np.float32, jm.use.accumulator, 8, 16)
            for k in range(0, K, 16):
                jm.joint_matrix_load(s, A, pa + m0 * K + k, K)
                jm.joint_matrix_load(s, B, pb + k * N + n0, N)
                jm.joint_matrix_mad(s, C, A, B, C)
                if force:
                    jm.joint_matrix_apply(s, C, lambda x: x)
            jm.joint_matrix_store(s, C, pd + m0 * N + n0, N, jm.layout.row_major)
        q.parallel_for(sycl.nd_range((M // 8, N // 16 * 16), (1, 16)), kernel)
        res.append(d)
    assert np.array_equal(bits(res[0]), bits(res[1]))
    assert np.array_equal(bits(res[0]), bits(xmx.matmul(a, b, device="pvc")))


def _amx_gemm(how, Ta, Tc, TK, A, Bp, M, N, K, b_layout=None):
    q = sycl.queue("spr", amx=how)
    vf = 4 // np.dtype(Ta).itemsize
    C = np.zeros((M, N), Tc)
    pA, pB, pC = sycl.ptr(A), sycl.ptr(Bp), sycl.ptr(C)
    lb = b_layout or jm.layout.ext_intel_packed

    def kernel(it):
        sg = it.get_sub_group()
        m0, n0 = it.get_global_id(0) * 16, it.get_global_id(1) * 16
        a = jm.joint_matrix(sg, Ta, jm.use.a, 16, TK, jm.layout.row_major)
        b = jm.joint_matrix(sg, Ta, jm.use.b, TK, 16, lb)
        c = jm.joint_matrix(sg, Tc, jm.use.accumulator, 16, 16)
        jm.joint_matrix_fill(sg, c, 0)
        for k in range(0, K, TK):
            jm.joint_matrix_load(sg, a, pA + m0 * K + k, K)
            jm.joint_matrix_load(sg, b, pB + (k // vf) * N * vf + n0 * vf, N * vf)
            jm.joint_matrix_mad(sg, c, a, b, c)
        jm.joint_matrix_store(sg, c, pC + m0 * N + n0, N, jm.layout.row_major)
    q.parallel_for(sycl.nd_range((M // 16, N // 16), (1, 1)), kernel)
    return C, q


@pytest.mark.parametrize("Ta,Tc,TK", [(np.int8, np.int32, 64), (BF, np.float32, 32)])
def test_amx_compiled_kernel_equals_fast(Ta, Tc, TK):
    """The whole kernel traced to tile IR, compiled by the tile compiler and run on the emulator."""
    rng = np.random.default_rng(9)
    M, N, K = 32, 16, 2 * TK
    vf = 4 // np.dtype(Ta).itemsize
    A = rng.integers(-100, 100, (M, K)).astype(Ta)
    B = rng.integers(-100, 100, (K, N)).astype(Ta)
    Bp = B.reshape(K // vf, vf, N).transpose(0, 2, 1).reshape(K // vf, N * vf).copy()
    fast, _ = _amx_gemm("fast", Ta, Tc, TK, A, Bp, M, N, K)
    comp, q = _amx_gemm("compiled", Ta, Tc, TK, A, Bp, M, N, K)
    assert np.array_equal(bits(fast), bits(comp))
    assert "TDP" in q.last_compiled[0].emit("machine")


def test_amx_compiled_needs_packed_b():
    from systolic.errors import CompileError
    A = np.zeros((16, 64), np.int8)
    with pytest.raises(CompileError):
        _amx_gemm("compiled", np.int8, np.int32, 64, A, np.zeros((64, 16), np.int8), 16, 16, 64,
                  b_layout=jm.layout.row_major)


def test_counters_record_the_kernels_instructions():
    """systolic.counters sees the DPAS the kernel issues per sub-group (RC = M = 5 here, one per K step), not the
    batched engine GEMM's tiling (which stacks the sub-groups' rows into RC-8 tiles)."""
    from systolic import counters
    rng = np.random.default_rng(1)
    M, N, K = 5, 16, 32
    a = rng.standard_normal((M, K)).astype(BF)
    b = rng.standard_normal((K, N)).astype(BF)
    with counters.recording() as rec:
        q = sycl.queue("pvc")
        d = np.zeros((4 * M, N), np.float32)
        pa, pb, pd = sycl.ptr(np.tile(a, (4, 1))), sycl.ptr(b), sycl.ptr(d)

        def kernel(it):
            s = it.get_sub_group()
            m0 = it.get_global_id(0) * M
            A = jm.joint_matrix(s, BF.type, jm.use.a, M, 16, jm.layout.row_major)
            B = jm.joint_matrix(s, BF.type, jm.use.b, 16, N, jm.layout.row_major)
            C = jm.joint_matrix(s, np.float32, jm.use.accumulator, M, N)
            for k in range(0, K, 16):
                jm.joint_matrix_load(s, A, pa + m0 * K + k, K)
                jm.joint_matrix_load(s, B, pb + k * N, N)
                jm.joint_matrix_mad(s, C, A, B, C)
            jm.joint_matrix_store(s, C, pd + m0 * N, N, jm.layout.row_major)
        q.parallel_for(sycl.nd_range((4, 16), (1, 16)), kernel)
    assert rec.by("dpas", "rc", "via") == {(5, "joint_matrix"): 4 * 2}
