"""README.md is true: its Python blocks run as written, its commands run (tests/test_docs_examples.py runs every
``systolic`` line of README.md and compares each ```console block's output with the output shown), and the
claims its prose makes about those commands hold (this file).

The Python blocks run top to bottom in one namespace (as a reader pasting them into one session would); a block
that needs what this machine lacks (tests/doc_blocks.py: torch, CUDA, native AMX) is skipped with the reason."""

from __future__ import annotations

import json
import re
import warnings

import pytest
from click.testing import CliRunner

from doc_blocks import ROOT, fenced_blocks, missing_python
from systolic.cli import cli
from systolic.errors import ProgramError

README = ROOT / "README.md"
TEXT = README.read_text()
BLOCKS = [b for b in fenced_blocks(README) if b.lang == "python"]


def _json(*args) -> dict:
    r = CliRunner().invoke(cli, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 3


def test_readme_python_blocks_run_in_order(capsys):
    ns: dict = {"__name__": "readme"}
    skipped = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for b in BLOCKS:
            why = missing_python(b.text)
            if why:
                skipped.append(f"README.md:{b.line}: {why}")
                continue
            exec(compile("\n" * (b.line - 1) + b.text, "README.md", "exec"), ns)   # the page's line numbers
    # the README teaches one vocabulary (device=, path=, backend=): no older keyword that systolic.vocabulary
    # still takes with a DeprecationWarning (cpu=, platform=, engine=, backend="emulator"|"spec", ...)
    old = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught
           if issubclass(w.category, DeprecationWarning) and "the old spelling goes after" in str(w.message)]
    assert not old, old
    out = capsys.readouterr().out
    assert "error: " in out and "distinct" in out.lower()     # the AMX block shows its #UD, then goes on
    assert ns["c"].shape == (256, 128) and ns["d"].shape == (64, 128)
    if "report" in ns:                                        # step 4 ran (torch installed): a per-layer table
        assert [r.engine.split()[0] for r in ns["report"].runs] == ["fp32", "amx:sapphirerapids", "xmx:dg2"]
        assert tuple(ns["y"].shape) == (8, 10)
    if skipped:
        pytest.skip("; ".join(skipped))


def test_start_path_has_five_steps_each_with_a_checked_command():
    steps = re.findall(r"^\*\*(\d)\. ([^*]+)\*\*", TEXT, re.M)
    assert [n for n, _ in steps] == ["1", "2", "3", "4", "5"]
    titles = [t.strip(". ") for _, t in steps]
    assert titles == ["Run a program", "See who holds what", "Explain one element", "Run a model", "Go to the GPU"]
    start = TEXT.index("## Start here")
    end = TEXT.index("## Install and test")
    console = [b for b in fenced_blocks(README) if b.lang == "console"]
    lines = [b.line for b in console]
    in_path = [n for n in lines if TEXT.count("\n", 0, start) < n < TEXT.count("\n", 0, end)]
    assert len(in_path) == 4                 # steps 1, 2, 3 and 5 (step 4 is the Python block)
    assert all(any(s.startswith("$ ") and len(s) > 2 for s in b.text.splitlines()) and
               len(b.text.strip().splitlines()) >= 2 for b in console)    # each shows its output


def test_the_seed_claims():
    """'That program is the seed ... written for AMX only' and 'the tile instruction TDPBSSD, 16 times'."""
    assert "written for AMX only" in TEXT
    rep = _json("run", "examples/sycl/seed_gemm_2021.py")
    assert rep["device"]["kind"] == "AMX CPU" and rep["verdict"] == "bit-identical"
    assert [(r["op"], r["count"]) for r in rep["instructions"]["amx"] if r["op"].startswith("tdp")] == \
        [("tdpbssd", 16)]
    from systolic.run import run_file
    with pytest.raises(ProgramError, match="does not support device 'pvc'"):
        run_file("examples/sycl/seed_gemm_2021.py", "pvc")
    assert "--device pvc` runs it on XMX" not in TEXT        # the old wrong claim stays gone


def test_the_same_sycl_source_runs_on_amx_and_xmx():
    """Step 5: 'The same SYCL source runs on any device chosen at run time': its DEVICES hold both engines, and
    it is bit-identical on one AMX CPU besides the GPUs the README runs."""
    import runpy
    devs = runpy.run_path(str(ROOT / "examples/sycl/gemm_bf16.py"), run_name="not_main")["DEVICES"]
    assert {"spr", "pvc", "bmg"} <= set(devs)
    rep = _json("run", "examples/sycl/gemm_bf16.py", "--device", "sapphirerapids")
    assert rep["device"]["kind"] == "AMX CPU" and rep["verdict"] == "bit-identical"


def _where(*args) -> str:
    r = CliRunner().invoke(cli, ["layout", "where", *args])
    assert r.exit_code == 0 and r.exception is None, (args, r.output, r.exception)
    return r.output


def test_device_aliases_named_in_the_readme_work():
    """'every name of a device': each alias group the README names gives one answer, and that answer is the
    named device's (not a default's): the groups differ from each other and dg2's from the default, PVC."""
    groups = (("spr", "sapphirerapids", "intel_cpu_spr"), ("pvc", "xehpc", "intel_gpu_pvc"),
              ("dg2", "xehpg", "intel_gpu_dg2_g10"))
    for names in groups:
        assert all(f"`{n}`" in TEXT for n in names), names
    # joint_matrix A on a CPU (sub-group of 1 work-item) vs a GPU (16 work-items on PVC, 8 on DG2)
    sycl = {names: {_where("sycl", "a", "3", "5", "--type", "bf16", "--m", "8", "--k", "16", "-d", n)
                    for n in names} for names in groups}
    assert all(len(outs) == 1 for outs in sycl.values()), sycl
    assert len({outs.pop() for outs in sycl.values()}) == len(groups), sycl    # three devices, three answers
    # DPAS B (Src1) of one GRF block: dg2's 8-lane layout, not the default PVC's 16-lane one
    default = _where("dpas", "b", "3", "5")
    dg2 = {_where("dpas", "b", "3", "5", "--device", n) for n in groups[2]}
    assert len(dg2) == 1 and default not in dg2, (default, dg2)
    assert _where("dpas", "b", "3", "5", "--device", "xehpc") == default
    from systolic.run.devices import same_device
    assert all(same_device(names[0], n) for names in groups for n in names)
    assert not same_device("spr", "pvc") and not same_device("pvc", "dg2")


def test_readme_links_point_inside_the_project():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", TEXT):
        assert not target.startswith("http") and (ROOT / target).exists(), target
    for anchor in re.findall(r"\]\(docs/glossary\.md#([^)]+)\)", TEXT):
        assert f'<a id="{anchor}"></a>' in (ROOT / "docs/glossary.md").read_text(), anchor
