"""The batched matrix engine of systolic.cl equals the per-call lowering of systolic.opencl (one DPAS per
sub-group), bit for bit, on random operands including NaN, infinities and denormals (hypothesis)."""
import numpy as np
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


@settings(max_examples=60, deadline=None)
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
