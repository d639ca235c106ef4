"""operand_layout and ``systolic xmx layout`` apply DPAS's own rules (rules.check), with dpas's errors."""

import numpy as np
import pytest
from click.testing import CliRunner

from systolic.cli import cli, main
from systolic.errors import IllegalInstruction, InvalidValue
from systolic.xmx import GRF, dpas
from systolic.xmx.layout import operand_layout


def _dpas_error(platform, p1, p2, rc=8, dst_type=None):
    g = GRF(platform)
    gb = g.grf_bytes
    with pytest.raises(IllegalInstruction) as e:
        dpas(g, dst=64 * gb, src0=None, src1=16 * gb, src2=0, src1_precision=p1, src2_precision=p2, rc=rc,
             dst_type=dst_type or "f")
    return e.value


@pytest.mark.parametrize("platform,p1,p2,rc,operand", [
    ("pvc", "s8", "bf", 8, "src1"),       # mixed precision classes
    ("pvc", "bf", "hf", 8, "src2"),
    ("dg2", "tf32", "tf32", 8, "src1"),   # tf32 is PVC+
    ("pvc", "bf8", "bf8", 8, "dst"),      # fp8 is Xe3P only
    ("pvc", "bf", "bf", 9, "dst"),        # repeat count 1..8
    ("pvc", "bf", "bf", 0, "src2"),
    ("pvc", "bf", "bf", -5, "dst"),
    ("pvc", "u1", "u1", 8, "src1"),       # not a DPAS precision
])
def test_layout_raises_exactly_what_dpas_raises(platform, p1, p2, rc, operand):
    expected = _dpas_error(platform, p1, p2, rc)
    with pytest.raises(IllegalInstruction) as e:
        operand_layout(platform, p1, p2, operand, rc)
    assert str(e.value) == str(expected)
    assert e.value.rule == expected.rule and e.value.values == expected.values


def test_layout_dst_type_is_checked_like_dpas():
    expected = _dpas_error("pvc", "s8", "s8", dst_type="hf")
    with pytest.raises(IllegalInstruction) as e:
        operand_layout("pvc", "s8", "s8", "dst", 8, dst_type="hf")
    assert str(e.value) == str(expected)
    with pytest.raises(IllegalInstruction):
        operand_layout("dg2", "bf", "bf", "dst", 8, dst_type="bf")   # no BF Dst before PVC


@pytest.mark.parametrize("rc", [True, 2.0, "2", None])
def test_layout_rc_must_be_an_integer(rc):
    with pytest.raises(IllegalInstruction) as e:
        operand_layout("pvc", "bf", "bf", "dst", rc)
    assert e.value.values == {"rc": rc}


def test_layout_operand_name_is_checked():
    with pytest.raises(InvalidValue):
        operand_layout("pvc", "bf", "bf", "src3")


def test_layout_rows_follow_rc_and_dst_type():
    # Dst: rc rows of N elements; a dword holds 1 (32-bit) or 2 (BF/HF) of them, row-major
    assert len(operand_layout("pvc", "bf", "bf", "dst", np.int8(3))) == 3 * 16
    assert len(operand_layout("pvc", "s8", "s8", "dst", 2)) == 2 * 16
    rows = operand_layout("pvc", "bf", "bf", "dst", 2, dst_type="bf")
    assert len(rows) == 16 and rows[8]["elements"] == [(1, 0), (1, 1)] and rows[8]["byte"] == 32
    # Src2 (A): rc rows of K = 8 * OPS_PER_CHAN elements; rc=1 of s8 is 32 bytes = 8 dwords
    rows = operand_layout("dg2", "s8", "s8", "src2", 1)
    assert len(rows) == 8 and rows[-1]["elements"] == [(0, 28), (0, 29), (0, 30), (0, 31)]


@pytest.mark.parametrize("args,word", [
    (["--rc", "9"], "repeat count"), (["--rc", "0"], "repeat count"), (["--rc", "-5"], "repeat count"),
    (["--precision", "s8", "--src2-precision", "bf"], "one kind"),
    (["--platform", "dg2", "--precision", "tf32"], "not supported"),
])
def test_layout_cli_rule_violation_is_one_error_line(capsys, args, word):
    with pytest.raises(SystemExit) as e:
        main(["xmx", "layout", "--operand", "dst", *args])
    assert e.value.code == 1
    out = capsys.readouterr()
    assert out.out == ""
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and word in lines[0]


def test_layout_cli_rc_bounds_the_table():
    import json
    for rc in (1, 8):
        r = CliRunner().invoke(cli, ["xmx", "layout", "--operand", "dst", "--rc", str(rc), "--json"])
        assert r.exit_code == 0, r.output
        rows = json.loads(r.output)
        assert len(rows) == rc * 16 and max(e[0] for row in rows for e in row["elements"]) == rc - 1
