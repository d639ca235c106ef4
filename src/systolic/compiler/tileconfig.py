"""ldtilecfg placement: a tile configuration in force before every tile instruction.

Seed section 8 (specs/amx-llvm-programming-model.md) and REFERENCE.md section 7 (X86PreTileConfig):

* the function gets a 64-byte config slot, zeroed with palette 1 at its entry;
* one ``PLDTILECFGV`` goes right after the last shape definition: it must be dominated by every shape value it
  writes into the config and dominate every tile instruction. When no such point exists the error is LLVM's:
  ``<fn>: Failed to config tile register, please define the shape earlier``, with the location;
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
from .lower import is_pseudo

__all__ = ["place_config", "RULE"]

RULE = "seed section 8 / X86PreTileConfig: ldtilecfg dominates every tile instruction and follows the shape defs"


def _shape_defs(f: Function) -> list[Instr]:
    defs: dict[int, Instr] = {}
    for ins in f.instructions():
        if is_pseudo(ins.opcode):
            for v in ins.operands[:3 if ins.opcode.startswith("PTDP") else 2]:
                if isinstance(v, Instr):
                    defs[id(v)] = v
    return list(defs.values())


def place_config(module: Module, f: Function) -> dict:
    """Insert the config slot, PLDTILECFGV and TILERELEASE into ``f`` (after lower). Returns f.meta['tilecfg']."""
    tile_instrs = [i for i in f.instructions() if is_pseudo(i.opcode)]
    if not tile_instrs:
        f.meta["tilecfg"] = None
        return {}
    dom = Dominance(f)
    defs = _shape_defs(f)
    err = f"{f.name}: Failed to config tile register, please define the shape earlier"
    last = None
    for d in defs:
        if all(dom.dominates(o, d) for o in defs):
            last = d
            break
    if defs and last is None:
        raise CompileError(err + " (the shape values are defined on different paths, so no single point follows "
                           "them all)", location=location(defs[-1]), rule=RULE,
                           values={"shape_values": [d.name for d in defs]})
    # the slot: zeroed, palette 1 (LLVM zero-initialises the config and sets the palette at the entry)
    entry = f.entry
    slot = Instr("alloca", PTR, [], name=f.fresh("tilecfg"), alloc_type=ArrayType(64, I8), align=64)
    zero = Instr("store", VOID, [ConstantSpecial(VectorType(16, I32), "zeroinitializer"), slot], align=64)
    pal = Instr("store", VOID, [ConstantInt(I8, 1), slot], align=64)
    for k, ins in enumerate((slot, zero, pal)):
        entry.insert(k, ins)
    if last is None:
        block, idx = entry, 3
    elif last.opcode == "phi":
        block, idx = last.block, last.block.first_non_phi()
    else:
        block, idx = last.block, last.block.instrs.index(last) + 1
    main = Instr("PLDTILECFGV", VOID, [slot], role="main")
    block.insert(idx, main)
    dom = Dominance(f)
    for t in tile_instrs:
        if not dom.dominates(main, t):
            raise CompileError(err + f" (the tile instruction runs before the last shape value "
                               f"{('%' + last.name) if last is not None else ''} is defined)",
                               location=location(t), rule=RULE)
    # again after each call that may run after the configuration (tile state is caller-saved)
    after = reachable(f, block)
    reconfigs = []
    for b in f.blocks:
        for ins in list(b.instrs):
            if ins.opcode != "call" or ins.intrinsic is None or ins.intrinsic.startswith("llvm."):
                continue
            if b is block and b.instrs.index(ins) < b.instrs.index(main) and block not in \
                    {s for x in block.successors for s in reachable(f, x)}:
                continue
            if b not in after:
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
    meta = {"slot": slot, "main": main, "reconfigs": reconfigs, "releases": releases, "after": last}
    f.meta["tilecfg"] = meta
    return meta
