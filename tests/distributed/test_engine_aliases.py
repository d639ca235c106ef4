"""Issue 27: every alias of every device in an engine string (``amx:<device>`` / ``xmx:<device>``), through
``systolic.torch.emulate``, the distributed engine parsing (vector kinds and --engines) and the CLI.

The aliases come from the device tables themselves (CPU models, XMX platforms, SYCL devices), and each alias's
expected canonical name from the same tables' records (a SYCL device's ``engine`` field; a CPU model's or a
platform's own ``name``), not from the resolver under test."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from systolic.amx.cpu import CPUS
from systolic.errors import InvalidValue
from systolic.sycl.devices import DEVICES
from systolic.xmx.platform import PLATFORMS


def _aliases() -> dict[str, dict[str, str]]:
    """family -> {alias: canonical engine device}, from the tables."""
    out: dict[str, dict[str, str]] = {"amx": {}, "xmx": {}}
    for c in CPUS.values():
        for n in (c.name, *c.aliases):
            out["amx"][n] = c.name
    for p in PLATFORMS.values():
        for n in (p.name, *p.aliases):
            out["xmx"][n] = p.name
    for d in DEVICES.values():
        canon = CPUS[d.engine].name if d.backend == "amx" else PLATFORMS[d.engine].name
        for n in (d.name, d.architecture):
            assert out[d.backend].get(n, canon) == canon, f"{n} names two devices"
            out[d.backend][n] = canon
    return out


ALIASES = _aliases()
CASES = [(fam, alias, canon) for fam, table in ALIASES.items() for alias, canon in sorted(table.items())]
IDS = [f"{fam}:{alias}" for fam, alias, _ in CASES]


def test_the_sycl_architectures_are_among_the_cases():
    """The names issue 27 reported refused are parametrized here (a guard against an empty table walk)."""
    for name in ("intel_cpu_spr", "intel_cpu_emr", "intel_cpu_gnr", "intel_cpu_dmr"):
        assert name in ALIASES["amx"]
    for name in ("arl", "intel_gpu_pvc", "intel_gpu_dg2_g10", "intel_gpu_bmg_g21", "intel_gpu_lnl_m",
                 "intel_gpu_arl_h"):
        assert name in ALIASES["xmx"]


def _precision(fam: str, canon: str) -> str:
    """An input precision the device has (every AMX CPU has int8; an XMX platform bf16 or else s8/int8)."""
    if fam == "amx":
        return "int8"
    return "bf16" if PLATFORMS[canon].supports("bf16") else "int8"


_REFERENCE: dict[tuple[str, str], torch.Tensor] = {}


def _linear_under(engine: str, precision: str):
    from systolic.torch import emulate
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 4)
    x = torch.randn(2, 8)
    with emulate(engine, precision=precision) as mode:
        y = lin(x)
    return y.detach(), mode.engine


@pytest.mark.parametrize("fam,alias,canon", CASES, ids=IDS)
def test_emulate_accepts_every_alias(fam, alias, canon):
    p = _precision(fam, canon)
    y, engine = _linear_under(f"{fam}:{alias}", p)
    assert (engine.kind, engine.device) == (fam, canon)
    key = (fam, canon)
    if key not in _REFERENCE:
        _REFERENCE[key] = _linear_under(f"{fam}:{canon}", p)[0]
    assert torch.equal(y, _REFERENCE[key])          # the alias computes what the canonical name computes


@pytest.mark.parametrize("fam,alias,canon", CASES, ids=IDS)
def test_distributed_parsing_accepts_every_alias(fam, alias, canon):
    from systolic.distributed.kinds import Spec, make_kind
    from systolic.distributed.study import _check_engines
    spec = Spec(engine=f"{fam}:{alias}", instruction="tdpbssd" if fam == "amx" else "dpas",
                precision=None if fam == "amx" else "s8")
    assert make_kind(spec).spec.engine == f"{fam}:{canon}"      # what a manifest records
    assert _check_engines(f"{fam}:{alias}") == [(f"{fam}:{alias}", {})]


@pytest.mark.parametrize("fam,alias,canon", CASES, ids=IDS)
def test_the_other_family_refuses_with_the_rule(fam, alias, canon):
    """A CPU alias under xmx: (a GPU one under amx:) is a typed error naming the rule, everywhere."""
    from systolic.distributed.kinds import Spec, make_kind
    from systolic.torch.engines import parse_engine
    other = "xmx" if fam == "amx" else "amx"
    for call in (lambda: parse_engine(f"{other}:{alias}"),
                 lambda: make_kind(Spec(engine=f"{other}:{alias}", instruction="tdpbssd" if other == "amx" else "dpas",
                                        precision=None if other == "amx" else "s8"))):
        with pytest.raises(InvalidValue) as e:
            call()
        assert f"not an {other.upper()} one: name it {fam}:{alias}" in str(e.value)
        assert "amx:<device> names a CPU (AMX) device, xmx:<device> a GPU (XMX) device" in e.value.rule


@pytest.mark.parametrize("engine,hint", [("amx:intel_cpu_sprr", "intel_cpu_spr"), ("xmx:intel_gpu_pv", "intel_gpu_pvc"),
                                         ("xmx:arll", "arl")])
def test_an_unknown_name_suggests_the_close_ones(engine, hint):
    from systolic.torch.engines import parse_engine
    with pytest.raises(InvalidValue) as e:
        parse_engine(engine)
    assert f"did you mean '{hint}'" in str(e.value)


@pytest.mark.parametrize("engine,canon,extra", [
    ("amx:intel_cpu_gnr", "amx:graniterapids", ["--instruction", "tdpbssd", "--shape", "2,2,2"]),
    ("xmx:intel_gpu_arl_h", "xmx:dg2", ["--precision", "s8"]),
])
def test_cli_vectors_generate_records_the_canonical_device(tmp_path, engine, canon, extra):
    from systolic.cli import cli
    out = tmp_path / "v"
    r = CliRunner().invoke(cli, ["vectors", "generate", "--engine", engine, *extra, "--count", "4", "--shard-size",
                                 "4", "--workers", "1", "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["args"]["spec"]["engine"] == canon            # the campaign's spec, canonical
    assert manifest["kind"]["engine"] == canon
    assert engine not in json.dumps(manifest)                      # the alias spelling is recorded nowhere
