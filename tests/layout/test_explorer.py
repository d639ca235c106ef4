"""The explorer's verbs, tables, pictures and CLI (expected values derived by hand from the manuals' rules)."""

import csv
import io
import json
import sys
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from systolic import layout as LY
from systolic.cli import cli
from systolic.errors import InvalidValue
from systolic.explorer import detail, resolve, table, what, where
from systolic.explorer.svg import layout_svg, mma_svg


def test_layout_package_stays_below_the_engines():
    import subprocess
    code = ("import sys, systolic.layout; "
            "bad = [m for m in sys.modules if m.startswith(('systolic.xmx', 'systolic.amx', 'systolic.explorer'))]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_where_dpas_b_bf16_pvc():
    # visa-DPAS.md: Src1 GRF row r holds K values 2r, 2r+1 of column i in dword i, lower K in the low half
    d = where(resolve("dpas", "b", device="pvc", precision="bf16"), 3, 5)
    assert (d["grf"], d["dword"], d["bits"], d["lane"], d["image_byte"]) == (1, 5, [16, 31], 5, 64 + 20 + 2)


def test_where_dpas_a_int8_dg2_lane():
    # SIMD8: a is 32 bits per row per work-item, 4 consecutive K of one row: A[1, 13] -> lane 3, bits 8..15
    d = where(resolve("dpas", "a", device="dg2", precision="s8"), 1, 13)
    assert (d["lane"], d["component"], d["bits_in_component"]) == (3, 1, [8, 15])


def test_what_and_verbs_from_the_layout_package():
    L = LY.get("amx", "b", instruction="tdpbssd", k=8, n=2)
    assert [(e["row"], e["col"]) for e in LY.what(L, 1)] == [(4, 0), (5, 0), (6, 0), (7, 0),
                                                             (4, 1), (5, 1), (6, 1), (7, 1)]
    assert what(L, 0, 5) == [{"row": 1, "col": 1, "tile_row": 0, "byte": 5, "bits": [0, 7]}]


def test_detail_fields():
    d = detail(resolve("dpas", "a", device="pvc", precision="s8", rc=4))
    assert (d["K"], d["k_per_step"], d["operand_bytes"], d["grfs"]) == (32, 4, 128, 2)
    assert d["alignment"].startswith("32 bytes")
    d = detail(resolve("amx", "b", instruction="tdpbf16ps"))
    assert (d["K"], d["tile_rows"], d["colsb"], d["k_per_step"]) == (32, 16, 64, 2)
    d = detail(resolve("dpasw", "a", precision="bf16", rc=3))
    assert d["eu_grfs"] == [2, 1]          # 3 rows x 32 bytes: NGrf 3, EU0 (3+1)//2 = 2


def test_tables_every_format():
    L = resolve("dpas", "b", device="dg2", precision="s8")     # K=32, N=8: 8 GRFs of 8 dwords, 4 per dword
    md = table(L, fmt="markdown").splitlines()
    assert md[0].startswith("| src1 r\\c | 0 | 1 |") and md[2].startswith("| 0 | r0.d0@0 | r0.d1@0 |")
    assert md[2 + 5].split(" | ")[3] == "r1.d2@8"               # B[5, 2]: GRF 5//4, dword 2, bits 8*(5%4)
    rows = list(csv.reader(io.StringIO(table(L, by="holder", fmt="csv"))))
    assert rows[0] == ["grf", "dword", "elements (row,col), lowest bits first"]
    assert rows[1] == ["0", "0", "(0,0) (1,0) (2,0) (3,0)"] and len(rows) == 1 + 64
    js = json.loads(table(L, fmt="json"))
    assert js["holder"] == ["grf", "dword"] and len(js["elements"]) == 256
    assert "r7.d7@24" in table(L)
    with pytest.raises(InvalidValue):
        table(L, fmt="html")


def test_svg_cells_colours_and_slots():
    L = resolve("dpas", "b", device="dg2", precision="bf16")
    root = ET.fromstring(layout_svg(L, view="lane"))
    ns = "{http://www.w3.org/2000/svg}"
    cells = [r for r in root.iter(ns + "rect") if r.find(ns + "title") is not None]
    assert len(cells) == 16 * 8
    # colour by lane: the 8 columns (lanes) have 8 distinct hues, each column's cells share one per component
    fill = {(i // 8, i % 8): c.get("fill") for i, c in enumerate(cells)}
    assert len({fill[0, n] for n in range(8)}) == 8
    assert fill[0, 3] == fill[1, 3] != fill[2, 3]             # B[0..1, 3] share component 0 of lane 3
    slots = [r for r in root.iter(ns + "rect") if r.get("height") == "5"]
    assert len(slots) == 2 * 16 * 8                            # two bf16 slots per dword under every cell
    labels = [t.text for t in root.iter(ns + "text")]
    assert "L3.c0" in labels and "L7.c7" in labels


def test_mma_svg_arrangement():
    d = {k: resolve("amx", op, instruction="tdpbssd", m=4, n=4, k=16) for k, op in zip("ABC", "abc")}
    root = ET.fromstring(mma_svg(d["A"], d["B"], d["C"]))
    ns = "{http://www.w3.org/2000/svg}"
    frames = {g.get("data-operand"): [r for r in g.iter(ns + "rect") if r.get("stroke-width") == "1.4"][0]
              for g in root.iter(ns + "g")}
    a, b, c = (frames[k] for k in "abc")
    x = lambda r: float(r.get("x"))
    y = lambda r: float(r.get("y"))
    assert x(a) < x(c) and x(b) == x(c)                        # A left of C, B above C
    assert y(b) < y(c) and y(a) == y(c)


def test_repr_svg():
    L = resolve("amx", "a", instruction="tdpbf16ps", m=2, k=4)
    assert L._repr_svg_().startswith("<svg") and "<svg" in L._repr_html_()


def test_resolve_errors():
    with pytest.raises(InvalidValue):
        resolve("npu", "a")
    with pytest.raises(InvalidValue):
        resolve("dpas", "a", instruction="tdpbssd")          # an AMX option on the dpas layer
    with pytest.raises(InvalidValue):
        resolve("amx", "a", instruction="tdpxx")
    with pytest.raises(InvalidValue):
        resolve("opencl", "a")


def _cli(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_cli_verbs(tmp_path):
    r = _cli("layout", "where", "dpas", "b", "3", "5", "--platform", "pvc", "--json")
    assert r.exit_code == 0 and json.loads(r.output)["grf"] == 1
    r = _cli("layout", "what", "dpas", "dst", "2", "--platform", "dg2", "--precision", "s8", "--rc", "4", "--json")
    assert [(e["row"], e["col"]) for e in json.loads(r.output)] == [(2, c) for c in range(8)]
    out = tmp_path / "b.svg"
    r = _cli("layout", "table", "amx", "b", "--instruction", "tdpbf16ps", "--k", "4", "--n", "2",
             "--format", "csv", "--svg", str(out))
    assert r.exit_code == 0 and "0,row0.B0,row0.B4" in r.output.splitlines() and out.read_text().startswith("<svg")
    r = _cli("layout", "mma", "dpas", "--platform", "pvc", "--precision", "tf32", "--svg", str(out))
    assert r.exit_code == 0 and out.read_text().count("data-operand") == 3
    r = _cli("layout", "detail", "dpasw", "a", "--json")
    assert json.loads(r.output)["eu_grfs"] == [4, 4]
    for verb in ("detail", "where", "what", "table", "mma", "explain", "layers"):
        assert _cli("layout", verb, "--help").exit_code == 0


def test_cli_errors(capsys):
    from systolic.cli import main
    with pytest.raises(SystemExit) as e:
        main(["layout", "where", "dpas", "b", "99", "0"])
    assert e.value.code == 1 and "error:" in capsys.readouterr().err
