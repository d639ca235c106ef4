"""Tile register allocation: 8 physical tiles, one shape each per configuration, spills through memory.

Seed section 8 (specs/amx-llvm-programming-model.md) and REFERENCE.md section 7:

* a physical tile has one (rows, colsb) for the whole configuration, so a virtual tile may only take a
  physical tile of its own shape. Tiles are grouped by shape (same SSA value or equal constant for rows and for
  colsb); each shape class gets a pool of physical tiles: at least what one instruction needs at once (a TMUL
  reads three tiles), the rest by register pressure. More shape classes than tiles is a CompileError;
* the registers of each class are assigned by linear scan (Poletto and Sarkar, 1999) over live intervals
  computed from block liveness; when a class runs out, the interval that ends last is spilled everywhere:
  ``TILESTORED`` to a 1024-byte stack slot after each definition and a same-shape ``TILELOADD`` at stride 64
  before each use (LLVM's -O0 spill code);
* tiles live across a call or an ldtilecfg are spilled too (tile state is caller-saved and LDTILECFG zeroes
  all tiles);
* tile phis are eliminated into copies at the end of the predecessors (critical edges split first); a TMUL's
  result is tied to its C operand through a copy. Copies between the same physical tile vanish (coalescing by
  allocation hint); others go through a stack slot (TILESTORED + TILELOADD stride 64, LLVM's X86LowerTileCopy);
* finally the rows/colsb of each used physical tile are stored into the 64-byte config slot right before the
  main ldtilecfg, and the pseudos become real instructions naming tmm0-7.
"""

from __future__ import annotations

from ..errors import CompileError
from .cfg import rpo
from .ir import (I8, I16, I64, PTR, VOID, X86_AMX, ArrayType, ConstantInt, Function, Instr, Module, Value)
from .lower import PSEUDO, TILE_DEF_OPS, is_dot_pseudo
from .amx_table import MODELLED_LOADS
from .shapes import Shape

__all__ = ["allocate", "assign_registers", "apply", "VReg", "NUM_TILES", "RULE"]

NUM_TILES = 8
RULE = "LLVM X86TileConfig / the AMX proposal, section 8: one shape per physical tile per configuration"
_MAX_ROUNDS = 50
_MAX_SPLITS = 300  # splits of the 8 tiles among shape classes tried under pressure


class VReg(Value):
    """A virtual tile created by the allocator (phi-copy temporaries, spill temporaries)."""

    def __init__(self, name: str) -> None:
        self.name, self.type = name, X86_AMX


def _is_dot(ins: Instr) -> bool:
    return is_dot_pseudo(ins.opcode)


def tile_def(ins: Instr):
    """The virtual tile an instruction writes (None if none)."""
    if ins.opcode == "TILECOPY" or _is_dot(ins):
        return ins.attrs.get("def", ins)
    if ins.opcode in TILE_DEF_OPS:
        return ins.attrs.get("def", ins)
    return None


def tile_uses(ins: Instr) -> list:
    if ins.opcode == "TILECOPY":
        return [ins.operands[0]]
    if ins.opcode == "PTILESTOREDV":
        return [ins.operands[4]]
    if _is_dot(ins):
        return list(ins.operands[3:6])
    return []


def _is_clobber(ins: Instr) -> bool:
    if ins.opcode == "PLDTILECFGV":
        return True
    return ins.opcode == "call" and ins.intrinsic is not None and not ins.intrinsic.startswith("llvm.")


