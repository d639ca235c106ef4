"""A SIMT interpreter of spir64 LLVM IR (issue 21 item 3): every work-item of a batch of work-groups runs in
lockstep, vectorised with numpy over lanes (:mod:`systolic.cl.lanes`).

**Decoding.** Each function is decoded once (:class:`Decoded`) into blocks of Python closures over register
slots, so running it never walks llvmlite objects again.

**Divergence and reconvergence.** Each lane has a program counter (a block number). The blocks are numbered in
a topological order of the control-flow graph without its back edges in which every loop's blocks are
contiguous and come before the loop's exits. Each step runs the lowest-numbered block any lane is at, with the
mask of the lanes there ("min-PC" scheduling, as in Collange's thread-frontier reconvergence): lanes that left an
``if`` early wait at its join block, lanes that left a loop wait at its exit, so a sub-group reaches a collective
(built-in, block read, barrier) together exactly when every work-item of it reaches it. A value written under a
partial mask is merged into the register (other lanes keep theirs); loads, stores and built-ins act only for the
lanes of the mask.

**Semantics** follow the LangRef for the instructions clang emits for OpenCL C: integer arithmetic wraps, ``lshr``
/``udiv``/``icmp u*`` view the bits as unsigned, shifts by the bit width or more (poison in LLVM) shift by the
amount modulo the width, ``sdiv``/``srem`` round toward zero, float arithmetic is IEEE binary16/32/64 with
round-to-nearest-even (``fma``/``fmuladd`` are fused: one rounding), ``fptosi`` of NaN or out-of-range values
(poison) gives numpy's value; the constants ``poison`` and ``undef`` read as 0. Integer division by zero
(immediate undefined behaviour) raises :class:`~systolic.errors.InvalidValue` naming the instruction and the
work-item.
"""

from __future__ import annotations

import numpy as np

from ..errors import DivergentCollective, InvalidValue, UnsupportedOperation
from . import irtypes as IT
from . import ops as OPS
from .names import Where, const_from_text, demangle  # noqa: F401  (re-exported)

__all__ = ["Decoded", "Executor", "Where", "demangle"]


# ---- the decoded program ------------------------------------------------------------------------------------------

class DBlock:
    __slots__ = ("name", "index", "phis", "ops", "term", "nops")

    def __init__(self, name, index):
        self.name, self.index, self.phis, self.ops, self.term, self.nops = name, index, [], [], None, 0


class DFunc:
    __slots__ = ("name", "blocks", "nslots", "arg_slots", "ret", "allocas", "params")

    def __init__(self, name):
        self.name, self.blocks, self.nslots, self.arg_slots, self.ret, self.allocas = name, [], 0, [], None, []
        self.params = []


def _schedule(blocks, succ):
    """Block order: topological over forward edges, each loop's blocks contiguous, before its exits."""
    idx = {b: i for i, b in enumerate(blocks)}
    n = len(blocks)
    # back edges by DFS
    color = [0] * n
    back = set()
    stack = [(0, iter(succ[0]))]
    color[0] = 1
    while stack:
        u, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            color[u] = 2
            stack.pop()
            continue
        v = idx[nxt]
        if color[v] == 1:
            back.add((u, v))
        elif color[v] == 0:
            color[v] = 1
            stack.append((v, iter(succ[v])))
    preds = [[] for _ in range(n)]
    for u in range(n):
        for s in succ[u]:
            preds[idx[s]].append(u)
    loops = {}                                  # header -> members
    for t, h in back:
        members = loops.setdefault(h, {h})
        work = [t]
        while work:
            x = work.pop()
            if x in members:
                continue
            members.add(x)
            work.extend(preds[x])
    indeg = [0] * n
    for u in range(n):
        if color[u] == 0:
            continue
        for s in succ[u]:
            v = idx[s]
            if (u, v) not in back:
                indeg[v] += 1
    ready = [0]
    order = []
    open_loops: list[int] = []
    placed = set()
    while ready:
        pick = None
        for h in reversed(open_loops):
            inside = [r for r in ready if r in loops[h]]
            if inside:
                pick = min(inside)
                break
        if pick is None:
            pick = min(ready)
        ready.remove(pick)
        order.append(pick)
        placed.add(pick)
        if pick in loops:
            open_loops.append(pick)
        open_loops = [h for h in open_loops if not loops[h] <= placed]
        for s in succ[pick]:
            v = idx[s]
            if (pick, v) in back:
                continue
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    return order


