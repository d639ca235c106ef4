"""Lowering the shaped tile intrinsics to pseudo tile instructions that carry their shape operands.

Seed section 7 (specs/amx-llvm-programming-model.md): "the AMX intrinsics are lowered to the pseudo AMX
instruction which has extra row and column operands". The names follow LLVM's X86 pseudos (PTILELOADDV,
PTDPBSSDV, ...). Operand order is the intrinsic's:

    %t = PTILELOADDV   rows, cols, base, stride          (also PTILELOADDT1V)
         PTILESTOREDV  rows, cols, base, stride, %t
    %t = PTILEZEROV    rows, cols
    %d = PTDPBSSDV     m, n, k, %c, %a, %b               (every TMUL of amx_table.MODELLED_DOTS alike)

The result of a TMUL pseudo (PTDP*V, PTCMM*V) is tied to its C operand (TMUL accumulates in place); regalloc makes them one register.
"""

from __future__ import annotations

from .amx_table import MODELLED_DOTS, MODELLED_LOADS
from .ir import Function, Module
from .shapes import classify

__all__ = ["lower", "dce", "PSEUDO", "pseudo_name", "is_pseudo", "TILE_DEF_OPS", "DOT_PSEUDOS", "is_dot_pseudo"]


def pseudo_name(mnemonic: str) -> str:
    return f"P{mnemonic.upper()}V"


PSEUDO = {pseudo_name(m): m for m in (*MODELLED_LOADS, "tilestored", "tilezero", *MODELLED_DOTS)}
#: the TMUL pseudos (TDP*, and AMX-COMPLEX's TCMM*): result tied to the C operand
DOT_PSEUDOS = frozenset(pseudo_name(m) for m in MODELLED_DOTS)


def is_dot_pseudo(opcode: str) -> bool:
    return opcode in DOT_PSEUDOS
#: pseudos that define a tile value
TILE_DEF_OPS = {k for k, v in PSEUDO.items() if v != "tilestored"}


def is_pseudo(opcode: str) -> bool:
    return opcode in PSEUDO


def lower(module: Module, f: Function) -> None:
    """Replace each shaped tile intrinsic call in ``f`` (after shapes.propagate) by its pseudo instruction."""
    for ins in f.instructions():
        op = classify(ins)
        if op is None:
            continue
        ins.opcode = pseudo_name(op.mnemonic)
        ins.attrs = {"loc": ins.attrs.get("loc"), "mnemonic": op.mnemonic}


def dce(f: Function) -> int:
    """Remove tile phis nobody uses, repeatedly; returns how many.

    Only phis go: the shaped tile intrinsics are declared without memory attributes (IntrinsicsX86.td), so
    LLVM keeps an unused ``tilezero``/``tileloadd`` (llc of LLVM 22 still emits ``tilezero %tmm0`` for a
    tile nobody reads, between its ldtilecfg and tilerelease). Keeping them also keeps their faults: a dead
    ``tileloadd`` through a bad pointer faults in the eager run and must fault in the compiled one. The
    register allocator gives a dead definition a register for one instruction.
    """
    removed = 0
    while True:
        used = {id(o) for i in f.instructions() for o in i.operands}
        dead = [i for i in f.instructions()
                if i.opcode == "phi" and str(i.type) == "x86_amx" and id(i) not in used]
        if not dead:
            return removed
        for i in dead:
            i.block.instrs.remove(i)
        removed += len(dead)