class _Allocator:
    def __init__(self, module: Module, f: Function) -> None:
        self.m, self.f = module, f
        self.shapes: dict[int, Shape] = f.meta["shapes"]
        self.unspillable: set[int] = set()
        self.slots: list[Instr] = []
        self.copy_slot: Instr | None = None
        self.stats = {"spilled": [], "copies": 0, "copies_eliminated": 0, "rounds": 0}

    # ------------------------------------------------------------------ helpers
    def new_slot(self, prefix: str, insert: bool = True) -> Instr:
        """A 1024-byte stack slot; its alloca goes first in the entry block unless the caller is still walking
        that block (then it inserts the slot itself once done)."""
        slot = Instr("alloca", PTR, [], name=self.f.fresh(prefix), alloc_type=ArrayType(1024, I8), align=64)
        if insert:
            self.f.entry.insert(0, slot)
        return slot

    def shape(self, v) -> Shape:
        return self.shapes[id(v)]

    def vreg(self, like, prefix: str) -> VReg:
        v = VReg(self.f.fresh(prefix))
        self.shapes[id(v)] = self.shape(like)
        return v

    # ------------------------------------------------------------------ phi elimination and ties
    def split_critical_edges(self) -> None:
        f = self.f
        preds = f.predecessors()
        for b in list(f.blocks):
            if not any(p.type == X86_AMX for p in b.phis()) or len(preds[b]) < 2:
                continue
            for p in list(preds[b]):
                if len(p.successors) < 2:
                    continue
                n = f.add_block(f.fresh(f"{p.name}.{b.name}.split"))
                n.append(Instr("br", VOID, [], blocks=[b]))
                t = p.terminator
                t.attrs["blocks"] = [n if x is b else x for x in t.attrs["blocks"]]
                for phi in b.phis():
                    phi.attrs["blocks"] = [n if x is p else x for x in phi.attrs["blocks"]]

    def eliminate_phis(self) -> None:
        f = self.f
        for b in f.blocks:
            phis = [p for p in b.phis() if p.type == X86_AMX]
            if not phis:
                continue
            phi_ids = {id(p) for p in phis}
            preds = {id(x): x for p in phis for x in p.attrs["blocks"]}
            for pred in preds.values():
                pairs = []
                for p in phis:
                    k = next(i for i, x in enumerate(p.attrs["blocks"]) if x is pred)
                    pairs.append((p, p.operands[k]))
                at = len(pred.instrs) - 1
                if any(id(src) in phi_ids for _, src in pairs):  # a parallel copy: go through temporaries
                    temps = []
                    for p, src in pairs:
                        t = self.vreg(p, "phi.tmp")
                        pred.insert(at, Instr("TILECOPY", X86_AMX, [src], **{"def": t}))
                        at += 1
                        temps.append((p, t))
                    pairs = temps
                for p, src in pairs:
                    pred.insert(at, Instr("TILECOPY", X86_AMX, [src], **{"def": p}))
                    at += 1
            for p in phis:
                b.instrs.remove(p)
                p.opcode = "phi-var"  # the phi is now a variable written by the copies

    def tie_dots(self) -> None:
        """TMUL writes its C operand in place: copy C into the result first (coalesced when C dies there);
        A and B must be different tiles, so a B that is A gets its own copy."""
        for b in self.f.blocks:
            for ins in list(b.instrs):
                if not _is_dot(ins) or ins.attrs.get("tied"):
                    continue
                c = ins.operands[3]
                idx = b.instrs.index(ins)
                b.insert(idx, Instr("TILECOPY", X86_AMX, [c], **{"def": ins}, tie=True))
                ins.operands[3] = ins
                ins.attrs["tied"] = True
                if ins.operands[5] is ins.operands[4]:
                    b2 = self.vreg(ins.operands[5], "b.copy")
                    b.insert(idx + 1, Instr("TILECOPY", X86_AMX, [ins.operands[5]], **{"def": b2}))
                    ins.operands[5] = b2

    # ------------------------------------------------------------------ liveness
    def liveness(self):
        f = self.f
        order = rpo(f)
        order += [b for b in f.blocks if b not in order]
        use, defs = {}, {}
        for b in order:
            u, d = set(), set()
            for ins in b.instrs:
                for v in tile_uses(ins):
                    if id(v) not in d:
                        u.add(id(v))
                t = tile_def(ins)
                if t is not None and not _is_dot(ins):
                    d.add(id(t))
            use[b], defs[b] = u, d
        live_in = {b: set() for b in order}
        live_out = {b: set() for b in order}
        changed = True
        while changed:
            changed = False
            for b in reversed(order):
                out = set()
                for s in b.successors:
                    out |= live_in[s]
                inn = use[b] | (out - defs[b])
                if out != live_out[b] or inn != live_in[b]:
                    live_out[b], live_in[b] = out, inn
                    changed = True
        return order, live_in, live_out

    def intervals(self):
        """Live ranges of every tile variable as sorted [start, end) segments over a linear numbering of the
        blocks (Wimmer and Franz's backward construction), and the variables live across a clobber."""
        order, live_in, live_out = self.liveness()
        vars_: dict[int, object] = {}
        for ins in self.f.instructions():
            for v in tile_uses(ins):
                vars_[id(v)] = v
            t = tile_def(ins)
            if t is not None:
                vars_[id(t)] = t
        segs: dict[int, list[list[int]]] = {vid: [] for vid in vars_}
        crossing: set[int] = set()
        pos = 0
        spans = []
        for b in order:
            start = pos
            pos += 2 + 2 * len(b.instrs)
            spans.append((b, start, pos))
            pos += 2
        for b, start, end in spans:
            open_end: dict[int, int] = {vid: end for vid in live_out[b]}
            p = end - 2
            for ins in reversed(b.instrs):
                t = tile_def(ins)
                if t is not None:
                    vid = id(t)
                    e = open_end.pop(vid, p)  # a dead definition still occupies its register at p
                    segs[vid].append([p, e])
                if _is_clobber(ins):
                    crossing |= set(open_end)
                for v in tile_uses(ins):
                    open_end.setdefault(id(v), p)
                p -= 2
            for vid, e in open_end.items():
                segs[vid].append([start, e])
        iv = {}
        for vid, ss in segs.items():
            ss.sort()
            merged = []
            for s0, e0 in ss:
                if merged and s0 <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], e0)
                else:
                    merged.append([s0, e0])
            iv[vid] = [merged[0][0], merged[-1][1], vars_[vid], merged]
        return iv, crossing

    # ------------------------------------------------------------------ spilling
    def zero_defined(self, v) -> bool:
        """Whether every definition of ``v`` is a tilezero (then it is rematerialised, not spilled)."""
        defs = [i for i in self.f.instructions() if tile_def(i) is v]
        return bool(defs) and all(i.opcode == "PTILEZEROV" and not _is_dot(i) for i in defs)

    def rematerialize(self, v) -> None:
        """A tile made by tilezero is made again right before each use instead of being stored and reloaded
        (LLVM's greedy allocator does the same: amx-lower-tile-copy.ll test2 has a second ``tilezero`` after the
        call, no spill). The shape operands dominate the definition, which dominates every use; tilezero touches
        no memory, so the program's bytes are unchanged; the original tilezero stays where it was."""
        f = self.f
        s = self.shape(v)
        self.stats.setdefault("rematerialized", []).append(v.name)
        for b in f.blocks:
            k = 0
            while k < len(b.instrs):
                ins = b.instrs[k]
                if tile_def(ins) is v:
                    # the original tilezero stays (dead, one instruction long): a tile instruction where the
                    # program has one keeps the configuration load before it, so an invalid shape faults at
                    # the same point as in the eager run
                    k += 1
                    continue
                dot = _is_dot(ins)
                for j, op in enumerate(ins.operands):
                    if op is not v or (dot and j <= 3) or (not dot and ins.opcode not in ("TILECOPY",
                                                                                        "PTILESTOREDV")):
                        continue
                    z = Instr("PTILEZEROV", X86_AMX, [s.rows, s.cols], name=f.fresh(f"remat.{v.name}."),
                              remat=True)
                    self.shapes[id(z)] = s
                    self.unspillable.add(id(z))
                    b.insert(k, z)
                    k += 1
                    ins.operands[j] = z
                k += 1

    def spill(self, v) -> None:
        """Spill everywhere: store after each definition, reload (same shape, stride 64) before each use.
        A tile only tilezero defines is rematerialised instead (:meth:`rematerialize`)."""
        if self.zero_defined(v):
            self.rematerialize(v)
            return
        f = self.f
        s = self.shape(v)
        slot = self.new_slot(f"spill.{v.name}.")
        self.slots.append(slot)
        self.stats["spilled"].append(v.name)
        for b in f.blocks:
            k = 0
            while k < len(b.instrs):
                ins = b.instrs[k]
                dot = _is_dot(ins)
                # uses (a dot's tied C is handled with its definition)
                for j, op in enumerate(ins.operands):
                    if op is not v or j < (3 if dot else 0) or (dot and j == 3):
                        continue
                    if ins.opcode not in ("TILECOPY", "PTILESTOREDV") and not dot:
                        continue
                    r = Instr("PTILELOADDV", X86_AMX, [s.rows, s.cols, slot, ConstantInt(I64, 64)],
                              name=f.fresh(f"reload.{v.name}."), spill=True)
                    self.shapes[id(r)] = s
                    self.unspillable.add(id(r))
                    b.insert(k, r)
                    k += 1
                    ins.operands[j] = r
                if tile_def(ins) is v:
                    t = self.vreg(v, f"spilldef.{v.name}.")
                    self.unspillable.add(id(t))
                    if dot:
                        r = Instr("PTILELOADDV", X86_AMX, [s.rows, s.cols, slot, ConstantInt(I64, 64)],
                                  spill=True, **{"def": t})
                        b.insert(k, r)
                        k += 1
                        ins.operands[3] = t
                    ins.attrs["def"] = t
                    st = Instr("PTILESTOREDV", VOID, [s.rows, s.cols, slot, ConstantInt(I64, 64), t], spill=True)
                    b.insert(k + 1, st)
                    k += 1
                k += 1

    # ------------------------------------------------------------------ classes and pools
    def classes(self, iv) -> tuple[list[Shape], dict[int, int]]:
        reps: list[Shape] = []
        cls: dict[int, int] = {}
        for vid, (_s, _e, v, _g) in iv.items():
            sh = self.shapes.get(vid)
            if sh is None:
                raise CompileError(f"no shape for tile %{v.name}", location=f"@{self.f.name}", rule=RULE)
            for k, r in enumerate(reps):
                if r.same(sh):
                    cls[vid] = k
                    break
            else:
                reps.append(sh)
                cls[vid] = len(reps) - 1
        return reps, cls

    def pools(self, reps, cls, iv) -> list[list[int]]:
        n = len(reps)
        if n == 0:
            return []  # no tile variable at all (nothing to give registers to)
        if n > NUM_TILES:
            raise CompileError(f"{n} different tile shapes in one configuration; 8 tiles hold at most 8 shapes",
                               location=f"@{self.f.name}", rule=RULE,
                               values={"shapes": [str(r) for r in reps]})
        need = [1] * n
        for ins in self.f.instructions():
            if ins.opcode == "TILECOPY":
                continue  # a copy's source can always die into its destination (spill the source if not)
            ids = {id(v) for v in tile_uses(ins)}
            t = tile_def(ins)
            if t is not None:
                ids.add(id(t))
            per = [0] * n
            for vid in ids:
                per[cls[vid]] += 1
            need = [max(a, b) for a, b in zip(need, per)]
        if sum(need) > NUM_TILES:
            raise CompileError(f"the instructions need {sum(need)} tiles of distinct shapes at once; there are 8",
                               location=f"@{self.f.name}", rule=RULE, values={"need": need})
        # pressure: most intervals of a class overlapping one point
        events: list[tuple[int, int, int]] = []
        for vid, (s, e, _v, _g) in iv.items():
            events.append((s, 0, cls[vid]))
            events.append((e, 1, cls[vid]))
        cur, peak = [0] * n, [0] * n
        for _p, kind, c in sorted(events):
            cur[c] += 1 if kind == 0 else -1
            peak[c] = max(peak[c], cur[c])
        count = list(need)
        while sum(count) < NUM_TILES:
            gaps = [peak[c] - count[c] for c in range(n)]
            c = max(range(n), key=lambda c: gaps[c])
            if gaps[c] <= 0:
                break
            count[c] += 1
        best = count
        if sum(min(p, NUM_TILES) for p in peak) > NUM_TILES:
            best = self.best_split(count, need, peak, cls, iv)
        return _pools_of(best)

    def best_split(self, first, need, peak, cls, iv) -> list[int]:
        """Under pressure, the split of the 8 tiles among the shape classes whose linear scan spills the least
        (spill weight: the instructions that define or use the spilled tiles; ties keep the pressure-gap
        split ``first``). A physical tile has one shape per configuration, so the split holds for the whole
        function; every class keeps at least what one instruction needs of it."""
        refs: dict[int, int] = {}
        for ins in self.f.instructions():
            for v in tile_uses(ins):
                refs[id(v)] = refs.get(id(v), 0) + 1
            t = tile_def(ins)
            if t is not None:
                refs[id(t)] = refs.get(id(t), 0) + 1
        n = len(need)
        hi = [max(need[c], min(peak[c], NUM_TILES)) for c in range(n)]
        splits: list[list[int]] = []

        def walk(c: int, left: int, acc: list[int]) -> None:
            if len(splits) >= _MAX_SPLITS:
                return
            if c == n:
                if left == 0:
                    splits.append(list(acc))
                return
            for k in range(need[c], min(hi[c], left) + 1):
                walk(c + 1, left - k, acc + [k])

        walk(0, NUM_TILES, [])

        def weight(split):
            _assign, spill = self.scan(iv, cls, _pools_of(split))
            return sum(refs.get(id(v), 1) for v in spill)

        best, best_w = first, weight(first)
        for split in splits:
            w = weight(split)
            if w < best_w:
                best, best_w = split, w
        return best

    # ------------------------------------------------------------------ linear scan
    def scan(self, iv, cls, pools) -> tuple[dict[int, int], list]:
        """Linear scan with lifetime holes: a register is free for ``v`` when none of the variables already on
        it overlaps ``v``'s segments; copy partners are tried first (coalescing)."""
        hints: dict[int, list[int]] = {}
        for ins in self.f.instructions():
            if ins.opcode == "TILECOPY":
                a, b = id(ins.operands[0]), id(ins.attrs["def"])
                hints.setdefault(a, []).append(b)
                hints.setdefault(b, []).append(a)
        assign: dict[int, int] = {}
        on_reg: dict[int, list] = {}
        to_spill = []
        for c, pool in enumerate(pools):
            items = sorted((r for vid, r in iv.items() if cls[vid] == c), key=lambda r: (r[0], r[1]))
            for r in pool:
                on_reg[r] = []
            for r in items:
                v = r[2]
                clash = {reg: [w for w in on_reg[reg] if _overlap(w[3], r[3])] for reg in pool}
                free = [reg for reg in pool if not clash[reg]]
                reg = None
                for h in hints.get(id(v), []):
                    if h in assign and assign[h] in free:
                        reg = assign[h]
                        break
                if reg is None and free:
                    reg = min(free)
                if reg is None:
                    # evict from the register whose clashing variables end last, if they are spillable and
                    # end after v; otherwise spill v itself
                    best = None
                    for cand in pool:
                        ws = clash[cand]
                        if any(id(w[2]) in self.unspillable for w in ws):
                            continue
                        key = min(w[1] for w in ws)
                        if best is None or key > best[0]:
                            best = (key, cand)
                    if best is not None and (best[0] > r[1] or id(v) in self.unspillable):
                        reg = best[1]
                        for w in clash[reg]:
                            on_reg[reg].remove(w)
                            del assign[id(w[2])]
                            to_spill.append(w[2])
                    elif id(v) not in self.unspillable:
                        to_spill.append(v)
                        continue
                    else:
                        raise CompileError("no tile register left for a spill temporary",
                                           location=f"@{self.f.name}", rule=RULE, values={"pool": pool})
                assign[id(v)] = reg
                on_reg[reg].append(r)
        return assign, to_spill

    # ------------------------------------------------------------------ driver
    def assign_registers(self) -> dict:
        """Phi elimination, TMUL ties, then linear scan; spill code is inserted until every tile variable has a
        register. Returns the allocation (virtual tile -> register, register -> shape); the pseudos keep their
        virtual operands until :meth:`apply`."""
        self.split_critical_edges()
        self.eliminate_phis()
        self.tie_dots()
        spilled_ids: set[int] = set()
        for rnd in range(_MAX_ROUNDS):
            self.stats["rounds"] = rnd + 1
            iv, crossing = self.intervals()
            forced = [iv[vid][2] for vid in crossing if vid in iv and vid not in self.unspillable]
            if forced:
                for v in forced:
                    self.spill(v)
                continue
            reps, cls = self.classes(iv)
            pools = self.pools(reps, cls, iv)
            assign, to_spill = self.scan(iv, cls, pools)
            if not to_spill:
                break
            for v in to_spill:
                if id(v) in spilled_ids:
                    raise CompileError("spilling does not converge", location=f"@{self.f.name}", rule=RULE)
                spilled_ids.add(id(v))
                self.spill(v)
        else:
            raise CompileError("register allocation did not converge", location=f"@{self.f.name}", rule=RULE)
        reg_shape: dict[int, Shape] = {}
        for vid, reg in assign.items():
            reg_shape.setdefault(reg, reps[cls[vid]])
        return {"assign": assign, "reg_shape": reg_shape, "names": {vid: iv[vid][2].name for vid in assign},
                "allocator": self}

    def apply(self, allocation: dict) -> dict:
        """Rewrite to physical tiles (copies through the slot, config stores); returns f.meta['regalloc']."""
        assign, reg_shape = allocation["assign"], allocation["reg_shape"]
        self.rewrite(assign, reg_shape)
        self.stats["spill_code_removed"] = _drop_redundant_spill_code(self.f, self.slots)
        info = {"assign": {allocation["names"][vid]: reg for vid, reg in assign.items()},
                "shapes": {reg: s for reg, s in sorted(reg_shape.items())}, **self.stats}
        self.f.meta["regalloc"] = info
        return info

    def run(self) -> dict:
        return self.apply(self.assign_registers())

    def rewrite(self, assign: dict[int, int], reg_shape: dict[int, Shape]) -> None:
        f = self.f
        defs: dict[int, list[Instr]] = {}
        for ins in f.instructions():
            t = tile_def(ins)
            if t is not None:
                defs.setdefault(id(t), []).append(ins)
        zero_vars = {vid for vid, ds in defs.items() if all(d.opcode == "PTILEZEROV" for d in ds)}
        from .cfg import Dominance
        dom = Dominance(f)
        for b in f.blocks:
            out = []
            for ins in b.instrs:
                op = ins.opcode
                if op == "TILECOPY":
                    src, dst = assign[id(ins.operands[0])], assign[id(ins.attrs["def"])]
                    self.stats["copies"] += 1
                    if src == dst:
                        self.stats["copies_eliminated"] += 1
                        continue
                    if id(ins.operands[0]) in zero_vars:
                        # a copy of a tile only tilezero defines: zero the destination (same shape class, so
                        # the same bytes as the store/load through the slot, without memory)
                        self.stats["copies_as_tilezero"] = self.stats.get("copies_as_tilezero", 0) + 1
                        out.append(_m("TILEZERO", [dst], [], remat=True))
                        continue
                    if self.copy_slot is None:
                        # not inserted yet: this loop may be walking (and rebuilding) the entry block itself
                        self.copy_slot = self.new_slot("tilecopy", insert=False)
                    out.append(_m("TILESTORED", [src], [self.copy_slot, ConstantInt(I64, 64)], copy=True))
                    out.append(_m("TILELOADD", [dst], [self.copy_slot, ConstantInt(I64, 64)], copy=True))
                    continue
                if op in PSEUDO:
                    mn = PSEUDO[op]
                    extra = {k: ins.attrs[k] for k in ("spill", "loc") if k in ins.attrs}
                    if mn in MODELLED_LOADS:
                        out.append(_m(mn.upper(), [assign[id(tile_def(ins))]], ins.operands[2:4], **extra))
                    elif mn == "tilestored":
                        out.append(_m("TILESTORED", [assign[id(ins.operands[4])]], ins.operands[2:4], **extra))
                    elif mn == "tilezero":
                        out.append(_m("TILEZERO", [assign[id(tile_def(ins))]], [], **extra))
                    else:
                        d, a, bb = (assign[id(x)] for x in ins.operands[3:6])
                        assert d == assign[id(tile_def(ins))]
                        out.append(_m(mn.upper(), [d, a, bb], [], **extra))
                    continue
                if op == "PLDTILECFGV":
                    slot = ins.operands[0]
                    if ins.attrs.get("role") == "main":
                        # each configuration point writes the shapes defined there; a tile whose shape is
                        # not (it is only used under another point) is left unconfigured
                        for reg, s in sorted(reg_shape.items()):
                            here = dom.value_available(s.rows, ins) and dom.value_available(s.cols, ins)
                            out += _config_stores(f, slot, reg, s if here else None)
                    out.append(_m("LDTILECFG", [], [slot], role=ins.attrs.get("role")))
                    continue
                out.append(ins)
            b.instrs = []
            for ins in out:
                b.append(ins)
        if self.copy_slot is not None:
            f.entry.insert(0, self.copy_slot)
        f.meta["machine"] = True


