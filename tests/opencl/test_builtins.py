"""Every built-in on every platform that has it, against exact oracles and against systolic.xmx.matmul."""

from __future__ import annotations

import numpy as np
import pytest

from systolic import opencl as cl
from systolic import xmx
from systolic.xmx import get_platform

from .helpers import float_oracle, int_oracle, random_logical, result_bits

PLATFORMS = ("dg2", "pvc", "bmg", "lnl", "xe3p")


def _cases(kind):
    """Integer forms on dg2 and pvc (bmg, lnl, xe3p have pvc's integer table); float forms with M = 1 and 8
    (the Fraction oracle is slow; M = 1 and 8 cover the mapping's cases) on dg2, pvc, bmg (denormals kept)
    and the fp8/e2m1 forms that only xe3p has."""
    out = []
    for p in PLATFORMS:
        for r in cl.builtins(p):
            if r.split or r.kind != kind:
                continue
            if kind == "int" and p not in ("dg2", "pvc"):
                continue
            if kind == "float" and (r.m not in (1, 8) or p == "lnl"
                                    or (p == "xe3p" and r.a_precision not in ("bf8", "hf8", "e2m1"))):
                continue
            out.append(pytest.param(p, r, id=f"{p}-{r.name}-m{r.m}-{r.acc_type.name}"))
    return out


def _call(rec, A, B, C, platform, **kw):
    kwargs = dict(device=platform, m=rec.m, acc=rec.acc_type.base)
    a = cl.distribute(rec.name, "a", A, **kwargs)
    b = cl.distribute(rec.name, "b", B, **kwargs)
    c = cl.distribute(rec.name, "acc", C, **kwargs)
    d = getattr(cl, rec.name)(a, b, c, device=platform, **kw)
    assert d.shape == rec.result_type.shape(rec.n) and d.dtype == rec.result_type.dtype
    return cl.gather(rec.name, "result", d, device=platform, m=rec.m, acc=rec.acc_type.base)


@pytest.mark.parametrize("platform,rec", _cases("int"))
def test_integer_builtins_exact(platform, rec):
    rng = np.random.default_rng(hash((platform, rec.name, rec.m)) % 2 ** 32)
    (A, _), (B, _), C = random_logical(rec, rng)
    D = _call(rec, A, B, C, platform)
    np.testing.assert_array_equal(D, int_oracle(A, B, C))
    # and the engine's own GEMM (a different code path: numpy BLAS chunks, not the DPAS register image)
    t = lambda p: __import__("systolic.types", fromlist=["get"]).get(p).dtype  # noqa: E731
    ref = xmx.matmul(A.astype(t(rec.a_precision)), B.astype(t(rec.b_precision)), C, device=platform)
    np.testing.assert_array_equal(D, ref)


@pytest.mark.parametrize("platform,rec", _cases("float"))
def test_float_builtins_exact_model_and_default(platform, rec):
    rng = np.random.default_rng(hash((platform, rec.name, rec.m, rec.acc_type.base)) % 2 ** 32)
    (A, abits), (B, bbits), C = random_logical(rec, rng)
    D = _call(rec, A, B, C, platform, model="exact")
    np.testing.assert_array_equal(result_bits(D), float_oracle(rec, abits, bbits, C, platform, "exact"))
    if rec.acc_precision == rec.result_precision == "fp32":
        D = _call(rec, A, B, C, platform)  # the platform's default model
        prec = "tf32" if rec.a_precision == "tf32" else None
        ref = xmx.matmul(A, B, C, device=platform, model=get_platform(platform).default_model, precision=prec)
        np.testing.assert_array_equal(result_bits(D), result_bits(ref))


@pytest.mark.parametrize("name", ["intel_sub_group_bf16_bf16_matrix_mad_k16", "intel_sub_group_i4_u2_matrix_mad_k64"])
def test_spec_engine_equals_fast(name):
    rec = cl.resolve(name, "pvc", m=4)
    rng = np.random.default_rng(1)
    (A, _), (B, _), C = random_logical(rec, rng)
    np.testing.assert_array_equal(result_bits(_call(rec, A, B, C, "pvc", path="spec")),
                                  result_bits(_call(rec, A, B, C, "pvc")))


@pytest.mark.parametrize("rec", [r for r in cl.builtins("dg2") if r.split], ids=lambda r: f"{r.name}-m{r.m}")
def test_split_builtins_dpasw(rec):
    """Each sub-group gets C_own + A_whole @ B_own; A's first M/2 rows from sub-group 0, the rest from 1."""
    rng = np.random.default_rng(hash((rec.name, rec.m)) % 2 ** 32)
    (A, abits), (B0, b0bits), C0 = random_logical(rec, rng)
    (_, _), (B1, b1bits), C1 = random_logical(rec, rng)
    kw = dict(device="dg2", m=rec.m, acc=rec.acc_type.base)
    a = cl.distribute(rec.name, "a", A, **kw)
    assert a.shape == (2,) + rec.a_type.shape(8)
    b = np.stack([cl.distribute(rec.name, "b", B, **kw) for B in (B0, B1)])
    c = np.stack([cl.distribute(rec.name, "acc", C, **kw) for C in (C0, C1)])
    model = "exact" if rec.kind == "float" else None
    d = getattr(cl, rec.name)(a, b, c, device="dg2", model=model)
    assert d.shape == (2,) + rec.result_type.shape(8)
    for i, (B, bb, C) in enumerate(((B0, b0bits, C0), (B1, b1bits, C1))):
        D = cl.gather(rec.name, "result", d[i], **kw)
        if rec.kind == "int":
            np.testing.assert_array_equal(D, int_oracle(A, B, C))
        else:
            np.testing.assert_array_equal(result_bits(D), float_oracle(rec, abits, bb, C, "dg2", "exact"))


@pytest.mark.parametrize("platform,name,acc", [("pvc", "intel_sub_group_bf16_bf16_matrix_mad_k16", "short"),
                                               ("bmg", "intel_sub_group_f16_f16_matrix_mad_k16", "half"),
                                               ("dg2", "intel_sub_group_bf16_bf16_matrix_mad_k16", "float")])
def test_special_values_against_fraction_oracle(platform, name, acc):
    """Any bit pattern (NaN, infinities, denormals, signed zeros) in A and B: the exact-model result equals
    the Fraction oracle's, NaN as the default quiet NaN."""
    rec = cl.resolve(name, platform, m=2, acc=acc)
    rng = np.random.default_rng(11)
    abits = rng.integers(0, 1 << 16, (rec.m, rec.k)).astype(np.uint32)
    bbits = rng.integers(0, 1 << 16, (rec.k, rec.n)).astype(np.uint32)
    abits[0, :4] = [0x7F80, 0xFF80, 0x0001, 0x8000] if rec.a_precision == "bf16" else [0x7C00, 0xFC00, 1, 0x8000]
    from .helpers import values_from_bits
    A, B = values_from_bits(abits, rec.a_precision), values_from_bits(bbits, rec.b_precision)
    C = values_from_bits(rng.integers(0, 1 << 16, (rec.m, rec.n)).astype(np.uint32), rec.acc_precision) \
        if rec.acc_precision != "fp32" else rng.standard_normal((rec.m, rec.n)).astype(np.float32)
    D = _call(rec, A, B, C, platform, model="exact")
    np.testing.assert_array_equal(result_bits(D), float_oracle(rec, abits, bbits, C, platform, "exact"))
