"""The command line: --version, info, types --json, and errors as one clean line."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

import systolic
from systolic.cli import cli


def test_version():
    r = CliRunner().invoke(cli, ["--version"])
    assert r.exit_code == 0 and systolic.__version__ in r.output


def test_types_json():
    r = CliRunner().invoke(cli, ["types", "--json"])
    assert r.exit_code == 0
    rows = json.loads(r.output)
    by = {row["name"]: row for row in rows}
    assert by["bf16"]["igc_precision_code"] == 9 and by["bf16"]["bits"] == 16
    assert by["hf8"]["max"] == 448.0 and by["e2m1"]["has_nan"] is False


def test_types_table_and_info():
    r = CliRunner().invoke(cli, ["types"])
    assert r.exit_code == 0 and "bf16" in r.output and "E8M7" in r.output
    r = CliRunner().invoke(cli, ["info", "--json"])
    assert r.exit_code == 0
    info = json.loads(r.output)
    assert "amx_features" in info and "granted" in info["tile_data_permission"]
    if "AMX-TILE" not in info["amx_features"]:
        assert info["tile_data_permission"]["granted"] is False
        assert "amx_tile" in info["tile_data_permission"]["reason"]
        assert info["native_amx_backend"]["available"] is False
        assert info["native_amx_backend"]["reason"]


def test_every_verb_has_help():
    for verb in cli.list_commands(None):
        r = CliRunner().invoke(cli, [verb, "--help"])
        assert r.exit_code == 0, (verb, r.output)
        assert "Usage:" in r.output


def test_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "systolic", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and systolic.__version__ in out.stdout


def test_tour_checks_every_engine():
    r = CliRunner().invoke(cli, ["tour", "--json", "--seed", "3"])
    assert r.exit_code == 0, r.output
    steps = json.loads(r.output)
    assert {s["engine"] for s in steps} >= {"AMX", "XMX", "SYCL", "OpenCL", "vISA", "compiler", "layout", "counters"}
    assert all(s["ok"] is True for s in steps)
    # a count or a map "matches"; values are "bit-identical" (issue 27)
    assert {s["engine"]: s["verdict"] for s in steps}["counters"] == "matches"
    assert {s["verdict"] for s in steps if s["engine"] in ("AMX", "XMX", "SYCL", "OpenCL")} == {"bit-identical"}
    import importlib.util
    assert ("torch" in {s["engine"] for s in steps}) == (importlib.util.find_spec("torch") is not None)