class Decoded:
    """A module decoded for execution: its functions by name (decoded on first use) and its globals."""

    def __init__(self, module, kernel_names=()) -> None:
        self.module = module
        self.funcs: dict[str, DFunc] = {}
        self.fn_refs = {f.name: f for f in module.functions}
        self.globals = {g.name: g for g in module.global_variables}
        self.named = IT.named_types(str(module)) if any(True for _ in module.struct_types) else {}
        self.instructions = 0

    def function(self, name: str) -> DFunc:
        f = self.funcs.get(name)
        if f is None:
            f = self.funcs[name] = _decode_function(self, self.fn_refs[name])
        return f


def _decode_function(dec: Decoded, fref) -> DFunc:
    df = DFunc(fref.name)
    slots: dict = {}

    def slot_of(v):
        s = slots.get(v)
        if s is None:
            s = slots[v] = len(slots)
        return s

    for a in fref.arguments:
        df.arg_slots.append(slot_of(a))
        df.params.append(str(a.type))
    blocks = list(fref.blocks)
    bnames = {b.name: i for i, b in enumerate(blocks)}
    succ = []
    terms = []
    for b in blocks:
        ins = list(b.instructions)
        t = ins[-1]
        terms.append(t)
        targets = [o for o in t.operands if o.value_kind.name == "basic_block"]
        succ.append(targets)
    blocks_by_ref = {b: i for i, b in enumerate(blocks)}
    succ_idx = [[bnames[s.name] if s.name else _block_index(blocks, s) for s in ss] for ss in succ]
    succ_refs = [[blocks[i] for i in ss] for ss in succ_idx]
    order = _schedule(blocks, succ_refs)
    pos = {orig: k for k, orig in enumerate(order)}
    for k, orig in enumerate(order):
        b = blocks[orig]
        db = DBlock(b.name or f"bb{orig}", k)
        ctx = OPS.DecodeCtx(dec, df, slot_of, pos, blocks_by_ref, blocks)
        for ins in b.instructions:
            OPS.decode_instruction(ctx, db, ins)
        df.blocks.append(db)
    df.nslots = len(slots)
    rt = str(fref.type)
    df.ret = rt
    return df


def _block_index(blocks, ref):
    for i, b in enumerate(blocks):
        if b == ref:
            return i
    raise UnsupportedOperation("a branch to a block outside its function", rule="LangRef: br")


# ---- execution ------------------------------------------------------------------------------------------------

class Frame:
    __slots__ = ("ex", "regs", "mask", "full", "fn", "entry")

    def __init__(self, ex, fn, nslots):
        self.ex, self.fn, self.regs = ex, fn, [None] * nslots
        self.mask = None
        self.full = True
        self.entry = None

    def set(self, slot, value):
        if self.full:
            self.regs[slot] = value
            return
        old = self.regs[slot]
        if old is None:
            self.regs[slot] = value
            return
        m = self.mask
        v = np.asarray(value)
        o = np.asarray(old)
        if max(v.ndim, o.ndim) == 2:
            m = m[:, None]
        self.regs[slot] = np.where(m, v, o)


