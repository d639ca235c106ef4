"""ldtilecfg placement against LLVM's (tileconfig.py): no configuration load that no tile instruction runs under.

LLVM's amx-across-func.ll and amx-ldtilecfg-insert.ll show where llc loads the configuration: not at the entry
when a call comes before the first tile instruction, not after a last call before ``ret``, and again after each
call that tile instructions follow. tests/compiler/data/config_calls.ll has each case; the oracle for the
counts is those CHECK lines, for the values the eager run of the same IR.
"""

from pathlib import Path

import numpy as np
import pytest

from systolic.compiler import compile_ir
from systolic.compiler.tileconfig import observed_configs

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def mod():
    return compile_ir((DATA / "config_calls.ll").read_text(), source="config_calls.ll")


def _listing(mod, fn):
    text = mod.emit("machine").split(f"function @{fn}:")[1].split("function @")[0]
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


@pytest.mark.parametrize("fn, loads", [("first_call", 1), ("last_call", 1), ("loop", 2)])
def test_ldtilecfg_count_is_llvms(mod, fn, loads):
    lines = _listing(mod, fn)
    assert sum(ln.startswith("LDTILECFG") for ln in lines) == loads
    f = mod.machine.function(fn)
    observed, unobserved = observed_configs(f)
    assert len(observed) == loads and unobserved == []


def test_first_load_follows_the_first_call(mod):
    lines = _listing(mod, "first_call")
    k = lines.index("call void @g()")
    assert lines[k + 1].startswith("LDTILECFG") and not any(ln.startswith("LDTILECFG") for ln in lines[:k])


def test_no_load_after_the_last_call(mod):
    lines = _listing(mod, "last_call")
    k = lines.index("call void @g()")
    assert lines[k + 1:] == ["TILERELEASE", "ret void"]


def test_loop_loads_after_each_call_tiles_follow(mod):
    lines = _listing(mod, "loop")
    calls = [k for k, ln in enumerate(lines) if ln == "call void @g()"]
    assert len(calls) == 3
    after = [lines[k + 1].startswith("LDTILECFG") for k in calls]
    assert after == [True, True, False]  # the last call of the body is followed by the header's call


@pytest.mark.parametrize("fn, args", [("first_call", ()), ("last_call", ()), ("loop", (5,)), ("loop", (0,))])
def test_compiled_equals_eager(mod, fn, args):
    rng = np.random.default_rng(7)
    init = rng.integers(0, 256, 2048, dtype=np.uint8)
    a, b = init.copy(), init.copy()
    mod.run(fn, *args, memory={"buf": a})
    mod.run_eager(fn, *args, memory={"buf": b})
    assert np.array_equal(a, b)
    if fn != "loop" or args[0]:
        assert not np.array_equal(a, init)  # the program did write something
