"""Tile register allocation against LLVM's (regalloc.py): a tilezero tile is made again, not spilled.

IR: tests/compiler/data/remat_zero.ll (the pattern of LLVM's amx-lower-tile-copy.ll test2). Oracles: the eager
run of the same IR and exact integer TDPBSSD with a zero accumulator.
"""

from pathlib import Path

import numpy as np
import pytest

from systolic.compiler import compile_ir

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def mod():
    return compile_ir((DATA / "remat_zero.ll").read_text(), source="remat_zero.ll")


def test_rematerialized_not_spilled(mod):
    info = mod.info["zero_across_call"]
    assert info["spilled"] == [] and info["rematerialized"] == ["z"]
    f = mod.machine.function("zero_across_call")
    ops = [i.opcode for i in f.instructions()]
    assert "TILESTORED" in ops and not any(i.attrs.get("spill") for i in f.instructions())
    assert ops.count("TILEZERO") == 1  # in the loop, after the call; the entry's is gone
    assert ops.count("LDTILECFG") == 1  # after the call only (nothing runs under an entry load)


def _exact(buf):
    t = np.stack([buf[64 * r: 64 * r + 32] for r in range(8)]).astype(np.int8).astype(np.int64)
    out = np.zeros((8, 8), np.int64)
    for m in range(8):
        for n in range(8):
            out[m, n] = sum(t[m, 4 * k + q] * t[k, 4 * n + q] for k in range(8) for q in range(4))
    return ((out + 2 ** 31) % 2 ** 32 - 2 ** 31).astype("<i4")


@pytest.mark.parametrize("n", [1, 3])
def test_compiled_equals_eager_and_exact(mod, n):
    rng = np.random.default_rng(n)
    init = rng.integers(0, 256, 2048, dtype=np.uint8)
    a, b = init.copy(), init.copy()
    mod.run("zero_across_call", n, memory={"buf": a})
    mod.run_eager("zero_across_call", n, memory={"buf": b})
    assert np.array_equal(a, b)
    got = np.stack([a[1024 + 64 * r: 1024 + 64 * r + 32] for r in range(8)]).view("<i4")
    assert np.array_equal(got, _exact(init))


@pytest.fixture(scope="module")
def merge():
    return compile_ir((DATA / "spill_merge.ll").read_text(), source="spill_merge.ll")


def _spill_code(f):
    st = [i for i in f.instructions() if i.opcode == "TILESTORED" and i.attrs.get("spill")]
    ld = [i for i in f.instructions() if i.opcode == "TILELOADD" and i.attrs.get("spill")]
    return st, ld


def test_no_redundant_spill_code(merge):
    """LLVM (amx-spill-merge.ll test_api) stores 4 spills and reloads 3; ours: c once, d1 and d2 once each after
    their TMUL, and c is not reloaded on either arm (the register still holds it on every path there)."""
    f = merge.machine.function("merge")
    st, ld = _spill_code(f)
    assert len(st) == 3 and len(ld) == 3
    assert merge.info["merge"]["spill_code_removed"] > 0
    for b in f.blocks:  # no reload right after a store of the same register into the same slot
        for x, y in zip(b.instrs, b.instrs[1:]):
            assert not (x.opcode == "TILESTORED" and y.opcode == "TILELOADD" and x.attrs.get("spill")
                        and x.operands[0] is y.operands[0] and x.attrs["tiles"] == y.attrs["tiles"])


@pytest.mark.parametrize("cond", [0, 1])
def test_merge_compiled_equals_eager(merge, cond):
    rng = np.random.default_rng(10 + cond)
    init = rng.integers(0, 256, 3072, dtype=np.uint8)
    a, b = init.copy(), init.copy()
    merge.run("merge", 2, 8, cond, memory={"buf": a})
    merge.run_eager("merge", 2, 8, cond, memory={"buf": b})
    assert np.array_equal(a, b) and not np.array_equal(a, init)


def test_merge_faults_equal():
    from systolic.errors import InvalidOpcode
    m = compile_ir((DATA / "spill_merge.ll").read_text())
    with pytest.raises(InvalidOpcode):  # exit: A = d is 2 x 16, K/4 = 4 rows but B has 2
        m.run_eager("merge", 2, 16, 1, memory={"buf": np.zeros(3072, np.uint8)})
    with pytest.raises(InvalidOpcode):
        m.run("merge", 2, 16, 1, memory={"buf": np.zeros(3072, np.uint8)})


def _spill_counts(mod, fn):
    ins = list(mod.machine.function(fn).instructions())
    return (sum(1 for i in ins if i.attrs.get("spill") and i.opcode == "TILESTORED"),
            sum(1 for i in ins if i.attrs.get("spill") and i.opcode == "TILELOADD"))


def test_split_search_spills_less_than_the_pressure_gap_split(monkeypatch):
    """tests/compiler/data/two_classes.ll: the pressure-gap split alone gives the once-used 4x16 tiles five
    registers and reloads the much-used 8x32 ones; trying the splits (regalloc best_split) reloads less."""
    from systolic.compiler import regalloc
    text = (DATA / "two_classes.ll").read_text()
    searched = compile_ir(text)
    monkeypatch.setattr(regalloc._Allocator, "best_split", lambda self, first, *rest: first)
    gap_only = compile_ir(text)
    (s1, r1), (s0, r0) = _spill_counts(searched, "two_classes"), _spill_counts(gap_only, "two_classes")
    assert s1 <= s0 and r1 < r0
    for mod in (searched, gap_only):
        init = np.random.default_rng(3).integers(0, 256, 16384, dtype=np.uint8)
        a, b = init.copy(), init.copy()
        mod.run("two_classes", memory={"buf": a})
        mod.run_eager("two_classes", memory={"buf": b})
        assert np.array_equal(a, b) and not np.array_equal(a, init)
