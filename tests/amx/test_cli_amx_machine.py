"""``systolic amx cpus`` and ``systolic amx tilecfg``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from systolic.amx import TileConfig
from systolic.cli import cli, main


def test_cpus_json_lists_the_models():
    r = CliRunner().invoke(cli, ["amx", "cpus", "--json"])
    assert r.exit_code == 0, r.output
    by = {c["name"]: c for c in json.loads(r.output)}
    assert by["sapphirerapids"]["features"] == ["amx-tile", "amx-int8", "amx-bf16"]
    assert "tdphf8ps" in by["diamondrapids"]["instructions"]
    assert by["graniterapids"]["cpuid"]["0x1d.1"] == ["0x4002000", "0x80040", "0x10", "0x0"]


def test_cpus_table():
    r = CliRunner().invoke(cli, ["amx", "cpus"])
    assert r.exit_code == 0 and "AMX CPU models" in r.output and "granite" in r.output


def test_tilecfg_decodes_and_checks():
    img = TileConfig(palette=1, start_row=2, tiles={0: (16, 64), 3: (4, 6)}).to_bytes().hex()
    r = CliRunner().invoke(cli, ["amx", "tilecfg", img, "--json"])
    assert r.exit_code == 0
    assert json.loads(r.output) == {"palette": 1, "start_row": 2, "tiles": {"tmm0": {"rows": 16, "colsb": 64},
                                                                           "tmm3": {"rows": 4, "colsb": 6}}}
    r = CliRunner().invoke(cli, ["amx", "tilecfg", img])
    assert "colsb % 4" in r.output


def test_tilecfg_general_protection_is_one_error_line(capsys):
    bad = bytearray(TileConfig(palette=1, tiles={0: (16, 64)}).to_bytes())
    bad[5] = 1
    try:
        main(["amx", "tilecfg", bad.hex()])
    except SystemExit as e:
        assert e.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: #GP") and "reserved" in err


def test_tilecfg_bad_input_is_a_typed_error(capsys):
    for arg in ("zz", "00" * 63):
        try:
            main(["amx", "tilecfg", arg])
        except SystemExit as e:
            assert e.code == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and ("hexadecimal" in err or "64 bytes" in err)
