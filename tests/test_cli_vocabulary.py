"""One vocabulary on the command line (issue 27): --device everywhere with every alias, the old option names as
hidden aliases, one --dst-type vocabulary, operands in both forms, --m with --rc, no short option meaning two
things, and "did you mean" for every name a user types."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from systolic.cli import cli
from systolic.errors import InvalidValue, ProgramError
from systolic.layout.operands import CORRESPONDENCE, operand_name
from systolic.suggest import close_matches, did_you_mean


def run(*args):
    r = CliRunner().invoke(cli, list(args))
    return r


def ok(*args) -> str:
    r = run(*args)
    assert r.exit_code == 0 and r.exception is None, (args, r.output, r.exception)
    return r.output


def _commands(cmd=cli, path=()):
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        for n in cmd.list_commands(ctx):
            yield from _commands(cmd.get_command(ctx, n), (*path, n))
    else:
        yield path, cmd


def test_no_short_option_means_two_things():
    meaning: dict[str, set[str]] = {}
    for path, cmd in _commands():
        for p in cmd.params:
            if isinstance(p, click.Option):
                longs = [o for o in p.opts if o.startswith("--")]
                for s in (o for o in p.opts if not o.startswith("--")):
                    meaning.setdefault(s, set()).add(p.name.lstrip("_").split("_alias")[0] if p.name.startswith(
                        "_device") else longs[0])
    clashes = {s: m for s, m in meaning.items() if len(m) > 1}
    assert not clashes, clashes


def test_every_device_option_is_spelled_device():
    """Every visible option that names hardware is --device; --cpu/--platform only as hidden aliases."""
    for path, cmd in _commands():
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.hidden:
                assert not {"--cpu", "--platform"} & set(p.opts), (path, p.opts)


@pytest.mark.parametrize("spelling", ["gnr", "graniterapids", "intel_cpu_gnr", "GNR"])
def test_amx_commands_take_every_alias(spelling):
    """A non-default CPU by any name: Granite Rapids has AMX-FP16, the default (spr) has not, so TDPFP16PS
    compiles only where --device (or the old --cpu) really reached the command."""
    args = ("amx", "asm", "--mnemonic", "tdpfp16ps", "--ir")
    default = run(*args)
    assert default.exit_code != 0 and "sapphirerapids has no TDPFP16PS" in str(default.exception), default
    out = ok(*args, "--device", spelling)
    assert "tdpfp16ps" in out and out == ok(*args, "--cpu", "gnr")


@pytest.mark.parametrize("spelling", ["dg2", "xehpg", "acm", "intel_gpu_dg2_g10", "DG2"])
def test_xmx_commands_take_every_alias(spelling):
    """A non-default GPU by any name: DG2 (8 lanes) gives another DPAS and another B layout than the default PVC
    (16 lanes), and the same as the old --platform spelling."""
    dpas = ok("xmx", "dpas", "--device", spelling, "--rc", "2", "--json")
    assert dpas == ok("xmx", "dpas", "--platform", "dg2", "--m", "2", "--json")
    assert dpas != ok("xmx", "dpas", "--rc", "2", "--json")
    assert '"platform": "dg2"' in dpas
    where = ok("layout", "where", "dpas", "b", "3", "5", "-d", spelling)
    assert where == ok("layout", "where", "dpas", "src1", "3", "5", "--platform", "dg2")
    assert where != ok("layout", "where", "dpas", "b", "3", "5")


def test_run_takes_every_alias_of_a_declared_device():
    """A .py program declares spr, a .ll program sapphirerapids: both spellings run both."""
    for f in ("examples/sycl/seed_gemm_2021.py", "examples/amx/tile_gemm_s8u8.ll"):
        for d in ("spr", "sapphirerapids", "intel_cpu_spr"):
            r = run("run", f, "--device", d, "--json")
            assert r.exit_code == 0, (f, d, r.output)


def test_run_refusal_lists_the_programs_devices_and_close_names():
    from systolic.run import run_file
    with pytest.raises(ProgramError, match=r"'sprr' \(did you mean 'spr'\?\); it runs on spr, emr, gnr, dmr"):
        run_file("examples/sycl/seed_gemm_2021.py", "sprr")


def test_two_spellings_naming_two_devices_is_a_usage_error():
    r = run("xmx", "dpas", "--device", "pvc", "--platform", "dg2")
    assert r.exit_code == 2 and "two devices" in r.output


def test_wrong_kind_of_device_says_what_is_needed():
    e = run("xmx", "dpas", "--device", "spr").exception
    assert isinstance(e, InvalidValue) and "is an AMX CPU; this command needs an XMX GPU" in str(e)


@pytest.mark.parametrize("dst", [("int32", "d"), ("fp32", "f"), ("bf16", "bf")])
def test_one_dst_type_vocabulary(dst):
    prec = "s8" if dst[0] == "int32" else "bf16"
    a, b = (ok("xmx", "dpas", "--precision", prec, "--dst-type", t, "--m", "1", "--json") for t in dst)
    assert a == b
    a, b = (ok("layout", "detail", "dpas", "d", "--precision", prec, "--dst-type", t, "--json") for t in dst)
    assert a == b


def test_operands_in_both_forms():
    for pair in (("a", "src2"), ("b", "src1"), ("c", "src0"), ("d", "dst")):
        assert len({ok("layout", "table", "dpas", x, "--m", "2") for x in pair}) == 1
    assert ok("layout", "detail", "amx", "a") == ok("layout", "detail", "amx", "src1")      # AMX: src1 is A
    assert ok("xmx", "layout", "--operand", "a", "--json") == ok("xmx", "layout", "--operand", "src2", "--json")
    name = "intel_sub_group_bf16_bf16_matrix_mad_k16"
    assert ok("opencl", "explain", name, "--operand", "src1", "--json") == \
        ok("opencl", "explain", name, "--operand", "b", "--json")


def test_operand_table_is_the_engines_numbering():
    """DPAS src1 is B and src2 is A (visa-DPAS: dst = src0 + src1 * src2 with src2 M x K); AMX src1 is A."""
    assert CORRESPONDENCE["dpas"]["A"] == "src2" and CORRESPONDENCE["dpas"]["B"] == "src1"
    assert CORRESPONDENCE["amx"]["A"] == "src1" and CORRESPONDENCE["amx"]["B"] == "src2"
    assert operand_name("sycl", "src1", "amx") == "a" and operand_name("sycl", "src1", "xmx") == "b"
    with pytest.raises(InvalidValue, match="did you mean 'src1'"):
        operand_name("dpas", "scr1")


def test_register_layout_has_one_visible_command():
    xmx = cli.get_command(click.Context(cli), "xmx")
    assert xmx.get_command(click.Context(xmx), "layout").hidden
    assert ok("xmx", "layout", "--operand", "b") == ok("layout", "table", "dpas", "b", "--by", "holder")


@pytest.mark.parametrize("args, hint", [
    (["lay"], "did you mean 'layout'"),
    (["xmx", "dpaz"], "did you mean 'dpas'"),
    (["xmx", "dpas", "--devic", "pvc"], "--device"),
])
def test_usage_errors_suggest(args, hint):
    r = run(*args)
    assert r.exit_code == 2 and hint in r.output, r.output


@pytest.mark.parametrize("args, hint", [
    (["xmx", "dpas", "--device", "pcv"], "did you mean 'pvc'"),
    (["layout", "detail", "amx", "a", "--instruction", "tdpbf16"], "did you mean 'tdpbf16ps'"),
    (["layout", "detail", "dpass", "a"], "did you mean 'dpas'"),
    (["opencl", "explain", "intel_sub_group_bf16_bf16_matrix_mad_k8"],
     "did you mean 'intel_sub_group_bf16_bf16_matrix_mad_k16'"),
    (["sycl", "combinations", "pvcc"], "did you mean 'pvc'"),
    (["run", "examples/sycl/seed_gem_2021.py"], "did you mean 'examples/sycl/seed_gemm_2021.py'"),
])
def test_names_suggest(args, hint):
    e = run(*args).exception
    assert isinstance(e, InvalidValue) and hint in str(e), e


def test_suggest_helpers():
    assert close_matches("sapphire", ["spr", "sapphirerapids"]) == ["sapphirerapids"]
    assert did_you_mean("zzzz", ["pvc", "dg2"]) == ""
    assert did_you_mean("pcv", ["pvc"]) == " (did you mean 'pvc'?)"


def test_refused_combination_lists_only_the_near_ones():
    """pvc has 53 combinations; a bf16 request that none admits names the bf16 ones and the listing command."""
    from systolic.errors import UnsupportedCombination
    from systolic.sycl import matrix as jm
    with pytest.raises(UnsupportedCombination) as ei:
        jm.find_combination("pvc", "bf16", "bf16", "fp32", "fp32", 8, 16, 32)
    rule = ei.value.rule
    listed = rule.split(": ", 1)[1].split(" (all ")[0].split("; ")
    assert 1 <= len(listed) <= 9 and all(x.startswith("bf16 x bf16 + fp32 -> fp32") for x in listed), listed
    assert "(all 53: systolic sycl combinations pvc)" in rule and len(rule) < 1000


_EXAMPLES = Path(__file__).parents[1] / "examples"


@pytest.mark.parametrize("cmd, old", [
    (("xmx", "dpas", "--device", "dg2", "--precision", "s8", "--m", "2", "--json"),
     {"spec": "--spec", "fast": "--fast"}),
    (("visa", "run", str(_EXAMPLES / "visa/dpas_gemm_bf16.visa"), "--out", "D", "--json"), {"fast": "--fast"}),
], ids=["xmx dpas", "visa run"])
def test_path_option_and_its_older_flags(cmd, old):
    """--path spec|fast; the older flags stay as hidden aliases giving the same output; two spellings naming
    different paths are a usage error. Oracle: the spec path's own output (the fast path is proven equal to it
    elsewhere; here the spellings must not change which path runs or what it prints)."""
    spec = ok(*cmd, "--path", "spec")
    assert ok(*cmd) == spec                                   # the default is the spec path
    assert ok(*cmd, "--path", "fast") == spec
    for path, flag in old.items():
        assert ok(*cmd, flag) == spec
        assert ok(*cmd, "--path", path, flag) == spec         # agreeing spellings are fine
    r = run(*cmd, "--path", "spec", "--fast")
    assert r.exit_code == 2 and "--path spec and --fast name two paths" in r.output
    r = run(*cmd, "--path", "slow")
    assert r.exit_code == 2 and "'slow' is not one of 'spec', 'fast'" in r.output
    help_text = ok(*cmd[:2], "--help")
    assert "--path [spec|fast]" in help_text and "--fast" not in help_text


def test_xmx_dpas_path_reaches_the_engine(monkeypatch):
    """--path is passed to xmx.dpas as path= (not just accepted): record what the engine receives."""
    from systolic import xmx as X
    seen = []
    real = X.dpas

    def spy(*a, **kw):
        seen.append(kw.get("path"))
        return real(*a, **kw)
    monkeypatch.setattr(X, "dpas", spy)
    ok("xmx", "dpas", "--precision", "s8", "--m", "1", "--fast")
    ok("xmx", "dpas", "--precision", "s8", "--m", "1", "--path", "spec")
    assert seen == ["fast", "spec"]
