"""The programming-model layers' maps against the engines' and IGC's (skipped until those layers exist).

* OpenCL: every sub-group matrix built-in lowers to one DPAS/DPASW, so its arguments' work-item components,
  laid out structure-of-arrays (their Layout's image), must be exactly the DPAS operand's register image from
  :mod:`systolic.layout.dpas` (two maps written independently: the SPIR-V mapping text vs. visa-DPAS.md).
* SYCL joint_matrix: every (work-item, index) -> (row, col) equals IGC's ``DEFINE_GET_COORD`` (test data).
"""

import json
from pathlib import Path

import numpy as np
import pytest

from systolic.xmx.layout import layout as dpas_layout
from systolic.xmx.platform import get_platform

DATA = Path(__file__).resolve().parents[1] / "data" / "layouts"


def _opencl():
    cl = pytest.importorskip("systolic.opencl", reason="the OpenCL layer (systolic.opencl) is not built yet")
    if not hasattr(cl, "layout") or not hasattr(cl, "BUILTINS"):
        pytest.skip("systolic.opencl has no layout()/BUILTINS yet")
    return cl


def _platform_for(b):
    if b.sub_group_size == 8:
        return "dg2"
    for p in ("pvc", "xe3p"):
        P = get_platform(p)
        if P.supports(b.a_precision) and P.supports(b.b_precision):
            return p
    return None


def test_opencl_arguments_are_the_dpas_registers():
    cl = _opencl()
    seen, checked = set(), 0
    for b in cl.BUILTINS:
        key = (b.name, b.m, b.acc_precision, b.result_precision)
        if key in seen:
            continue
        seen.add(key)
        plat = _platform_for(b)
        if plat is None:
            continue
        opcode = "dpasw" if b.split else "dpas"
        for op, mine in (("a", "src2"), ("b", "src1"), ("acc", "src0")):
            theirs = cl.layout(b.name, op, device=plat, m=b.m, acc=b.acc_type)
            dst = b.acc_precision if op == "acc" else b.result_precision
            L = dpas_layout(plat, mine, b.b_precision, b.a_precision, rc=b.m, dst_type=dst, opcode=opcode)
            assert (theirs.rows, theirs.cols) == (L.rows, L.cols), (b.name, op)
            np.testing.assert_array_equal(theirs.linear_bits(), L.linear_bits(), err_msg=f"{b.name} {op} m={b.m}")
            checked += 1
    assert checked > 100


def test_opencl_through_the_explorer():
    _opencl()
    from systolic.explorer import resolve, where
    L = resolve("opencl", "a", name="intel_sub_group_bf16_bf16_matrix_mad_k16", device="pvc", m=8)
    # SPIR-V mapping, N == K: invocation i holds column i, component j = row j
    w = where(L, 5, 9)
    assert (w["work_item"], w["component"], w["lane"]) == (9, 5, 9)


IGC = json.loads((DATA / "igc_get_coord.json").read_text())


def _sycl():
    m = pytest.importorskip("systolic.sycl.matrix", reason="the SYCL layer (systolic.sycl.matrix) is not built yet")
    if not hasattr(m, "layout"):
        pytest.skip("systolic.sycl.matrix has no layout() yet")
    return m


@pytest.mark.parametrize("e", IGC["entries"], ids=lambda e: f"{e['platform']}-{e['layout']}-{e['elem_bits']}-{e['R']}x{e['C']}")
def test_joint_matrix_is_igc_get_coord(e):
    m = _sycl()
    T = {8: "int8", 16: "bf16", 32: "fp32"}[e["elem_bits"]]
    use = {"PackedA": "a", "PackedB": "b", "Accumulator": "accumulator"}[e["layout"]]
    lay = "ext_intel_packed" if use == "b" else None
    L = m.layout(e["platform"], T, use, e["R"], e["C"], lay)
    pack = e["contrib_bits"] // e["elem_bits"]
    sg_cols = (e["C"] * e["VF"]) // pack
    skip = e["sg"] // sg_cols
    for wi in range(e["sg"]):
        for index in range(e["R"] * e["C"] // e["sg"]):
            # DEFINE_GET_COORD (IBiF_matrix.cl), as stored with the data
            row = (wi // sg_cols + index // pack * skip) * e["VF"] + index % e["VF"]
            col = (wi % sg_cols * pack + index % pack) // e["VF"]
            got = L.where(row, col)
            assert (got["work_item"], got["index"]) == (wi, index), (e, wi, index, got)


def test_sycl_through_the_explorer_and_cli():
    _sycl()
    from click.testing import CliRunner

    from systolic.cli import cli
    from systolic.explorer import mma_layouts, resolve, where
    L = resolve("sycl", "b", device="pvc", type="bf16", rows=16, cols=16, layout="ext_intel_packed")
    assert (where(L, 3, 5)["work_item"], where(L, 3, 5)["index"]) == (5, 3)   # get_coord: wi 5 holds column 5
    d = mma_layouts("sycl", device="pvc", type="bf16", m=8, n=16, k=16, ctype="fp32")
    assert [(v.rows, v.cols) for v in d.values()] == [(8, 16), (16, 16), (8, 16)]
    r = CliRunner().invoke(cli, ["layout", "what", "sycl", "accumulator", "3", "--device", "pvc", "--type", "fp32",
                                 "--rows", "8", "--cols", "16", "--json"], catch_exceptions=False)
    assert r.exit_code == 0 and len(r.output) > 10
