"""The pass protocol and pipeline (passes.py): analysis passes leave the function as it was, the verifier runs
after every pass and catches a broken invariant, ``--print-after`` works for each pass, and the split passes
(shape-analysis + shapes, assign + regalloc) give what the combined ones give."""

import copy
import re
from pathlib import Path

import pytest

from systolic.cli.amx_compiler import PASS_NAMES as CLI_PASS_NAMES
from systolic.compiler import compile_ir, regalloc, shapes
from systolic.compiler.ir import Instr
from systolic.compiler.llvm_reader import parse
from systolic.compiler.passes import PASS_NAMES, PIPELINE, run_pipeline, verify
from systolic.compiler.printer import print_module
from systolic.errors import CompileError


DATA = Path(__file__).parent / "data"


def run_cli(*args):
    from click.testing import CliRunner

    from systolic.cli import cli
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)

API = Path(__file__).parents[2] / "examples" / "amx" / "api.ll"


def test_cli_offers_every_pass():
    assert CLI_PASS_NAMES == PASS_NAMES
    assert [p.kind for p in PIPELINE].count("analysis") == 2


@pytest.mark.parametrize("p", [p for p in PIPELINE if p.kind == "analysis"], ids=lambda p: p.name)
def test_analysis_passes_change_nothing(p):
    m = parse((DATA / "acc_shape.ll").read_text())
    before = print_module(m)
    for f in m.functions.values():
        if not f.declaration:
            p.run(m, f)
    assert print_module(m) == before


def test_snapshot_after_every_pass():
    mod = compile_ir(API.read_text())
    assert list(mod.snapshots) == list(PASS_NAMES)
    assert mod.snapshots["shape-analysis"] == mod.snapshots["verify"]  # an analysis prints what it was given
    assert "PTDPBSSDV" in mod.snapshots["lower"] and "PLDTILECFGV" in mod.snapshots["tileconfig"]
    assert "TILECOPY" in mod.snapshots["assign"] and "TDPBSSD" in mod.snapshots["regalloc"]
    # while allocating, a copy prints the tile variable it writes (the phi it replaces)
    assert re.search(r"%\S+ = TILECOPY %\S+", mod.snapshots["assign"])


@pytest.mark.parametrize("name", PASS_NAMES)
def test_cli_print_after_each_pass(name):
    r = run_cli("amx", "compile", str(API), "--print-after", name)
    assert r.exit_code == 0, r.output
    assert f"; *** IR after {name} ***" in r.output


def test_split_passes_equal_the_combined_ones():
    text = (DATA / "remat_zero.ll").read_text()
    a, b = parse(text), parse(text)
    run_pipeline(a)
    for f in b.functions.values():  # the old entry points: propagate and allocate
        if f.declaration:
            continue
        shapes.propagate(b, f)
        from systolic.compiler import lower, tileconfig
        lower.lower(b, f)
        lower.dce(f)
        tileconfig.place_config(b, f)
        regalloc.allocate(b, f)
        tileconfig.prune_config(b, f)
    assert print_module(a) == print_module(b)


def _compiled_upto(name):
    m = parse(API.read_text())
    k = PASS_NAMES.index(name) + 1
    run_pipeline(m, PIPELINE[:k])
    return m, m.function("api")


def test_verifier_catches_an_unlowered_intrinsic():
    m, f = _compiled_upto("shapes")
    PIPELINE[PASS_NAMES.index("lower")].run(m, f)
    verify(m, f, "lower")
    call = next(i for i in f.instructions() if i.opcode == "PTDPBSSDV")
    call.opcode = "call"  # as if lower had missed it
    call.attrs["callee"] = m.functions.get("llvm.x86.tdpbssd.internal") or next(
        g for g in m.functions.values() if g.name.startswith("llvm.x86.tdpbssd"))
    with pytest.raises(CompileError, match="verifier after lower"):
        verify(m, f, "lower")


def test_verifier_catches_a_tile_instruction_without_config():
    m, f = _compiled_upto("config-prune")
    verify(m, f, "config-prune")
    for b in f.blocks:
        b.instrs = [i for i in b.instrs if i.opcode != "LDTILECFG"]
    with pytest.raises(CompileError, match="before any ldtilecfg"):
        verify(m, f, "config-prune")


def test_verifier_catches_a_broken_ssa_use():
    m, f = _compiled_upto("lower")
    dot = next(i for i in f.instructions() if i.opcode == "PTDPBSSDV")
    b = dot.block
    b.instrs.remove(dot)
    b.instrs.insert(len(b.instrs) - 1, dot)  # now after the store that uses it
    with pytest.raises(CompileError, match="verifier after lower"):
        verify(m, f, "lower")


def test_a_pass_refuses_one_function_only():
    """tests/compiler/data/refuse_per_function.ll: shape analysis refuses @by_value (a tile passed as a vector
    argument) and @to_vector (a tile returned as a vector) with UnmodelledConstruct naming the construct, the
    function and the line; @fine compiles and runs equal to eager; calling a refused function raises."""
    import numpy as np

    from systolic.errors import UnmodelledConstruct
    mod = compile_ir((DATA / "refuse_per_function.ll").read_text())
    assert set(mod.machine.refused) == {"by_value", "to_vector"}
    err = mod.machine.refused["by_value"]
    assert err.values["function"] == "by_value" and err.values["construct"] == "tile passed by value"
    assert err.values["line"] == 11
    assert mod.machine.refused["to_vector"].values["construct"] == "ret of a tile value"
    assert set(mod.info) == {"fine"}
    init = np.random.default_rng(1).integers(0, 256, 2048, dtype=np.uint8)
    a, b = init.copy(), init.copy()
    mod.run("fine", memory={"buf": a})
    mod.run_eager("fine", memory={"buf": b})
    assert np.array_equal(a, b) and not np.array_equal(a, init)
    with pytest.raises(UnmodelledConstruct, match="to_vector"):
        mod.run("to_vector")
    with pytest.raises(UnmodelledConstruct, match="to_vector"):
        mod.run_eager("to_vector")
