"""Invariants every Layout the explorer resolves must keep: a valid map (each element held once, no two
elements sharing a bit), where/what inverse to each other, and scatter/gather a round trip."""

import numpy as np
import pytest

from systolic.amx.machine import TMUL_TYPES
from systolic.explorer import resolve, what, where


def cases():
    for plat, prec, rc in (("pvc", "bf16", 8), ("dg2", "s4", 3), ("xe3p", "e2m1", 5), ("pvc", "tf32", 1),
                           ("xe3p", "hf8", 7), ("bmg", "u2", 2)):
        for op in ("a", "b", "c", "d"):
            yield "dpas", op, dict(device=plat, precision=prec, rc=rc)
    for op in ("a", "b", "d"):
        yield "dpasw", op, dict(precision="s8", rc=5)
    for mn in TMUL_TYPES:
        if not mn.startswith("tcmm"):
            for op in ("a", "b", "c"):
                yield "amx", op, dict(instruction=mn, m=7, n=5)


def opt_cases():
    yield "opencl", "a", dict(name="intel_sub_group_bf16_bf16_split_matrix_mad_k16", device="dg2", m=8)
    yield "opencl", "b", dict(name="intel_sub_group_i8_i8_matrix_mad_k32", device="pvc", m=4)
    yield "sycl", "b", dict(device="pvc", type="bf16", rows=16, cols=16, layout="ext_intel_packed")
    yield "sycl", "accumulator", dict(device="dg2", type="fp32", rows=8, cols=8)


@pytest.mark.parametrize("layer,op,opts", list(cases()) + list(opt_cases()),
                         ids=lambda x: x if isinstance(x, str) else "-".join(map(str, x.values())))
def test_invariants(layer, op, opts):
    if layer == "opencl":
        pytest.importorskip("systolic.opencl")
    if layer == "sycl":
        pytest.importorskip("systolic.sycl.matrix")
    L = resolve(layer, op, **opts)
    assert L.held().all() and L.overlaps() == []
    rng = np.random.default_rng(0)
    for r, c in zip(rng.integers(0, L.rows, 6), rng.integers(0, L.cols, 6)):
        w = where(L, int(r), int(c))
        coords = [w[n] for n in L.holder]
        assert {"row": int(r), "col": int(c)}.items() <= next(
            d for d in what(L, *coords) if (d["row"], d["col"]) == (r, c)).items()
    if "unit_strides" in L.params:
        raw = rng.integers(0, 1 << L.element_bits, size=L.shape).astype(np.uint32)
        np.testing.assert_array_equal(L.gather(L.scatter(raw)), raw)
