"""Control-flow analyses the passes share: reverse post-order, dominators, instruction dominance, SSA check.

Dominators use the iterative algorithm of Cooper, Harvey and Kennedy ("A Simple, Fast Dominance Algorithm",
2001) over reverse post-order; the functions are small, so clarity wins over speed.
"""

from __future__ import annotations

from ..errors import CompileError
from .ir import Argument, Block, ConstGEP, Function, Instr, location

__all__ = ["rpo", "dominators", "Dominance", "verify_ssa", "reachable"]


def rpo(f: Function) -> list[Block]:
    """Blocks reachable from the entry in reverse post-order."""
    seen, order = set(), []
    stack = [(f.entry, iter(f.entry.successors))]
    seen.add(f.entry)
    while stack:
        b, it = stack[-1]
        for s in it:
            if s not in seen:
                seen.add(s)
                stack.append((s, iter(s.successors)))
                break
        else:
            stack.pop()
            order.append(b)
    return order[::-1]


def dominators(f: Function) -> dict[Block, Block]:
    """Immediate dominator of every reachable block (the entry maps to itself)."""
    order = rpo(f)
    index = {b: k for k, b in enumerate(order)}
    preds = f.predecessors()
    idom: dict[Block, Block] = {order[0]: order[0]}

    def intersect(a: Block, b: Block) -> Block:
        while a is not b:
            while index[a] > index[b]:
                a = idom[a]
            while index[b] > index[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for b in order[1:]:
            ps = [p for p in preds[b] if p in idom]
            new = ps[0]
            for p in ps[1:]:
                new = intersect(p, new)
            if idom.get(b) is not new:
                idom[b] = new
                changed = True
    return idom


class Dominance:
    """Block and instruction dominance queries for one function (recompute after changing the CFG)."""

    def __init__(self, f: Function) -> None:
        self.f = f
        self.idom = dominators(f)

    def block_dominates(self, a: Block, b: Block) -> bool:
        if b not in self.idom:  # unreachable blocks are dominated by everything
            return True
        while True:
            if a is b:
                return True
            p = self.idom[b]
            if p is b:
                return False
            b = p

    def dominates(self, a: Instr, b: Instr) -> bool:
        """Whether instruction ``a`` dominates instruction ``b`` (a == b counts as dominating)."""
        if a.block is b.block:
            ins = a.block.instrs
            return ins.index(a) <= ins.index(b)
        return self.block_dominates(a.block, b.block)

    def value_available(self, v, at: Instr) -> bool:
        """Whether value ``v`` is defined at (before) instruction ``at``."""
        if isinstance(v, Instr):
            return v is not at and self.dominates(v, at)
        if isinstance(v, ConstGEP):
            return all(self.value_available(x, at) for x in [v.base, *v.indices])
        return True  # constants, globals, arguments


def reachable(f: Function, start: Block) -> set[Block]:
    seen, work = {start}, [start]
    while work:
        for s in work.pop().successors:
            if s not in seen:
                seen.add(s)
                work.append(s)
    return seen


def verify_ssa(f: Function) -> None:
    """Every use is dominated by its definition (phi uses: at the end of the incoming block)."""
    dom = Dominance(f)
    own = {id(i) for i in f.instructions()} | {id(p) for p in f.params}
    for ins in f.instructions():
        for k, v in enumerate(ins.operands):
            if isinstance(v, Argument) and id(v) not in own:
                raise CompileError("use of an argument of another function", location=location(ins))
            if not isinstance(v, Instr):
                continue
            if id(v) not in own:
                raise CompileError(f"%{v.name} is not defined in this function", location=location(ins))
            if ins.opcode == "phi":
                pred = ins.attrs["blocks"][k]
                ok = v.block is pred or dom.block_dominates(v.block, pred)
            else:
                ok = v is not ins and dom.dominates(v, ins)
            if not ok:
                raise CompileError(f"%{v.name} does not dominate this use", location=location(ins),
                                   rule="SSA: a definition dominates its uses",
                                   values={"value": v.name})