class Executor:
    """Runs decoded functions over the lanes of a batch (built-ins: :mod:`systolic.cl.library`)."""

    def __init__(self, dec: Decoded, launch) -> None:
        self.dec = dec
        self.launch = launch            # systolic.cl.launch.Batch: lanes, memory, platform, kernel name
        self.lanes = launch.lanes
        self.N = self.lanes.n
        self.executed = 0               # IR instructions x active sub-groups
        self.all_sub_groups = self.lanes.valid.reshape(-1, self.lanes.S).any(axis=1)
        self.depth = 0

    def call(self, fn: DFunc, args: list, mask: np.ndarray):
        if self.depth > 64:
            raise UnsupportedOperation("call depth above 64 (OpenCL C has no recursion)",
                                       rule="OpenCL C 6.9: recursion is not supported", values={"function": fn.name})
        self.depth += 1
        try:
            return self._run(fn, args, mask)
        finally:
            self.depth -= 1

    def _run(self, fn: DFunc, args, mask):
        N = self.N
        fr = Frame(self, fn, fn.nslots)
        for s, a in zip(fn.arg_slots, args):
            fr.regs[s] = a
        pc = np.where(mask, 0, -1).astype(np.int32)
        prev = np.full(N, -1, np.int32)
        entry_count = int(np.count_nonzero(mask))
        fr.entry = mask
        ret = None
        S = self.lanes.S
        blocks = fn.blocks
        while True:
            live = pc[pc >= 0]
            if not live.size:
                break
            b = int(live.min())
            bm = pc == b
            cnt = int(np.count_nonzero(bm))
            full = cnt == entry_count
            blk = blocks[b]
            if full and mask is self.launch.all_mask:
                bm = mask                   # the same lanes: the identity lets collectives skip their checks
            fr.mask = bm
            fr.full = full
            nsg = int(np.count_nonzero(bm.reshape(-1, S).any(axis=1))) if not (full and mask is self.launch.all_mask) \
                else self.lanes.G
            self.executed += (blk.nops + 1) * nsg
            if blk.phis:
                vals = []
                for slot, incoming in blk.phis:
                    vals.append(self._phi(incoming, prev, bm, fr))
                for (slot, _), v in zip(blk.phis, vals):
                    fr.set(slot, v)
            for op in blk.ops:
                op(fr)
            kind, data = blk.term
            if kind == "br":
                pc[bm] = data
            elif kind == "condbr":
                cond_get, t, f = data
                c = cond_get(fr)
                if np.ndim(c) == 0:
                    pc[bm] = t if c else f
                else:
                    pc[bm] = np.where(c[bm], t, f)
            elif kind == "ret":
                pc[bm] = -1
                if data is not None:
                    v = data(fr)
                    if ret is None or full:
                        ret = v
                    else:
                        vv, oo = np.asarray(v), np.asarray(ret)
                        m = bm[:, None] if max(vv.ndim, oo.ndim) == 2 else bm
                        ret = np.where(m, vv, oo)
                prev[bm] = b
                continue
            elif kind == "switch":
                get, default, cases = data
                v = np.broadcast_to(get(fr), (N,))[bm]
                tgt = np.full(v.shape, default, np.int32)
                for cv, t in cases:
                    tgt[v == cv] = t
                pc[bm] = tgt
            elif kind == "unreachable":
                lane = int(np.flatnonzero(bm)[0])
                raise InvalidValue(f"kernel {self.launch.kernel} reached 'unreachable' in {fn.name}",
                                   rule="LangRef: executing unreachable is undefined behaviour",
                                   values=self.lanes.describe(lane))
            prev[bm] = b
        return ret

    def _phi(self, incoming, prev, bm, fr):
        pv = prev[bm]
        first = pv[0]
        if (pv == first).all():
            for pb, get in incoming:
                if pb == first:
                    return get(fr)
        out = None
        for pb, get in incoming:
            sel = prev == pb
            if not sel.any():
                continue
            v = np.asarray(get(fr))
            if out is None:
                out = np.array(np.broadcast_to(v, (self.N,) + v.shape[v.ndim - 1:] if v.ndim == 2 or (
                    v.ndim == 1 and v.shape[0] != self.N) else (self.N,)))
            m = sel[:, None] if out.ndim == 2 else sel
            out = np.where(m, v, out)
        return out

    # ---- collectives -------------------------------------------------------------------------------------------
    def require_converged(self, mask, what: str, where) -> np.ndarray:
        """The sub-groups with every lane active (per sub-group: all valid lanes or none); else
        DivergentCollective naming the sub-group and its inactive work-items."""
        L = self.lanes
        S = L.S
        if mask is self.launch.all_mask:
            return self.all_sub_groups
        m = mask.reshape(-1, S)
        v = L.valid.reshape(-1, S)
        act = (m & v).sum(axis=1)
        tot = v.sum(axis=1)
        bad = (act > 0) & (act < tot)
        if bad.any():
            g = int(np.flatnonzero(bad)[0])
            lanes = np.flatnonzero(v[g] & ~m[g])
            lane0 = g * S
            raise DivergentCollective(
                f"{what} reached by part of a sub-group in kernel {where.kernel}",
                rule="cl_khr_subgroups / cl_intel_subgroups: a sub-group function must be encountered by all "
                     "work-items of the sub-group",
                values={"instruction": where.text, **L.describe(lane0),
                        "inactive_sub_group_local_ids": [int(x) for x in lanes]})
        return act > 0
