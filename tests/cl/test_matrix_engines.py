"""The batched matrix engine of systolic.cl equals the per-call lowering of systolic.opencl (one DPAS per
sub-group), bit for bit, on random operands including NaN, infinities and denormals (hypothesis)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from systolic.cl.matrix import _can_batch, batched, decode16, per_call
from systolic.opencl import mapping as MP
from systolic.opencl import table as TB
from systolic.xmx.platform import get_platform
from systolic.xmx import pack as PK

RECS = [(r, p) for p in ("dg2", "pvc", "bmg") for r in TB.BUILTINS
        if _can_batch(r) and MP.available(r, get_platform(p)) is None]


def _bits(rng, dt, shape, special: bool):
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dt).itemsize, dtype=np.uint8)
    v = raw.view(dt).reshape(shape).copy()
    if not special and np.dtype(dt).kind == "f":        # finite values too (NaN-free chains exercise rounding)
        v = np.where(np.isfinite(v), v, 0).astype(dt)
    return v


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(range(len(RECS))), st.integers(0, 2**32 - 1), st.booleans(), st.integers(1, 3))
def test_batched_equals_per_call(i, seed, special, G):
    rec, p = RECS[i]
    P = get_platform(p)
    rng = np.random.default_rng(seed)
    S = rec.sub_group_size
    shape = lambda t: (G, S) + ((t.n,) if t.n > 1 else ())          # noqa: E731
    a = _bits(rng, rec.a_type.dtype, shape(rec.a_type), special)
    b = _bits(rng, rec.b_type.dtype, shape(rec.b_type), special)
    acc = _bits(rng, rec.acc_type.dtype, shape(rec.acc_type), special)
    want = per_call(rec, a, b, acc, P)
    got = batched(rec, a, b, acc, P)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert (got.view(np.uint8) == want.view(np.uint8)).all(), rec.signature


def test_every_batched_form_is_covered():
    names = {r.name for r, _ in RECS}
    assert {"intel_sub_group_i8_i8_matrix_mad_k32", "intel_sub_group_u8_i8_matrix_mad_k32",
            "intel_sub_group_bf16_bf16_matrix_mad_k16", "intel_sub_group_f16_f16_matrix_mad_k16"} <= names


def test_decode16_equals_pack_decode_on_every_pattern():
    u = np.arange(65536, dtype=np.uint32)
    for p in ("bf16", "fp16"):
        for flush in (False, True):
            a = PK.decode(u, p, flush=flush)
            b = decode16(u.astype(np.uint16), p, flush)
            assert ((a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))).all()


def _gemm_bits(engine, A, Bv, n, device="pvc"):
    from pathlib import Path

    import systolic.cl as cl
    src = (Path(__file__).resolve().parents[2] / "examples" / "cl" / "gemm_bf16_pvc.cl").read_text()
    ctx = cl.Context(device=device, engine=engine)
    q = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, src).build()
    c = cl.Buffer(ctx, 0, size=n * n * 4)
    prg.gemm_bf16(q, (n, n // 8), None, c, cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=A),
                  cl.Buffer(ctx, cl.mem_flags.COPY_HOST_PTR, hostbuf=Bv), np.int32(n), np.int32(n))
    out = np.zeros(n * n, np.uint32)
    cl.enqueue_copy(q, out, c)
    return out


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_deferred_dpas_chains_equal_per_call_dpas(seed):
    """A whole kernel (K loop of bf16 DPAS on random bit patterns, NaN/inf/denormals included): the deferred
    chains (computed as one float_mma over a grid of sub-group panels, or the vectorised chain) give the bits of
    one DPAS per call."""
    n = 32
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 2**16, (n, n), dtype=np.uint16)
    Bv = rng.integers(0, 2**16, (n // 2, n, 2), dtype=np.uint16)
    assert (_gemm_bits("batched", A, Bv, n) == _gemm_bits("per-call", A, Bv, n)).all()


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.booleans())
def test_grid_float_mma_equals_the_vectorised_chain(seed, steps, special):
    """chain_bits on sub-groups forming a grid (one float_mma on stacked panels) == the vectorised chain."""
    from systolic.cl.matrix import _grid, chain_bits
    from systolic.xmx import kernels as KN
    from systolic.xmx import models as MD
    rec = next(r for r in TB.by_name("intel_sub_group_bf16_bf16_matrix_mad_k16") if r.sub_group_size == 16
               and r.m == 8 and r.acc_precision == "fp32")
    rng = np.random.default_rng(seed)
    nA, nB, M, N, Kt = 3, 2, 8, 16, 16 * steps
    bits = lambda shape: rng.integers(0, 2**16, shape, dtype=np.uint16)              # noqa: E731
    pa, pb = decode16(bits((nA, M, Kt)), "bf16", True), decode16(bits((nB, Kt, N)), "bf16", True)
    if not special:
        pa, pb = np.nan_to_num(pa, posinf=0, neginf=0), np.nan_to_num(pb, posinf=0, neginf=0)
    ia, ib = np.repeat(np.arange(nA), nB), np.tile(np.arange(nB), nA)
    A, B = pa[ia], pb[ib]
    C0 = rng.integers(-2**20, 2**20, (nA * nB, M, N)).astype(np.float64)
    assert _grid(A, B) is not None
    mdl = MD.get_model(None, get_platform("pvc"))
    got = chain_bits(A, B, C0, rec, mdl)
    want = np.asarray(KN._chain(lambda kk: A[:, :, kk, None] * B[:, None, kk, :], C0, Kt, 2, 16, mdl), np.uint32)
    assert (got == want).all()


@pytest.mark.parametrize("m", [1, 2, 4, 8])
@pytest.mark.parametrize("special", [False, True])
def test_batched_tf32_equals_per_call(m, special):
    """tf32's A layout (work-items 0-7 the even rows, 8-15 the odd rows) read batched == one DPAS per call."""
    rec = next(r for r in TB.by_name("intel_sub_group_tf32_tf32_matrix_mad_k8") if r.m == m)
    P = get_platform("pvc")
    rng = np.random.default_rng(m + 10 * special)
    shape = lambda t: (3, 16) + ((t.n,) if t.n > 1 else ())           # noqa: E731
    a, b, acc = (_bits(rng, t.dtype, shape(t), special) for t in (rec.a_type, rec.b_type, rec.acc_type))
    got, want = batched(rec, a, b, acc, P), per_call(rec, a, b, acc, P)
    assert (got.view(np.uint8) == want.view(np.uint8)).all()


@pytest.mark.parametrize("name", ["intel_sub_group_i8_i8_split_matrix_mad_k32", "intel_sub_group_u8_i8_split_matrix_mad_k32",
                                  "intel_sub_group_bf16_bf16_split_matrix_mad_k16"])
@pytest.mark.parametrize("m", [2, 4, 8])
def test_batched_split_equals_dpasw(name, m):
    """Split calls batched (each sub-group: the pair's whole A) == one DPASW per pair (systolic.opencl)."""
    from systolic.cl.matrix import batched_split, split_twin
    rec = next(r for r in TB.by_name(name) if r.m == m)
    P = get_platform("dg2")
    rng = np.random.default_rng(m)
    shape = lambda t: (4, 8) + ((t.n,) if t.n > 1 else ())            # noqa: E731
    a, b, acc = (_bits(rng, t.dtype, shape(t), True) for t in (rec.a_type, rec.b_type, rec.acc_type))
    twin = split_twin(rec)
    assert twin is not None
    got, want = batched_split(rec, twin, a, b, acc, P), per_call(rec, a, b, acc, P)
    assert (got.view(np.uint8) == want.view(np.uint8)).all()
