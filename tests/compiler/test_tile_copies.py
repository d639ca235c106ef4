"""Tile copies the allocator must make (regalloc.py): a TMUL whose operands alias (the intrinsics take any tiles;
TDPBSSD is #UD when srcdest, src1 and src2 are not three distinct tiles, SDM) and a loop whose starting tile is
still used after it. When the first copy through the stack slot sits in the entry block, the slot's alloca must
still be declared and the copy emitted once. Oracles: exact integer arithmetic and eager execution."""

import importlib.util

import numpy as np
import pytest

from systolic.amx import intrinsics as I
from systolic.compiler import compile_ir, compile_module
from systolic.compiler.tracing import run_eager, trace

from .helpers import rand_bytes

ROWS, COLSB = 4, 16  # every tile 4 rows x 16 bytes: as C 4x4 int32, as A K=16 bytes, as B K/4=4 rows


def _tile(mem: np.ndarray, off: int) -> np.ndarray:
    """rows x colsb bytes at stride 64 from mem[off:]."""
    return np.stack([mem[off + 64 * r: off + 64 * r + COLSB] for r in range(ROWS)])


def _dpbssd_exact(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C (int32 dwords) + A (s8) . B (s8) in Python ints, wrapped to int32 (SDM TDPBSSD pseudo-code)."""
    cw = c.copy().view(np.int32)
    sa, sb = a.astype(np.int8), b.astype(np.int8)
    out = np.zeros((ROWS, COLSB), np.uint8)
    ow = out.view(np.int32)
    for m in range(ROWS):
        for n in range(COLSB // 4):
            acc = int(cw[m, n])
            for k in range(COLSB // 4):
                for q in range(4):
                    acc += int(sa[m, 4 * k + q]) * int(sb[k, 4 * n + q])
            acc &= 0xFFFFFFFF
            ow[m, n] = acc - (1 << 32) if acc >> 31 else acc
    return out


# A holds the source tiles at offsets 0 (x) and 256 (y); C gets the result at 0
def k_bb(A, C):  # the audit's repro: C never written (zeros), B is A
    c, b = I.Tile(ROWS, COLSB), I.Tile(ROWS, COLSB)
    I.tile_loadd(b, A, 64)
    I.tile_dpbssd(c, b, b)
    I.tile_stored(C, 64, c)


def k_cc(A, C):  # srcdest is src1
    c, b = I.Tile(ROWS, COLSB), I.Tile(ROWS, COLSB)
    I.tile_loadd(c, A + 256, 64)
    I.tile_loadd(b, A, 64)
    I.tile_dpbssd(c, c, b)
    I.tile_stored(C, 64, c)


def k_ac(A, C):  # srcdest is src2
    c, a = I.Tile(ROWS, COLSB), I.Tile(ROWS, COLSB)
    I.tile_loadd(a, A, 64)
    I.tile_loadd(c, A + 256, 64)
    I.tile_dpbssd(c, a, c)
    I.tile_stored(C, 64, c)


def _exact(name: str, A: np.ndarray) -> np.ndarray:
    x, y = _tile(A, 0), _tile(A, 256)
    zero = np.zeros((ROWS, COLSB), np.uint8)
    return {"k_bb": lambda: _dpbssd_exact(zero, x, x), "k_cc": lambda: _dpbssd_exact(y, y, x),
            "k_ac": lambda: _dpbssd_exact(y, x, y)}[name]()


def _llvm_accepts(mod) -> None:
    """LLVM parses and verifies the physical-register IR and compiles it to assembly (where llvmlite is)."""
    if importlib.util.find_spec("llvmlite") is None:
        return
    import llvmlite.binding as llvm
    llvm.parse_assembly(mod.emit("llvm")).verify()
    assert "tdpbssd" in mod.emit("asm")


def _one_copy_through_a_declared_slot(mod) -> None:
    """The copy is one TILESTORED + TILELOADD pair through a slot the function declares (allocas first)."""
    lines = [x.strip() for x in mod.emit("machine").splitlines()]
    uses = [x for x in lines if "%tilecopy" in x]
    assert len(uses) == 3 and "alloca [1024 x i8]" in uses[0], uses
    assert uses[1].startswith("TILESTORED") and uses[2].startswith("TILELOADD")
    assert lines.index(uses[0]) < lines.index(uses[1])


@pytest.mark.parametrize("kernel", [k_bb, k_cc, k_ac], ids=lambda k: k.__name__)
def test_aliased_tmul_operands_run_equal_to_exact_and_eager(kernel):
    mod = compile_module(trace(kernel, buffers={"A": 1024, "C": 1024}))
    _one_copy_through_a_declared_slot(mod)
    A = rand_bytes(np.random.default_rng(5), 1024)
    C1, C2 = np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)
    mod.run(kernel.__name__, memory={"A": A.copy(), "C": C1})
    run_eager(kernel, buffers={"A": A.copy(), "C": C2})
    assert np.array_equal(_tile(C1, 0), _exact(kernel.__name__, A))
    assert np.array_equal(C1, C2)
    _llvm_accepts(mod)


# the loop's starting tile %c0 is still stored after the loop, so the phi's copy into %c cannot be coalesced
# with it: the copy goes through the slot, in the entry block
LOOP_CARRIED = """
@A = global [4096 x i8] zeroinitializer, align 64
@C = global [4096 x i8] zeroinitializer, align 64

define void @f(i32 %n) {
entry:
  %c0 = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr @C, i64 64)
  %pb = getelementptr inbounds i8, ptr @A, i64 1024
  br label %header
header:
  %i = phi i32 [ 0, %entry ], [ %i1, %body2 ]
  %c = phi x86_amx [ %c0, %entry ], [ %c1, %body2 ]
  %cond = icmp slt i32 %i, %n
  br i1 %cond, label %body, label %exit
body:
  %a = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr @A, i64 64)
  %b = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr %pb, i64 64)
  %c1 = call x86_amx @llvm.x86.tdpbssd.internal(i16 4, i16 16, i16 16, x86_amx %c, x86_amx %a, x86_amx %b)
  %i1 = add i32 %i, 1
  br label %body2
body2:
  br label %header
exit:
  %q = getelementptr inbounds i8, ptr @C, i64 1024
  call void @llvm.x86.tilestored64.internal(i16 4, i16 16, ptr %q, i64 64, x86_amx %c)
  call void @llvm.x86.tilestored64.internal(i16 4, i16 16, ptr @C, i64 64, x86_amx %c0)
  ret void
}
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
"""


@pytest.mark.parametrize("n", [0, 1, 3])
def test_loop_start_tile_used_after_the_loop(n):
    mod = compile_ir(LOOP_CARRIED)
    _one_copy_through_a_declared_slot(mod)
    rng = np.random.default_rng(n)
    A, C = rand_bytes(rng, 4096), rand_bytes(rng, 4096)
    C1, C2 = C.copy(), C.copy()
    mod.run("f", n, memory={"A": A.copy(), "C": C1})
    mod.run_eager("f", n, memory={"A": A.copy(), "C": C2})
    c0 = _tile(C, 0)
    acc = c0
    for _ in range(n):
        acc = _dpbssd_exact(acc, _tile(A, 0), _tile(A, 1024))
    assert np.array_equal(_tile(C1, 1024), acc) and np.array_equal(_tile(C1, 0), c0)
    assert np.array_equal(C1, C2)
    _llvm_accepts(mod)