def _drop_redundant_spill_code(f: Function, slots: list[Instr]) -> int:
    """Spill-everywhere leaves reloads of a slot into a register that still holds it, on every path to the
    reload (a forward must-dataflow over the blocks: register -> slot whose bytes it holds, met by
    intersection), and stores into a slot that is stored again in the same block before anything reads it.
    Both go. The slots are allocas of this pass that no program pointer reaches, so only this code reads or
    writes them; a reload into a register that holds the slot's bytes, under the same configuration, changes
    no byte of it (a call, an LDTILECFG or a TILERELEASE forgets everything). Returns how many went."""
    slot_ids = {id(s) for s in slots}

    def slot_of(ins):
        if ins.attrs.get("spill") and ins.opcode in ("TILESTORED", "TILELOADD") and id(ins.operands[0]) in slot_ids:
            return id(ins.operands[0])
        return None

    def step(holds: dict[int, int], ins) -> bool:
        """Update ``holds`` across ``ins``; True when ``ins`` is a reload the register already holds."""
        sl = slot_of(ins)
        if sl is not None and ins.opcode == "TILELOADD":
            r = ins.attrs["tiles"][0]
            if holds.get(r) == sl:
                return True
            holds[r] = sl
        elif sl is not None:  # TILESTORED into a slot: the slot now holds this register's bytes
            r = ins.attrs["tiles"][0]
            for r2 in [x for x, v in holds.items() if v == sl and x != r]:
                del holds[r2]
            holds[r] = sl
        elif ins.opcode in ("LDTILECFG", "TILERELEASE") or _is_clobber(ins):
            holds.clear()
        elif "tiles" in ins.attrs and ins.opcode != "TILESTORED":  # a store to memory writes no tile
            # a load, tilezero or TMUL writes its first tile; forgetting every tile it names is safe for any
            # other tile instruction too
            for r in ins.attrs["tiles"]:
                holds.pop(r, None)
        return False

    # must-hold at each block's entry, to a fixpoint (None: no path seen yet)
    preds = f.predecessors()
    order = rpo(f)
    exit_state: dict = {b: None for b in f.blocks}
    changed = True
    while changed:
        changed = False
        for b in order:
            ins_states = [exit_state[p] for p in preds[b] if exit_state[p] is not None]
            if b is f.entry or not ins_states:
                start: dict[int, int] = {}
            else:
                start = dict(ins_states[0])
                for st in ins_states[1:]:
                    start = {r: v for r, v in start.items() if st.get(r) == v}
            h = dict(start)
            for ins in b.instrs:
                step(h, ins)
            if exit_state[b] != h:
                exit_state[b], changed = h, True
    entry_state = {}
    for b in order:
        ins_states = [exit_state[p] for p in preds[b] if exit_state[p] is not None]
        st: dict[int, int] = {}
        if b is not f.entry and ins_states:
            st = dict(ins_states[0])
            for o in ins_states[1:]:
                st = {r: v for r, v in st.items() if o.get(r) == v}
        entry_state[b] = st

    removed = 0
    for b in f.blocks:
        holds = dict(entry_state.get(b, {}))
        keep = []
        for ins in b.instrs:
            if step(holds, ins):
                removed += 1
                continue
            keep.append(ins)
        # stores into a slot that is stored again, with no reload in between, in the same block
        overwritten: set[int] = set()
        out = []
        for ins in reversed(keep):
            sl = slot_of(ins)
            if sl is not None and ins.opcode == "TILESTORED":
                if sl in overwritten:
                    removed += 1
                    continue
                overwritten.add(sl)
            elif sl is not None:
                overwritten.discard(sl)
            out.append(ins)
        b.instrs = out[::-1]
    return removed


