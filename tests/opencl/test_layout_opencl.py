"""The SPIR-V work-item map (systolic.layout.opencl): the extension's worked examples as golden tests, and the
proof that a sub-group variable's component-major register image is DPAS's operand image for every built-in.

Golden listings are transcribed from SPV_INTEL_subgroup_matrix_multiply_accumulate, "Mapping Matrix Data to
Invocations", Examples 1-9 (KhronosGroup/SPIRV-Registry, revision 1, 2025-01-07): invocation -> its components,
each written "hi | ... | lo" as in the text (the text's "1.7" typo for "1,7" kept as printed).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from systolic import opencl as cl
from systolic.layout import opencl as LO
from systolic.xmx import layout as XL

EX1 = {0: ["0,0", "1,0"], 1: ["0,1", "1,1"], 2: ["0,2", "1,2"], 3: ["0,3", "1,3"]}
EX2 = {0: ["0,1 | 0,0", "1,1 | 1,0"], 1: ["0,3 | 0,2", "1,3 | 1,2"], 2: ["0,5 | 0,4", "1,5 | 1,4"],
       3: ["0,7 | 0,6", "1.7 | 1,6"]}
EX3 = {0: ["0,0", "2,0"], 1: ["0,1", "2,1"], 2: ["1,0", "3,0"], 3: ["1,1", "3,1"]}
EX4 = {0: ["0,0"], 1: ["0,1"], 2: [], 3: []}   # "the data from Invocation 2 and Invocation 3 is ignored"
EX5 = {0: ["3,0 | 2,0 | 1,0 | 0,0", "7,0 | 6,0 | 5,0 | 4,0"], 1: ["3,1 | 2,1 | 1,1 | 0,1", "7,1 | 6,1 | 5,1 | 4,1"],
       2: ["3,2 | 2,2 | 1,2 | 0,2", "7,2 | 6,2 | 5,2 | 4,2"], 3: ["3,3 | 2,3 | 1,3 | 0,3", "7,3 | 6,3 | 5,3 | 4,3"]}
EX6 = {0: ["1,0 | 0,0", "3,0 | 2,0"], 1: ["1,1 | 0,1", "3,1 | 2,1"], 2: ["1,2 | 0,2", "3,2 | 2,2"],
       3: ["1,3 | 0,3", "3,3 | 2,3"]}
EX7 = {0: ["0,0", "1,0"], 1: ["0,1", "1,1"], 2: ["0,2", "1,2"], 3: ["0,3", "1,3"]}
EX8 = EX7   # Matrix C, M = 2, N = 4
EX9 = EX7   # the Result, M = 2, N = 4


def _parse(listing):
    """{invocation: [component: [(row, col) lowest bits first]]}."""
    out = {}
    for inv, comps in listing.items():
        out[inv] = [[tuple(int(x) for x in e.strip().replace(".", ",").split(","))
                     for e in reversed(c.split("|"))] for c in comps]
    return out


def _listing(L):
    """The same structure read from a Layout with Layout.what (lowest bits first)."""
    n = L.params["sub_group_size"]
    out = {}
    for i in range(n):
        recs = L.what(work_item=i)
        comps = {}
        for r in recs:
            comps.setdefault(r["component"], []).append((r["bits"][0], (r["row"], r["col"])))
        out[i] = [[e for _, e in sorted(comps[j])] for j in sorted(comps)]
    return out


@pytest.mark.parametrize("listing,m,k,bits,cbits", [
    (EX1, 2, 4, 16, 16), (EX1, 2, 4, 32, 32),        # N == K: a column per invocation
    (EX2, 2, 8, 8, 16), (EX2, 2, 8, 16, 32),         # N < K: two columns packed per component
    (EX3, 4, 2, 32, 32), (EX3, 4, 2, 16, 16),        # N > K: every other row
    (EX4, 1, 2, 32, 32)])                            # M = 1: invocations 2, 3 ignored
def test_matrix_a_examples(listing, m, k, bits, cbits):
    L = LO.matrix_a(m, k, sub_group_size=4, element_bits=bits, component_bits=cbits)
    assert _listing(L) == _parse(listing)
    assert L.overlaps() == []


@pytest.mark.parametrize("listing,k,bits", [(EX5, 8, 8), (EX6, 4, 16), (EX7, 2, 32)])
def test_matrix_b_examples(listing, k, bits):
    L = LO.matrix_b(k, 4, sub_group_size=4, element_bits=bits)
    assert L.unit_bits == 32
    assert _listing(L) == _parse(listing)


@pytest.mark.parametrize("listing,operand", [(EX8, "acc"), (EX9, "result")])
def test_matrix_c_and_result_examples(listing, operand):
    assert _listing(LO.matrix_acc(2, 4, sub_group_size=4, element_bits=32, operand=operand)) == _parse(listing)


def test_reference_md_tf32_rows_interleave():
    """REFERENCE.md 4 / the tf32 extension: work-items 0-7 hold the even rows, 8-15 the odd rows."""
    L = cl.layout("intel_sub_group_tf32_tf32_matrix_mad_k8", "a", device="pvc", m=8)
    assert L.params["components"] == 4
    for r in range(8):
        for c in range(8):
            w = L.where(r, c)
            assert (w["work_item"], w["component"]) == ((r % 2) * 8 + c, r // 2)


def _records():
    """Every overload of dg2 and pvc, and the fp8/e2m1 ones only xe3p has (its others are pvc's)."""
    for p in ("dg2", "pvc", "xe3p"):
        for r in cl.builtins(p):
            if p == "xe3p" and r.a_precision not in ("bf8", "hf8", "e2m1"):
                continue
            yield pytest.param(p, r, id=f"{p}-{r.name}-m{r.m}-{r.acc_type.name}")


@pytest.mark.parametrize("platform,rec", list(_records()))
def test_register_image_is_dpas_operand_image(platform, rec):
    """Component-major placement of each argument = DPAS's Src2/Src1/Src0/Dst bit positions."""
    from systolic.opencl import mapping as MP
    opcode = "dpasw" if rec.split else "dpas"
    pairs = [("a", "src2"), ("b", "src1"), ("acc", "src0"), ("result", "dst")]
    for op, dop in pairs:
        ours = MP.operand_layout(rec, op)
        dt = {"src0": rec.acc_precision, "dst": rec.result_precision}.get(dop, rec.result_precision)
        theirs = XL.layout(platform, dop, rec.b_precision, rec.a_precision, rc=rec.m, dst_type=dt, opcode=opcode)
        if dop == "src0" and rec.acc_precision != rec.result_precision:
            from systolic.layout import dpas as LD
            from systolic import types as T
            theirs = LD.acc(rec.m, rec.n, rec.acc_precision, T.get(rec.acc_precision).bits,
                            grf_bytes=theirs.params["grf_bytes"], operand="src0")
        assert ours.held().all() and ours.overlaps() == []       # every element held once, no bit shared
        np.testing.assert_array_equal(ours.linear_bits(), theirs.linear_bits(), err_msg=f"{op} vs {dop}")
        if op == "a" and rec.split:
            # sub-group 0 provides exactly the GRFs DPASW reads from EU0, sub-group 1 those from EU1
            np.testing.assert_array_equal(ours.index[..., 0], theirs.index[..., 0])


def test_layout_module_is_pure():
    code = ("import sys, systolic.layout.opencl; "
            "bad = [m for m in sys.modules if m.startswith(('systolic.xmx', 'systolic.opencl', 'systolic.amx'))]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_distribute_gather_round_trip_and_three_line_test():
    rng = np.random.default_rng(3)
    name = "intel_sub_group_bf16_bf16_matrix_mad_k16"
    import ml_dtypes
    A = rng.standard_normal((8, 16)).astype(ml_dtypes.bfloat16)
    a = cl.distribute(name, "a", A, device="dg2")          # int8 per work-item: 2 bf16 per int
    assert a.shape == (8, 8) and a.dtype == np.int32
    np.testing.assert_array_equal(cl.gather(name, "a", a, device="dg2"), A)
    # component j of work-item i holds A[j, 2i] (low half) and A[j, 2i+1] (high half)
    bits = A.view(np.uint16).astype(np.uint32)
    assert int(a[3, 5]) & 0xFFFF == bits[5, 6] and (int(a[3, 5]) >> 16) & 0xFFFF == bits[5, 7]


@pytest.mark.parametrize("platform", ["dg2", "xe3p"])
def test_distribute_gather_round_trip_every_overload(platform):
    """gather(distribute(X)) == X for every operand of every overload; M inferred from the values' shape."""
    from .helpers import random_logical, result_bits
    rng = np.random.default_rng(5)
    for rec in cl.builtins(platform):
        (A, _), (B, _), C = random_logical(rec, rng)
        kw = dict(device=platform, acc=rec.acc_type.base)
        for op, X in (("a", A), ("b", B), ("acc", C)):
            v = cl.distribute(rec.name, op, X, m=rec.m, **kw)
            lead = (2,) if (rec.split and op == "a") else ()
            assert v.shape == lead + getattr(rec, f"{op}_type").shape(rec.n)
            m = rec.m if (op == "a" and rec.a_precision == "tf32" and rec.m <= 2) else None
            Y = cl.gather(rec.name, op, v, m=m, **kw)
            if op == "acc" and rec.acc_precision != "int32":
                np.testing.assert_array_equal(result_bits(Y), result_bits(C))
            else:
                np.testing.assert_array_equal(np.asarray(Y, dtype=np.float64), np.asarray(X, dtype=np.float64))
