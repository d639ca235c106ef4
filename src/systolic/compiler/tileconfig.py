"""ldtilecfg placement: a tile configuration in force before every tile instruction.

Seed section 8 (specs/amx-llvm-programming-model.md) and REFERENCE.md section 7 (X86PreTileConfig):

* the function gets a 64-byte config slot, zeroed with palette 1 at its entry;
* one ``PLDTILECFGV`` goes right after the last shape definition: it must be dominated by every shape value it
  writes into the config and dominate every tile instruction. When no such point exists (shapes computed on
  different paths, or after earlier tile instructions), there is one point per group of tile instructions,
  right after the last definition of the shapes they need, each writing the shapes defined there (as LLVM
  places several); this is refused when another point could run between a tile instruction and its own
  without its shapes. Then the error is LLVM's: ``<fn>: Failed to config tile register, please define the
  shape earlier``, with the location;
* tile registers and TILECFG are caller-saved, so the configuration is loaded again after every call that may
  run after it (regalloc spills tiles live across those points: ldtilecfg zeroes all tile data);
* a function that uses tiles releases them (``TILERELEASE``) before each return.

The per-register shapes are written into the slot by regalloc, once the physical tiles are known.
"""

from __future__ import annotations

from ..errors import CompileError
from .cfg import Dominance, reachable
from .ir import (I8, PTR, VOID, ArrayType, ConstantInt, ConstantSpecial, Function, Instr, Module, VectorType,
                 location, I32)
from .lower import is_dot_pseudo, is_pseudo

__all__ = ["place_config", "RULE"]

RULE = "seed section 8 / X86PreTileConfig: ldtilecfg dominates every tile instruction and follows the shape defs"


def _own_shape_operands(ins: Instr) -> list:
    """The shape operands that configure a tile: those of an instruction that defines one. A store's are not:
    it stores with its tile's shape (the shape of the tile's definition). LLVM's X86PreTileConfig collects
    shapes only from tile definitions ("PTILESTOREDV is the only exception that doesn't def a AMX
    register"), so a store whose shape value is recomputed after the load needs no later configuration."""
    if ins.opcode == "PTILESTOREDV":
        return []
    return list(ins.operands[:3 if is_dot_pseudo(ins.opcode) else 2])


def _shape_defs(f: Function) -> list[Instr]:
    defs: dict[int, Instr] = {}
    for ins in f.instructions():
        if is_pseudo(ins.opcode):
            for v in _own_shape_operands(ins):
                if isinstance(v, Instr):
                    defs[id(v)] = v
    return list(defs.values())


def _needs(f: Function, t: Instr) -> list[Instr]:
    """The shape values (instructions) the configuration must hold when tile instruction ``t`` runs: the shape
    operands of a tile definition and the shapes of the tiles it reads."""
    shapes = f.meta.get("shapes", {})
    dot = is_dot_pseudo(t.opcode)
    vals = _own_shape_operands(t)
    tiles = t.operands[3:6] if dot else (t.operands[4:5] if t.opcode == "PTILESTOREDV" else [])
    for v in tiles:
        sh = shapes.get(id(v))
        if sh is not None:
            vals += [sh.rows, sh.cols]
    out: dict[int, Instr] = {}
    for v in vals:
        if isinstance(v, Instr):
            out[id(v)] = v
    return list(out.values())


def _after_last(dom: Dominance, f: Function, defs: list[Instr]):
    """(block, index) right after the definition every other one dominates; the entry if none; None if the
    definitions are not on one dominator chain."""
    if not defs:
        return f.entry, 3
    for d in defs:
        if all(dom.dominates(o, d) for o in defs):
            if d.opcode == "phi":
                return d.block, d.block.first_non_phi()
            return d.block, d.block.instrs.index(d) + 1
    return None


def _reaches(f: Function, a_block, a_idx, b_block, b_idx, succ_reach) -> bool:
    """Whether position (a_block, a_idx) can be followed, later in some execution, by (b_block, b_idx)."""
    if a_block is b_block and a_idx <= b_idx:
        return True
    return b_block in succ_reach[a_block]