def _pools_of(split: list[int]) -> list[list[int]]:
    """Consecutive physical tiles for each class: split [3, 2] -> [[0, 1, 2], [3, 4]]."""
    regs = iter(range(NUM_TILES))
    return [[next(regs) for _ in range(k)] for k in split]


def _overlap(a: list[list[int]], b: list[list[int]]) -> bool:
    """Whether two sorted segment lists intersect (segments are [start, end): a value that dies where another
    is defined does not clash with it, so a copy's source and destination may share a tile)."""
    i = j = 0
    while i < len(a) and j < len(b):
        (s0, e0), (s1, e1) = a[i], b[j]
        if s0 < e1 and s1 < e0 or (s0 == s1):
            return True
        if e0 <= e1:
            i += 1
        else:
            j += 1
    return False


def _m(opcode: str, tiles: list[int], operands: list, **attrs) -> Instr:
    return Instr(opcode, VOID, list(operands), tiles=list(tiles), **attrs)


def _config_stores(f: Function, slot: Instr, reg: int, s: Shape) -> list[Instr]:
    """rows[reg] (byte 48 + reg) and colsb[reg] (u16 at 16 + 2*reg) of the 64-byte TILECFG (SDM LDTILECFG)."""
    out = []
    real = s is not None
    if s is None:
        s = Shape(ConstantInt(I16, 0), ConstantInt(I16, 0))
    rows = s.rows
    if isinstance(rows, ConstantInt):
        rows8: Value = ConstantInt(I8, rows.value & 0xFF)
    else:
        rows8 = Instr("trunc", I8, [rows], name=f.fresh(f"cfg.rows{reg}."))
        out.append(rows8)
    prow = Instr("getelementptr", PTR, [slot, ConstantInt(I64, 48 + reg)], name=f.fresh(f"cfg.prows{reg}."),
                 source_type=I8, flags=["inbounds"])
    pcol = Instr("getelementptr", PTR, [slot, ConstantInt(I64, 16 + 2 * reg)], name=f.fresh(f"cfg.pcols{reg}."),
                 source_type=I8, flags=["inbounds"])
    cols = s.cols if not isinstance(s.cols, ConstantInt) else ConstantInt(I16, s.cols.value & 0xFFFF)
    # cfg= marks the stores for counting (tools/llvm_amx_corpus.py): "rows" only where a shape is written
    kind = "rows" if real else "none"
    out += [prow, Instr("store", VOID, [rows8, prow], align=1, cfg=kind), pcol,
            Instr("store", VOID, [cols, pcol], align=1, cfg="cols" if real else "none")]
    return out


