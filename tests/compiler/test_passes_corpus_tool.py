"""tools/llvm_amx_corpus.py reads a checkout's llvm/test/CodeGen/X86/AMX and counts, for LLVM (from CHECK
lines) and for us, ldtilecfg / config rows / spills / reloads / copies. Run here on our own files laid out like
a checkout (tests/compiler/data/corpus/*.ll; their check lines were written for this test, the expected counts
below by reading them)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DATA = Path(__file__).parent / "data" / "corpus"


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    root = tmp_path_factory.mktemp("llvm-project")
    amx = root / "llvm" / "test" / "CodeGen" / "X86" / "AMX"
    amx.mkdir(parents=True)
    for f in DATA.glob("*.ll"):
        shutil.copy(f, amx / f.name)
    (amx / "COMMITS").write_text("synthetic.ll " + "a" * 40 + "\n")
    out = root / "out.json"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "llvm_amx_corpus.py"), str(root), "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return {f["name"]: f for f in json.loads(out.read_text())["files"]}, r.stdout


def test_llvm_counts_from_asm_checks(result):
    files, _ = result
    s = files["synthetic.ll"]
    assert s["run"] == "llc" and s["complete"] and s["commit"] == "a" * 40
    assert s["llvm"]["f"] == {"ldtilecfg": 1, "shapes": 2, "spills": 1, "reloads": 1, "copies": 1}


def test_llvm_counts_from_mir_checks(result):
    files, _ = result
    m = files["mir.ll"]
    assert m["run"] == "llc-mir"
    assert m["llvm"]["g"] == {"ldtilecfg": 1, "shapes": 2, "spills": 0, "reloads": 0, "copies": 0}


def test_our_counts_and_table(result):
    files, table = result
    assert files["synthetic.ll"]["accepted"]
    assert files["synthetic.ll"]["ours"]["f"] == {"ldtilecfg": 1, "shapes": 1, "spills": 0, "reloads": 0,
                                                  "copies": 0}
    assert files["mir.ll"]["ours"]["g"]["ldtilecfg"] == 1
    assert "| synthetic.ll | aaaaaaaaaaaa | llc | accepted |" in table
    assert "1 beat them" in table  # f: fewer spills and copies than the (synthetic) LLVM lines