def place_config(module: Module, f: Function) -> dict:
    """Insert the config slot, PLDTILECFGV and TILERELEASE into ``f`` (after lower). Returns f.meta['tilecfg'].

    One configuration point after the last shape definition when it dominates every tile instruction;
    otherwise one per group of tile instructions (after the last definition of the shapes each needs), as
    long as no other point can run between a tile instruction and its own point without holding its
    shapes. Every point stores the shapes available there (regalloc) and loads the configuration.
    """
    tile_instrs = [i for i in f.instructions() if is_pseudo(i.opcode)]
    if not tile_instrs:
        f.meta["tilecfg"] = None
        return {}
    dom = Dominance(f)
    err = f"{f.name}: Failed to config tile register, please define the shape earlier"
    # the slot: zeroed, palette 1 (LLVM zero-initialises the config and sets the palette at the entry)
    entry = f.entry
    slot = Instr("alloca", PTR, [], name=f.fresh("tilecfg"), alloc_type=ArrayType(64, I8), align=64)
    zero = Instr("store", VOID, [ConstantSpecial(VectorType(16, I32), "zeroinitializer"), slot], align=64)
    pal = Instr("store", VOID, [ConstantInt(I8, 1), slot], align=64)
    for k, ins in enumerate((slot, zero, pal)):
        entry.insert(k, ins)
    dom = Dominance(f)
    defs = _shape_defs(f)
    single = _after_last(dom, f, defs)
    points: list[Instr] = []
    failure = None
    if single is not None:
        block, idx = single
        main = Instr("PLDTILECFGV", VOID, [slot], role="main")
        block.insert(idx, main)
        dom = Dominance(f)
        bad = next((t for t in tile_instrs if not dom.dominates(main, t)), None)
        if bad is None:
            points = [main]
        else:
            block.instrs.remove(main)
            dom = Dominance(f)
            failure = (bad, " (the tile instruction runs before the last shape value is defined, and "
                            "separate configuration points could be interrupted by one lacking its shapes)")
    else:
        failure = (tile_instrs[0], " (the shape values are defined on different paths, and separate "
                                   "configuration points could be interrupted by one lacking their shapes)")
    if not points:
        points = _multi_points(f, dom, slot, tile_instrs)
        if not points:
            t, why = failure
            raise CompileError(err + why, location=location(t), rule=RULE,
                               values={"shape_values": [d.name for d in defs]})
    main = points[0]
    block = main.block
    # again after each call that may run after the configuration (tile state is caller-saved)
    succ_reach = {b: set().union(*[reachable(f, x) for x in b.successors]) if b.successors else set()
                  for b in f.blocks}
    reconfigs = []
    for b in f.blocks:
        for ins in list(b.instrs):
            if ins.opcode != "call" or ins.intrinsic is None or ins.intrinsic.startswith("llvm."):
                continue
            if not any(_reaches(f, p.block, p.block.instrs.index(p), b, b.instrs.index(ins), succ_reach)
                       for p in points):
                continue
            r = Instr("PLDTILECFGV", VOID, [slot], role="after-call")
            b.insert(b.instrs.index(ins) + 1, r)
            reconfigs.append(r)
    releases = []
    for b in f.blocks:
        t = b.terminator
        if t is not None and t.opcode == "ret":
            r = Instr("TILERELEASE", VOID, [])
            b.insert(len(b.instrs) - 1, r)
            releases.append(r)
    meta = {"slot": slot, "main": main, "points": points, "reconfigs": reconfigs, "releases": releases}
    f.meta["tilecfg"] = meta
    return meta