def _no_tiles(f: Function) -> bool:
    """No tile instruction left (shape propagation may still have recorded shapes): nothing to allocate."""
    return not any(i.opcode in PSEUDO or i.opcode == "TILECOPY" for i in f.instructions())


def assign_registers(module: Module, f: Function) -> dict | None:
    """The allocation of ``f`` (after tileconfig.place_config): phi copies, TMUL ties and spill code are
    inserted, the pseudos keep their virtual tiles; stored in ``f.meta['allocation']`` for :func:`apply`."""
    allocation = None if _no_tiles(f) else _Allocator(module, f).assign_registers()
    f.meta["allocation"] = allocation
    return allocation


def apply(module: Module, f: Function, allocation: dict | None = None) -> dict:
    """Rewrite ``f`` to physical tiles with ``allocation`` (default ``f.meta['allocation']``); returns
    f.meta['regalloc']."""
    if allocation is None:
        allocation = f.meta.get("allocation")
    if allocation is None:
        f.meta["regalloc"] = {"assign": {}, "shapes": {}, "spilled": [], "copies": 0, "copies_eliminated": 0,
                              "rounds": 0}
        for b in f.blocks:
            for k, ins in enumerate(b.instrs):
                if ins.opcode == "PLDTILECFGV":
                    b.instrs[k] = _m("LDTILECFG", [], ins.operands)
        f.meta["machine"] = True
        return f.meta["regalloc"]
    info = allocation["allocator"].apply(allocation)
    f.meta.pop("allocation", None)
    return info


def allocate(module: Module, f: Function) -> dict:
    """Allocate the tiles of ``f`` (after tileconfig.place_config): :func:`assign_registers` then :func:`apply`;
    returns f.meta['regalloc']."""
    return apply(module, f, assign_registers(module, f))
