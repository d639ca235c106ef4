"""The ``systolic xmx`` verbs."""

import json

import numpy as np
from click.testing import CliRunner

from systolic.cli import cli


def run(*args):
    r = CliRunner().invoke(cli, ["xmx", *args])
    return r


def test_platforms_json():
    r = run("platforms", "--json")
    assert r.exit_code == 0, r.output
    d = {p["name"]: p for p in json.loads(r.output)}
    assert d["dg2"]["exec_size"] == 8 and d["pvc"]["grf_bytes"] == 64 and d["dg2"]["has_dpasw"]
    assert run("platforms").exit_code == 0


def test_dpas_int_json_matches_numpy():
    r = run("dpas", "--platform", "dg2", "--precision", "s8", "--rc", "3", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    a, b, c = (np.array(d[x], dtype=np.int64) for x in "ABC")
    assert np.array_equal(np.array(d["D"]), a @ b + c)


def test_dpas_float_spec_and_fast_agree():
    outs = [json.loads(run("dpas", "--precision", "bf", "--rc", "2", flag, "--json").output)["D"]
            for flag in ("--spec", "--fast")]
    assert outs[0] == outs[1]


def test_dpas_rule_violation_is_one_error_line():
    r = run("dpas", "--platform", "dg2", "--precision", "tf32")
    assert r.exit_code != 0
    assert "tf32" in str(r.exception) or "tf32" in r.output


def test_gemm_on_npy_files(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (5, 40)).astype(np.int8)
    b = rng.integers(-128, 128, (40, 7)).astype(np.int8)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    r = run("gemm", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--platform", "dg2", "--out",
            str(tmp_path / "d.npy"), "--json")
    assert r.exit_code == 0, r.output
    assert np.array_equal(np.load(tmp_path / "d.npy"), a.astype(np.int64) @ b.astype(np.int64))


def test_layout_src1_bf16_pvc():
    r = run("layout", "--platform", "pvc", "--precision", "bf16", "--operand", "src1", "--json")
    rows = json.loads(r.output)
    assert rows[0] == {"grf": 0, "dword": 0, "byte": 0, "elements": [[0, 0], [1, 0]]}
    assert rows[17] == {"grf": 1, "dword": 1, "byte": 68, "elements": [[2, 1], [3, 1]]}
    r = run("layout", "--platform", "dg2", "--precision", "s8", "--operand", "src2", "--rc", "2", "--json")
    rows = json.loads(r.output)
    assert rows[8]["elements"] == [[1, 0], [1, 1], [1, 2], [1, 3]] and rows[8]["grf"] == 1
    assert run("layout").exit_code == 0
