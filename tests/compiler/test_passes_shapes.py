"""Shape propagation (shapes.py) and the eager reference agree with LLVM on a TMUL's accumulator: the TMUL writes
C's register in place, so its result has the shape C was defined with, whatever SSA values its (m, n) operands
are. No tile copy is made for it (LLVM's amx-greedy-ra-spill-shape.ll makes none).

IR: tests/compiler/data/acc_shape.ll. Oracles: exact integer TDPBSSD (SDM pseudo-code in Python ints) and the
eager run of the same IR; faults: the SDM's #UD rule (dst rows == src1 rows) on the shapes the tiles were
defined with.
"""

from pathlib import Path

import numpy as np
import pytest

from systolic.compiler import compile_ir
from systolic.errors import InvalidOpcode

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def mod():
    return compile_ir((DATA / "acc_shape.ll").read_text(), source="acc_shape.ll")


def _tile(buf, rows, colsb, off=0):
    return np.stack([buf[off + 64 * r: off + 64 * r + colsb] for r in range(rows)])


def _dpbssd(c, a, b):
    """C (rows x colsb bytes, int32 dwords) + A (s8) . B (s8, K/4 rows) in Python ints, wrapped to int32."""
    cw = c.copy().view("<i4").astype(np.int64)
    sa, sb = a.astype(np.int8).astype(int), b.astype(np.int8).astype(int)
    out = np.zeros_like(c)
    ow = out.view("<i4")
    for m in range(cw.shape[0]):
        for n in range(cw.shape[1]):
            acc = int(cw[m, n]) + sum(sa[m, 4 * k + q] * sb[k, 4 * n + q] for k in range(sb.shape[0])
                                      for q in range(4))
            acc &= 0xFFFFFFFF
            ow[m, n] = acc - (1 << 32) if acc >> 31 else acc
    return out


def _memory(seed):
    rng = np.random.default_rng(seed)
    return {g: rng.integers(0, 256, size, dtype=np.uint8) for g, size in (("a", 1024), ("b", 1024), ("c", 4096))}


def test_no_copy_and_one_class(mod):
    for fn in ("acc", "loop"):
        info = mod.info[fn]
        assert info["copies"] == info["copies_eliminated"] == 1  # the TMUL's tie, coalesced
        assert info["spilled"] == []
    assert "tilecopy" not in mod.emit("machine")
    # the accumulator and the result are one virtual tile class: the TMUL's n adds no shape
    loop = mod.machine.function("loop")
    assert {str(s) for s in loop.meta["regalloc"]["shapes"].values()} == {"(4, %c)", "(4, 16)", "(4, %n)"}


@pytest.mark.parametrize("n", [16, 8, 64])
def test_acc_result_has_cs_shape(mod, n):
    """(m, n) = (4, n) but C was loaded as 4 x 16: the result is 4 x 16 for every n (B is 4 x 16 as well)."""
    mem = _memory(1)
    want = _dpbssd(_tile(mem["c"], 4, 16), _tile(mem["a"], 4, 16), _tile(mem["b"], 4, 16))
    eager = {k: v.copy() for k, v in mem.items()}
    mod.run("acc", 4, n, memory=mem)
    mod.run_eager("acc", 4, n, memory=eager)
    assert np.array_equal(_tile(mem["c"], 4, 16), want)
    assert all(np.array_equal(mem[k], eager[k]) for k in mem)


def test_acc_rows_mismatch_faults_both_ways(mod):
    """C defined with 8 rows, A with 4: #UD (TDPBSSD: dst rows != src1 rows) eagerly and compiled."""
    with pytest.raises(InvalidOpcode):
        mod.run_eager("acc", 8, 16, memory=_memory(2))
    with pytest.raises(InvalidOpcode):
        mod.run("acc", 8, 16, memory=_memory(2))


def test_loop_fresh_zero_accumulator(mod):
    mem = _memory(3)
    a, b = _tile(mem["a"], 4, 16), _tile(mem["b"], 4, 16)
    want = _dpbssd(np.zeros((4, 16), np.uint8), a, b)
    eager = {k: v.copy() for k, v in mem.items()}
    mod.run("loop", 3, 16, memory=mem)
    mod.run_eager("loop", 3, 16, memory=eager)
    for i in range(3):
        assert np.array_equal(_tile(mem["c"], 4, 16, 1024 * i), want)
    assert all(np.array_equal(mem[k], eager[k]) for k in mem)


@pytest.mark.parametrize("c", [0, 1])
def test_constant_vector_cast_is_a_tilezero(c):
    mod = compile_ir((DATA / "cast_constants.ll").read_text(), source="cast_constants.ll")
    f = mod.machine.function("zero_acc")
    assert sum(i.opcode == "TILEZERO" for i in f.instructions()) == 2  # the cast, and undef into the phi
    rng = np.random.default_rng(c)
    init = rng.integers(0, 256, 2048, dtype=np.uint8)
    got, eager = init.copy(), init.copy()
    mod.run("zero_acc", c, memory={"buf": got})
    mod.run_eager("zero_acc", c, memory={"buf": eager})
    assert np.array_equal(got, eager)
    a, b = _tile(init, 16, 64), _tile(init, 16, 64, 1024)
    want = _dpbssd(np.zeros((16, 64), np.uint8), a, b) if c else np.zeros((16, 64), np.uint8)
    assert np.array_equal(_tile(got, 16, 64), want)


def test_copies_of_a_zero_tile_are_tilezeros():
    mod = compile_ir((DATA / "cast_constants.ll").read_text(), source="cast_constants.ll")
    f = mod.machine.function("zero_all")
    ops = [i.opcode for i in f.instructions()]
    assert "TILESTORED" in ops and not any(i.attrs.get("copy") for i in f.instructions())
    assert ops.count("TILEZERO") == 3 and mod.info["zero_all"]["copies_as_tilezero"] == 2
    init = np.random.default_rng(5).integers(0, 256, 2048, dtype=np.uint8)
    got, eager = init.copy(), init.copy()
    mod.run("zero_all", memory={"buf": got})
    mod.run_eager("zero_all", memory={"buf": eager})
    assert np.array_equal(got, eager) and not got[:64].any()
