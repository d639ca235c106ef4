"""SYCL joint_matrix device IR (SPV_KHR_cooperative_matrix calls on target("spirv.CooperativeMatrixKHR") values,
as DPC++ emits it) through the interpreter and systolic.sycl's XMX lowering: int8 and bf16 GEMM kernels against
exact references."""
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import systolic.cl as cl
from systolic import counters

IR = (Path(__file__).resolve().parents[1] / "data" / "cl" / "coop_matrix_s8_pvc.ll").read_text()


def _variant(kind):
    if kind == "s8":
        return IR, 32, 4
    ir = (IR.replace("@_Z26__spirv_CompositeConstructi(i32 0)", "@_Z26__spirv_CompositeConstructf(float 0.0)")
          .replace("@_Z26__spirv_CompositeConstructi(i32)", "@_Z26__spirv_CompositeConstructf(float)")
          .replace("i8, 3, 8, 32, 0", "i16, 3, 8, 16, 0").replace("i8, 3, 32, 16, 1", "i16, 3, 16, 16, 1")
          .replace("i32, 3, 8, 16, 2", "float, 3, 8, 16, 2")
          .replace("%k.next = add i64 %k, 32", "%k.next = add i64 %k, 16")
          .replace("%krow = lshr i64 %k, 2", "%krow = lshr i64 %k, 1")
          .replace("%bstride = mul i64 %N, 4", "%bstride = mul i64 %N, 2")
          .replace("%bcol = mul i64 %col, 4", "%bcol = mul i64 %col, 2")
          .replace("getelementptr inbounds i8, ptr addrspace(1) %A", "getelementptr inbounds i16, ptr addrspace(1) %A")
          .replace("getelementptr inbounds i8, ptr addrspace(1) %B", "getelementptr inbounds i16, ptr addrspace(1) %B")
          .replace("getelementptr inbounds i32, ptr addrspace(1) %C", "getelementptr inbounds float, ptr addrspace(1) %C")
          .replace("i32 3)\n", "i32 0)\n"))
    return ir, 16, 2


@pytest.mark.parametrize("kind", ["s8", "bf16"])
def test_joint_matrix_ir_gemm(kind):
    ir, _, vnni = _variant(kind)
    ctx = cl.Context(device="pvc")
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, ir=ir).build()
    M = N = K = 64
    rng = np.random.default_rng(0)
    lo, hi = (-128, 128) if kind == "s8" else (-8, 9)
    A = rng.integers(lo, hi, (M, K))
    B = rng.integers(lo, hi, (K, N))
    dt = np.int8 if kind == "s8" else ml_dtypes.bfloat16
    Ah, Bh = A.astype(dt), B.astype(dt)
    Bv = Bh.reshape(K // vnni, vnni, N).transpose(0, 2, 1).copy()
    c = cl.Buffer(ctx, 0, size=M * N * 4)
    with counters.recording() as rec:
        prg.mm_s8(q, (N, M // 8), (16, 1), cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=Ah),
                  cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=Bv), c, np.int64(N), np.int64(K))
    C = np.zeros((M, N), np.int32 if kind == "s8" else np.float32)
    cl.enqueue_copy(q, C, c)
    assert (C == (A @ B).astype(C.dtype)).all()
    assert rec.total("dpas") == (M // 8) * (N // 16) * (K // (32 if kind == "s8" else 16))


def test_shape_the_device_lacks_is_refused():
    from systolic.errors import UnsupportedCombination
    ir = IR.replace("i8, 3, 8, 32, 0", "i8, 3, 8, 48, 0").replace("i8, 3, 32, 16, 1", "i8, 3, 48, 16, 1")
    ctx = cl.Context(device="pvc")
    prg = cl.Program(ctx, ir=ir).build()
    buf = cl.Buffer(ctx, 0, size=64 * 64 * 4)
    with pytest.raises(UnsupportedCombination):
        prg.mm_s8(cl.CommandQueue(ctx), (16, 1), (16, 1), buf, buf, buf, np.int64(64), np.int64(48))


def test_intel_joint_matrix_ir_on_an_amx_cpu():
    """SPV_INTEL_joint_matrix IR (byval struct argument, @__spirv_BuiltIn ids, the accumulator in an alloca) on
    the spr CPU device: AMX TDPBSSD through systolic.sycl.lower_amx, equal to the int64 product."""
    ir = (Path(__file__).resolve().parents[1] / "data" / "cl" / "joint_matrix_intel_s8_spr.ll").read_text()
    ctx = cl.Context(device="spr")
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, ir=ir).build()
    M, N, K = 24, 24, 96
    rng = np.random.default_rng(3)
    A = rng.integers(-128, 128, (M, K)).astype(np.int8)
    B = rng.integers(-128, 128, (K, N)).astype(np.int8)
    Bv = B.reshape(K // 4, 4, N).transpose(0, 2, 1).reshape(K // 4, 4 * N).copy()
    pad = np.concatenate([np.zeros(5, np.int8), A.reshape(-1)])            # the accessor offset skips 5 bytes
    c = cl.Buffer(ctx, 0, size=M * N * 4)
    mf = cl.mem_flags
    with counters.recording() as rec:
        prg.mm_amx(q, (32, 2), (16, 1), cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=pad),
                   cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=Bv), np.array([5, 0], np.int64), c, np.int64(N),
                   np.int64(K))
    C = np.zeros((M, N), np.int32)
    cl.enqueue_copy(q, C, c)
    assert (C == A.astype(np.int64) @ B.astype(np.int64)).all()
    assert rec.by("amx", "op").get("tdpbssd") == 8