def _multi_points(f: Function, dom: Dominance, slot: Instr, tile_instrs: list[Instr]) -> list[Instr]:
    """One PLDTILECFGV per distinct "after the last shape a tile instruction needs" position, or [] when
    that cannot be made safe (LLVM's X86PreTileConfig also places several; REFERENCE.md 7)."""
    wanted = {}
    for t in tile_instrs:
        pos = _after_last(dom, f, _needs(f, t))
        if pos is None:
            return []
        wanted.setdefault((id(pos[0]), pos[1]), (pos, []))[1].append(t)
    # insert from the back of each block so earlier indices stay valid
    placed = {}
    for key, ((block, idx), ts) in sorted(wanted.items(), key=lambda kv: -kv[1][0][1]):
        p = Instr("PLDTILECFGV", VOID, [slot], role="main")
        block.insert(idx, p)
        placed[key] = (p, ts)
    dom = Dominance(f)
    succ_reach = {b: set().union(*[reachable(f, x) for x in b.successors]) if b.successors else set()
                  for b in f.blocks}
    points = [p for p, _ in placed.values()]
    ok = True
    for p, ts in placed.values():
        for t in ts:
            if not dom.dominates(p, t):
                ok = False
            ti = t.block.instrs.index(t)
            for q in points:
                if q is p:
                    continue
                qi = q.block.instrs.index(q)
                if _reaches(f, p.block, p.block.instrs.index(p), q.block, qi, succ_reach) and \
                        _reaches(f, q.block, qi, t.block, ti, succ_reach) and \
                        not all(dom.value_available(v, q) for v in _needs(f, t)):
                    ok = False
    if not ok:
        for p in points:
            p.block.instrs.remove(p)
        return []
    order = {id(i): k for k, i in enumerate(f.instructions())}
    return sorted(points, key=lambda p: order[id(p)])


def _is_tile_machine_op(ins: Instr) -> bool:
    return "tiles" in ins.attrs and ins.opcode != "LDTILECFG"


def _ends_config(ins: Instr) -> bool:
    """A call clobbers the configuration (whatever follows it is configured again after it); a ret ends it."""
    return ins.opcode == "ret" or (ins.opcode == "call" and ins.intrinsic is not None
                                   and not ins.intrinsic.startswith("llvm."))


def observed_configs(f: Function) -> tuple[list[Instr], list[Instr]]:
    """Analysis (after regalloc): which LDTILECFGs some tile instruction runs under, and which none does.

    From each LDTILECFG, every path forward is followed until a tile instruction (the load is observed), a
    call or ``ret`` (the configuration dies unobserved) or another LDTILECFG (which replaces it). A load no tile
    instruction observes is one LLVM does not make: the one at the entry when a call comes before any tile
    instruction, the one after a last call before ``ret`` (amx-across-func.ll, amx-ldtilecfg-insert.ll).
    Every tile instruction still runs under a load: walking back from it, the first LDTILECFG or call met is a
    LDTILECFG (calls that may run after a configuration are followed by one), and that load observes it.
    """
    loads = [i for i in f.instructions() if i.opcode == "LDTILECFG"]
    observed, unobserved = [], []
    for ld in loads:
        seen = set()
        work = [(ld.block, ld.block.instrs.index(ld) + 1)]
        hit = False
        while work and not hit:
            b, k = work.pop()
            for ins in b.instrs[k:]:
                if _is_tile_machine_op(ins):
                    hit = True
                    break
                if ins.opcode == "LDTILECFG" or _ends_config(ins):
                    break
            else:
                for s in b.successors:
                    if id(s) not in seen:
                        seen.add(id(s))
                        work.append((s, 0))
        (observed if hit else unobserved).append(ld)
    return observed, unobserved


def prune_config(module: Module, f: Function) -> int:
    """Rewrite: delete the LDTILECFGs :func:`observed_configs` finds unobserved (their shape stores stay: a
    later load after a call reads them). Returns how many went."""
    if not f.meta.get("machine"):
        return 0
    _obs, dead = observed_configs(f)
    for ld in dead:
        ld.block.instrs.remove(ld)
    meta = f.meta.get("tilecfg")
    if meta:
        meta["pruned"] = len(dead)
    return len(dead)
