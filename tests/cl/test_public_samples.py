"""Public OpenCL matrix kernels run unchanged (tests/data/cl/simpleopenclsamples/SOURCE.md): the launch sizes of
their host code, results equal to the host reference GEMM, and the samples' own OpenCL-C emulations of the
built-ins give the same bits as the built-ins."""
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import systolic.cl as cl

DATA = Path(__file__).resolve().parents[1] / "data" / "cl" / "simpleopenclsamples"


def _build(kind, device, emulate=False):
    ctx = cl.Context(device=device)
    P = ctx.platform
    e8 = int(emulate or P.matrix_subgroup_size != 8)
    e16 = int(emulate or P.matrix_subgroup_size != 16)
    src = (DATA / f"matrix_kernels_{kind}.cl").read_text()
    prg = cl.Program(ctx, src, source_dir=str(DATA)).build(
        options=f"-DHAS_SG8={int(8 in P.subgroup_sizes)} -DEMULATE_tN8={e8} -DEMULATE_tN16={e16}")
    return ctx, prg


def _launch(ctx, prg, name, A, B, Bvnni, M, N, K, out_dtype):
    """The sample's host code: kernel(C, A, B, K) over its global size, local size from reqd_work_group_size."""
    q = cl.CommandQueue(ctx)
    m = re.search(r"_m(\d+)_n(\d+)(?:_(\d+)x(\d+))?$", name)
    tM, MM, NN = (int(m[1]), int(m[3] or 1), int(m[4] or 1)) if m else (1, 1, 1)
    mf = cl.mem_flags
    a = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=A)
    b = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=Bvnni if "vnni" in name else B)
    c = cl.Buffer(ctx, mf.WRITE_ONLY, M * N * 4)
    cl.enqueue_fill_buffer(q, c, np.int32(0), 0, M * N * 4)
    getattr(prg, name)(q, (N // NN, M // tM // MM), None, c, a, b, np.int32(K))
    out = np.zeros((M, N), out_dtype)
    cl.enqueue_copy(q, out, c)
    return out


def _int8_data(n):
    rng = np.random.default_rng(0)
    A = rng.integers(-128, 128, (n, n)).astype(np.int8)
    B = rng.integers(-128, 128, (n, n)).astype(np.int8)
    Bv = B.reshape(n // 4, 4, n).transpose(0, 2, 1).reshape(n // 4, 4 * n).copy()
    return A, B, Bv, (A.astype(np.int64) @ B.astype(np.int64)).astype(np.int32)


@pytest.mark.parametrize("device", ["pvc", "dg2"])
def test_int8_sample_every_kernel_matches_the_host_reference(device):
    ctx, prg = _build("i8", device)
    n = 64
    A, B, Bv, ref = _int8_data(n)
    names = prg.kernel_names
    assert len(names) >= 13
    for name in names:
        got = _launch(ctx, prg, name, A, B, Bv, n, n, n, np.int32)
        assert (got == ref).all(), name


#: the sample's m8 row-major kernels, built with the built-ins and with its own OpenCL-C emulation of them
EMULATED = {"pvc": ["i8_dpas_rowmajor_m8_n16", "i8_dpas_blockread_rowmajor_m8_n16"],
            "dg2": ["i8_dpas_rowmajor_m8_n8", "i8_dpas_rowmajor_m8_n16"]}


@pytest.mark.parametrize("device", sorted(EMULATED))
def test_int8_sample_emulation_gives_the_builtins_bits(device):
    n = 32
    A, B, Bv, ref = _int8_data(n)
    ctx, real = _build("i8", device)
    _, emu = _build("i8", device, emulate=True)
    ran = []
    for name in [k for k in real.kernel_names if "_m8_" in k and "rowmajor" in k]:
        assert name in emu.kernel_names, f"{name} is missing from the emulated build on {device}"
        r = _launch(ctx, real, name, A, B, Bv, n, n, n, np.int32)
        e = _launch(ctx, emu, name, A, B, Bv, n, n, n, np.int32)
        assert (r.view(np.uint32) == e.view(np.uint32)).all() and (r == ref).all(), (device, name)
        ran.append(name)
    # a loop that skipped or selected nothing would pass having compared nothing
    assert sorted(ran) == sorted(EMULATED[device]), (device, ran)


def _float_data(kind, n):
    rng = np.random.default_rng(1)
    Af = rng.integers(-8, 9, (n, n)).astype(np.float32)
    Bf = rng.integers(-8, 9, (n, n)).astype(np.float32)
    ref = (Af.astype(np.float64) @ Bf.astype(np.float64)).astype(np.float32)
    if kind == "bf16":
        A, B = Af.astype(ml_dtypes.bfloat16).view(np.uint16), Bf.astype(ml_dtypes.bfloat16).view(np.uint16)
        return A, B, B.reshape(n // 2, 2, n).transpose(0, 2, 1).reshape(n // 2, 2 * n).copy(), ref
    return Af, Bf, Bf, ref


@pytest.mark.parametrize("kind,device,pattern", [
    ("bf16", "pvc", r"(naive|_m8_n16|_m8_n16_2x2)$"),
    ("bf16", "dg2", r"(_m8_n8|_m8_n8_1x2)$"),
    ("tf32", "pvc", r"(_m8_n16|blockread_rowmajor_m8_n16)$"),
])
def test_float_samples_match_the_host_reference(kind, device, pattern):
    ctx, prg = _build(kind, device)
    n = 64
    A, B, Bv, ref = _float_data(kind, n)
    ran = 0
    for name in prg.kernel_names:
        if not re.search(pattern, name):
            continue
        got = _launch(ctx, prg, name, A, B, Bv, n, n, n, np.float32)
        assert (got.view(np.uint32) == ref.view(np.uint32)).all(), name
        ran += 1
    assert ran >= 2


LLAMA = Path(__file__).resolve().parents[1] / "data" / "cl" / "llama_cpp"


@pytest.mark.parametrize("alibi", [False, True])
def test_llama_cpp_softmax_matches_a_float64_reference(alibi):
    """llama.cpp's attention softmax kernel, unchanged (SOURCE.md): within float32 rounding of the exact softmax
    (its exp is within OpenCL's ULP bound, not bit-exact, so the check is relative: 1e-6)."""
    ctx = cl.Context(device="pvc")
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, (LLAMA / "softmax_f16.cl").read_text()).build()
    ne00, ne01, ne02 = 100, 6, 3
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ne02, ne01, ne00)).astype(np.float32)
    mask = (rng.standard_normal((ne01, ne00)) * 0.5).astype(np.float16)
    mf = cl.mem_flags
    xb, mb = (cl.Buffer(ctx, mf.COPY_HOST_PTR, hostbuf=v) for v in (x, mask))
    db = cl.Buffer(ctx, 0, size=x.nbytes)
    max_bias, m0, m1, nlog2 = (8.0, 0.5, 0.25, 2) if alibi else (0.0, 0.0, 0.0, 0)
    prg.kernel_soft_max_f16(q, (ne01 * 16, ne02, 1), (16, 1, 1), xb, np.uint64(0), mb, np.uint64(0), db,
                            np.uint64(0), np.int32(ne00), np.int32(ne01), np.int32(ne02), np.float32(0.125),
                            np.float32(max_bias), np.float32(m0), np.float32(m1), np.int32(nlog2))
    out = np.zeros_like(x)
    cl.enqueue_copy(q, out, db)
    h = np.arange(ne02)
    slope = np.where(h < nlog2, m0 ** (h + 1.0), m1 ** (2.0 * (h - nlog2) + 1)) if alibi else np.ones(ne02)
    z = x.astype(np.float64) * 0.125 + slope[:, None, None] * mask.astype(np.float64)[None]
    ref = np.exp(z - z.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    assert np.abs((out - ref) / ref).max() < 1e-6
