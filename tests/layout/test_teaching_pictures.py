"""Pictures that teach (issue 27): --highlight ROW,COL outlines one D cell with the A row and B column that feed
it and names who holds them; legends describe only what is drawn."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from systolic.cli import cli
from systolic.errors import InvalidValue
from systolic.explorer import mma_layouts, mma_svg

RED = "#c00000"


def _outlined(svg: str) -> dict[str, list[tuple[float, float]]]:
    """Per operand group (data-operand), the (x, y) of the cells drawn with the highlight outline."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        cells = [(float(r.get("x")), float(r.get("y"))) for r in g.iter("{http://www.w3.org/2000/svg}rect")
                 if r.get("stroke") == RED]
        out[g.get("data-operand")] = cells
    return out


@pytest.mark.parametrize("precision, m, k", [("bf16", 4, 16), ("s8", 8, 32), ("tf32", 2, 8)])
def test_highlight_outlines_the_a_row_the_b_column_and_the_d_cell(precision, m, k):
    d = mma_layouts("dpas", device="pvc", precision=precision, rc=m)
    svg = mma_svg(d["A"], d["B"], d["C"], highlight=(1, 3))
    marked = _outlined(svg)
    a, b, c = marked["src2"], marked["src1"], marked["dst"]
    assert len(a) == k and len({y for _, y in a}) == 1          # one row of A: K cells on one line
    assert len(b) == k and len({x for x, _ in b}) == 1          # one column of B: K cells in one column
    assert len(c) == 1
    assert {x for x, _ in b} == {c[0][0]} and {y for _, y in a} == {c[0][1]}   # they meet at D[1, 3]
    assert "D[1, 3] = C[1, 3] + sum over k of A[1, k] x B[k, 3]" in svg


def test_highlight_names_the_holders():
    r = CliRunner().invoke(cli, ["layout", "mma", "dpas", "--device", "pvc", "--precision", "bf16", "--m", "4",
                                 "--svg", "/dev/null", "--highlight", "2,3"])
    assert r.exit_code == 0, r.output
    # bf16 A (4 x 16, 32 bytes per row on a 64-byte GRF): row 2 is GRF 1, dwords 0..7; B column 3 is dword 3 of
    # GRFs 0..7 (two K rows per dword); D[2, 3] is GRF 2 dword 3 (16 fp32 per GRF)
    assert "A row 2 (K = 16): held by r1.d0 r1.d1 r1.d2 r1.d3 r1.d4 r1.d5 r1.d6 r1.d7" in r.output
    assert "B column 3 (K = 16): held by r0.d3 r1.d3 r2.d3 r3.d3 r4.d3 r5.d3 r6.d3 r7.d3" in r.output
    assert "C/D [2, 3]: held by r2.d3" in r.output


def test_explain_svg_draws_the_same_highlight(tmp_path):
    f = tmp_path / "e.svg"
    r = CliRunner().invoke(cli, ["layout", "explain", "dpas", "2", "3", "--device", "pvc", "--precision", "bf16",
                                 "--m", "4", "--svg", str(f)])
    assert r.exit_code == 0, r.output
    marked = _outlined(f.read_text())
    assert len(marked["src2"]) == 16 and len(marked["src1"]) == 16 and len(marked["dst"]) == 1


def test_highlight_outside_d_is_refused():
    d = mma_layouts("dpas", device="pvc", precision="bf16", rc=4)
    with pytest.raises(InvalidValue, match="not a cell of D"):
        mma_svg(d["A"], d["B"], d["C"], highlight=(4, 0))
    r = CliRunner().invoke(cli, ["layout", "mma", "dpas", "--svg", "/dev/null", "--highlight", "2x3"])
    assert r.exit_code == 2 and "ROW,COL" in r.output


def test_legend_names_only_what_is_drawn():
    tf32 = mma_layouts("dpas", device="pvc", precision="tf32", rc=2)     # one element per dword: no strip
    bf16 = mma_layouts("dpas", device="pvc", precision="bf16", rc=2)     # two per dword: a foot strip
    foot = "foot strip"
    assert foot not in mma_svg(tf32["A"], tf32["B"], tf32["C"])
    assert foot in mma_svg(bf16["A"], bf16["B"], bf16["C"])
