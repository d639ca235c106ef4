"""examples/cl: every kernel bit-identical under `systolic run` and with its pyopencl-style host script;
`systolic cl build` shows each matrix built-in call site and the instruction it becomes."""
import json
import runpy
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from systolic.cli import cli
from systolic.run import run_file

EX = Path(__file__).resolve().parents[2] / "examples" / "cl"
KERNELS = sorted(p.name for p in EX.glob("*.cl"))


def test_at_least_six_examples():
    assert len(KERNELS) >= 6


@pytest.mark.parametrize("name", KERNELS)
def test_example_runs_bit_identical(name):
    rep = run_file(EX / name)
    assert rep["kind"] == "opencl-c" and rep["verdict"] == "bit-identical", rep["checks"]
    if name.startswith("gemm"):
        t = rep["instructions"]["totals"]
        assert t.get("DPAS", 0) + t.get("DPASW", 0) > 0


@pytest.mark.parametrize("script,args", [("gemm_host.py", ["gemm_int8_dg2.cl"]), ("gemm_host.py", ["gemm_bf16_pvc.cl"]),
                                         ("reduce_local_host.py", []), ("collatz_divergent_host.py", ["dg2"])])
def test_host_scripts(script, args, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [script, *args])
    with pytest.raises(SystemExit) as e:
        runpy.run_path(str(EX / script), run_name="__main__")
    assert e.value.code == 0, capsys.readouterr().out


def test_cl_build_calls_json():
    r = CliRunner().invoke(cli, ["cl", "build", str(EX / "gemm_split_dg2.cl"), "--device", "dg2", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    (c,) = d["calls"]
    assert c["dpas"] == "dpasw.s8.s8.8.8" and c["instruction_kind"] == "DPASW" and d["kernels"] == ["gemm_split"]


def test_cl_build_llvm():
    r = CliRunner().invoke(cli, ["cl", "build", str(EX / "gemm_int8_pvc.cl"), "--emit", "llvm"])
    assert r.exit_code == 0 and 'target triple = "spir64-unknown-unknown"' in r.output
