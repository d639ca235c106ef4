"""Shape propagation: give every tile value its (rows, colsb) and rewrite the function into LLVM's final form.

Seed section 6 (specs/amx-llvm-programming-model.md) and REFERENCE.md section 7 (X86LowerAMXType): shapes are
rooted at the tile intrinsics' shape operands. For ``tdp*(m, n, k, C, A, B)``: C and the result are (m, n),
A is (m, k), B is (k/4, n), and the result is C's register, so it has C's shape (the shape of C's
definition; (m, n) only for a C that has none, such as a plain ``<256 x i32>`` load); loads, stores and tilezero
take (rows, colsb) directly. Shapes flow through phis and
the casts between ``<256 x i32>`` and ``x86_amx``. A ``load <256 x i32>`` whose value feeds a tile intrinsic
becomes ``tileloadd64.internal(rows, cols, p, 64)`` and a ``store <256 x i32>`` of a tile value becomes
``tilestored64.internal(rows, cols, p, 64, t)`` (a ``<256 x i32>`` in memory is 16 rows of 64 bytes).

After :func:`propagate` every tile value is an ``x86_amx`` instruction (a ``*.internal`` intrinsic call or a
phi), the seed's ``<256 x i32>`` intrinsics are renamed to their ``.internal`` forms, and
``f.meta["shapes"]`` maps each tile value to its :class:`Shape`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CompileError, UnmodelledConstruct
from .amx_table import MODELLED_DOTS, MODELLED_LOADS, internal_name, is_cast
from .int_intrinsics import runner_executes
from .cfg import Dominance
from .ir import (I8, I16, I64, PTR, V256I32, X86_AMX, VOID, ArrayType, ConstantInt, ConstantSpecial, Function, Instr,
                 IntType, Module, PtrType, TileType, Value, intrinsic, is_tile, is_tile_vector, location, replace_uses, users)

__all__ = ["TileOp", "DOT_MNEMONICS", "classify", "Shape", "same_value", "propagate", "analyze", "rewrite",
           "ShapeAnalysis", "internal_name",
           "SHAPE_RULE"]

#: the TMUL and tile-load instructions the compiler knows: every one with an instruction record (amx_table, read
#: from systolic.amx.isa: INT8, BF16, FP16, COMPLEX, FP8 TMULs; TILELOADD and its hinted forms)
DOT_MNEMONICS = MODELLED_DOTS
LOAD_MNEMONICS = MODELLED_LOADS
SHAPE_RULE = "LLVM X86LowerAMXType / the AMX proposal, section 6: shapes come from the intrinsics' shape operands"


@dataclass(frozen=True)
class TileOp:
    """What a tile intrinsic call is: ``kind`` load/store/zero/dot, the instruction mnemonic, the IR form."""

    kind: str
    mnemonic: str
    form: str  # "internal" (x86_amx, LLVM's final form) or "seed" (<256 x i32>, the proposal's form)


#: physical intrinsic name without ``llvm.x86.`` (``tileloadd64``, ``tdpbssd``) -> (kind, mnemonic)
_BY_NAME: dict[str, tuple[str, str]] = {}
for _m, _k in ((m, "load") for m in LOAD_MNEMONICS):
    _BY_NAME[internal_name(_m)[len("llvm.x86."):-len(".internal")]] = (_k, _m)
for _m, _k in (("tilestored", "store"), ("tilezero", "zero"), *((m, "dot") for m in DOT_MNEMONICS)):
    _BY_NAME[internal_name(_m)[len("llvm.x86."):-len(".internal")]] = (_k, _m)

_NTILE = {"load": 0, "store": 1, "zero": 0, "dot": 3}
_NSCALAR = {"load": 4, "store": 4, "zero": 2, "dot": 3}
CASTS = ("llvm.x86.cast.vector.to.tile.v256i32", "llvm.x86.cast.tile.to.vector.v256i32",
         "llvm.x86.cast.vector.to.tile", "llvm.x86.cast.tile.to.vector")  # every width: amx_table.is_cast


def classify(ins: Instr) -> TileOp | None:
    """The tile intrinsic a call is, checking its signature; None for anything else.

    The physical-register forms (``tileloadd64(i8 tmm, ...)``, ``tdpbssd(i8, i8, i8)``) are the compiler's
    output, not its input: they raise CompileError.
    """
    name = ins.intrinsic
    if name is None or not name.startswith("llvm.x86."):
        return None
    base = name[len("llvm.x86."):]
    form = "seed"
    if base.endswith(".internal"):
        base, form = base[:-len(".internal")], "internal"
    if base not in _BY_NAME:
        if base in ("ldtilecfg", "sttilecfg", "tilerelease"):
            raise CompileError(f"@{name} is emitted by the compiler (ldtilecfg placement); the input must not "
                               "configure tiles itself", location=location(ins), rule=SHAPE_RULE)
        return None
    kind, mnem = _BY_NAME[base]
    tile_t = X86_AMX if form == "internal" else V256I32
    ops = ins.operands
    if ops and ops[0].type == IntType(8) and form == "seed":
        raise CompileError(f"@{name} with a physical tile number is the compiler's output form; write the shaped "
                           f"intrinsic @{internal_name(mnem)}", location=location(ins), rule=SHAPE_RULE)
    ns, nt = _NSCALAR[kind], _NTILE[kind]
    ok = len(ops) == ns + nt
    if ok:
        if kind in ("load", "store"):
            ok = ops[0].type == I16 and ops[1].type == I16 and isinstance(ops[2].type, PtrType) \
                and ops[3].type == I64
        else:
            ok = all(o.type == I16 for o in ops[:ns])
        ok = ok and all(o.type == tile_t for o in ops[ns:])
        ok = ok and ins.type == (VOID if kind == "store" else tile_t)
    if not ok:
        raise CompileError(f"@{name} called with ({', '.join(str(o.type) for o in ops)}) returning {ins.type}",
                           location=location(ins), rule="clang amxintrin.h / LLVM IntrinsicsX86.td signature")
    return TileOp(kind, mnem, form)


@dataclass(frozen=True)
class Shape:
    """A tile's (rows, colsb) as IR values (i16): constants or SSA values computed at run time."""

    rows: Value
    cols: Value

    def same(self, other: "Shape") -> bool:
        return same_value(self.rows, other.rows) and same_value(self.cols, other.cols)

    def __str__(self) -> str:
        return f"({self.rows.ref()}, {self.cols.ref()})"


def same_value(a: Value, b: Value) -> bool:
    """Shape operands are equal when they are one SSA value or equal constants."""
    if a is b:
        return True
    return isinstance(a, ConstantInt) and isinstance(b, ConstantInt) and a.value == b.value


def _is_cast(ins: Instr) -> bool:
    if ins.opcode == "bitcast":
        a, b = ins.type, ins.operands[0].type
        return (a == X86_AMX and is_tile_vector(b)) or (b == X86_AMX and is_tile_vector(a))
    return ins.opcode == "call" and is_cast(ins.intrinsic)


class _Propagation:
    def __init__(self, module: Module, f: Function) -> None:
        self.m, self.f = module, f
        self.ops: dict[int, TileOp] = {}
        for ins in f.instructions():
            op = classify(ins)
            if op is not None:
                self.ops[id(ins)] = op
            elif ins.opcode == "call" and ins.intrinsic.startswith("llvm.") and not is_cast(ins.intrinsic) \
                    and not runner_executes(ins.intrinsic):
                raise CompileError(f"unsupported intrinsic @{ins.intrinsic}", location=location(ins),
                                   rule="the tile compiler knows the AMX intrinsics of clang's amxintrin.h",
                                   values={"known": sorted(internal_name(m) for m in
                                                           (*LOAD_MNEMONICS, "tilestored", "tilezero",
                                                            *DOT_MNEMONICS))})
        self.uses = users(f)
        self.shape: dict[int, Shape] = {}
        self.kdiv4: dict[int, Value] = {}
        self.pending: list[tuple[Value, Instr]] = []  # K/4 values named by the analysis, not yet inserted
        self.dom = Dominance(f)

    # ------------------------------------------------------------------ which values hold tiles
    def tile_values(self) -> list[Instr]:
        """Values that hold tile data: intrinsic tile results/operands and everything connected by phi/cast/
        vector load/store to them (the seed's <256 x i32> values may also be ordinary vectors)."""
        f = self.f
        seeds: list[Value] = []
        for ins in f.instructions():
            op = self.ops.get(id(ins))
            if op is not None:
                if ins.type != VOID:
                    seeds.append(ins)
                seeds += ins.operands[_NSCALAR[op.kind]:]
            elif isinstance(ins.type, TileType) or any(isinstance(o.type, TileType) for o in ins.operands):
                seeds.append(ins)
                seeds += [o for o in ins.operands if isinstance(o.type, TileType)]
        seen: dict[int, Value] = {}
        work = list(seeds)
        while work:
            v = work.pop()
            if id(v) in seen or not is_tile(v.type):
                continue
            seen[id(v)] = v
            if isinstance(v, Instr) and (v.opcode == "phi" or _is_cast(v)):
                work += v.operands
            for u, _k in self.uses.get(id(v), []):
                if u.opcode == "phi" or _is_cast(u):
                    work.append(u)
        return [v for v in seen.values()]

    # ------------------------------------------------------------------ shapes
    def b_rows(self, k: Value, at: Instr) -> Value:
        """Rows of a TMUL's B operand: K/4 (REFERENCE.md 7). Folded for constants, else ``lshr k, 2`` placed
        right after k's definition."""
        if isinstance(k, ConstantInt):
            return ConstantInt(I16, (k.value & 0xFFFF) >> 2)
        if id(k) in self.kdiv4:
            return self.kdiv4[id(k)]
        ins = Instr("lshr", I16, [k, ConstantInt(I16, 2)], name=self.f.fresh("shape.k4."))
        # the analysis only names the value; the rewrite inserts it right after k (:meth:`insert_pending`)
        self.pending.append((k, ins))
        self.kdiv4[id(k)] = ins
        return ins

    def insert_pending(self) -> None:
        for k, ins in self.pending:
            if isinstance(k, Instr):
                b = k.block
                idx = b.first_non_phi() if k.opcode == "phi" else b.instrs.index(k) + 1
            else:
                b, idx = self.f.entry, 0
            b.insert(idx, ins)
        self.pending = []
        self.uses = users(self.f)

    def use_shape(self, user: Instr, k: int) -> Shape | None:
        op = self.ops.get(id(user))
        if op is None:
            if user.opcode == "phi" or _is_cast(user):
                return self.shape.get(id(user))
            return None
        o = user.operands
        if op.kind == "store":
            return Shape(o[0], o[1])
        if op.kind == "dot":
            if k == 3:
                return Shape(o[0], o[1])
            if k == 4:
                return Shape(o[0], o[2])
            if k == 5:
                return Shape(self.b_rows(o[2], user), o[1])
        return None

    def def_shape(self, v: Value) -> Shape | None:
        if not isinstance(v, Instr):
            return None
        op = self.ops.get(id(v))
        if op is not None and op.kind == "dot":
            # the result is C's register, written in place: it keeps C's shape (LLVM ties the def to C and
            # configures the register from C's definition); C without a shape of its own takes (m, n) by use
            c = v.operands[3]
            if not isinstance(c, Instr):
                return Shape(v.operands[0], v.operands[1])
            return self.shape.get(id(c))
        if op is not None:
            return Shape(v.operands[0], v.operands[1])
        if v.opcode == "phi":
            for x in v.operands:
                s = self.shape.get(id(x))
                if s is not None:
                    return s
        if _is_cast(v):
            return self.shape.get(id(v.operands[0]))
        return None

    def analyze(self) -> list[Instr]:
        """The analysis: a shape for every tile value, checked for consistency; the function is not changed.
        Returns the tile values."""
        f = self.f
        tv = self.tile_values()
        for v in tv:
            if not isinstance(v, Instr):
                what = "a function argument" if v.__class__.__name__ == "Argument" else f"{v.ref()}"
                user = self.uses.get(id(v), [(None, 0)])[0][0]
                if isinstance(v, ConstantSpecial):
                    continue
                raise UnmodelledConstruct(
                    f"tile value {what} comes from outside @{f.name}; tiles passed by value (as <256 x i32> "
                    "arguments) are not modelled: define the tile with a load or tilezero",
                    location=location(user) if user else f"@{f.name}", rule=SHAPE_RULE,
                    values={"construct": "tile passed by value", "function": f.name,
                            "line": user.attrs.get("loc") if user else None})
        tv = [v for v in tv if isinstance(v, Instr)]
        # definitions first (intrinsic results, then through phis and casts) to a fixpoint; only values no
        # definition reaches (plain vector loads, phis of them) take the shape of a use
        while True:
            changed = True
            while changed:
                changed = False
                for v in tv:
                    if id(v) not in self.shape:
                        s = self.def_shape(v)
                        if s is not None:
                            self.shape[id(v)] = s
                            changed = True
            progress = False
            for v in tv:
                if id(v) in self.shape:
                    continue
                for u, k in list(self.uses.get(id(v), [])):
                    s = self.use_shape(u, k)
                    if s is not None:
                        self.shape[id(v)] = s
                        progress = True
                        break
                if progress:
                    break
            if not progress:
                break
        for v in tv:
            if id(v) not in self.shape:
                raise CompileError(f"the shape of tile value %{v.name} is unknown: no tile intrinsic defines or "
                                   "uses it", location=location(v), rule=SHAPE_RULE)
        # consistency: phis and casts carry one shape; a plain vector load has one shape for all its uses
        for v in tv:
            s = self.shape[id(v)]
            if v.opcode == "phi" or _is_cast(v):
                for x in v.operands:
                    sx = self.shape.get(id(x))
                    if sx is not None and not sx.same(s):
                        raise CompileError(f"conflicting tile shapes at %{v.name}: {s} and {sx} (a tile's shape "
                                           "is set once)", location=location(v), rule=SHAPE_RULE,
                                           values={"value": v.name})
            if v.opcode == "load":
                for u, k in self.uses.get(id(v), []):
                    su = self.use_shape(u, k)
                    if su is not None and not su.same(s):
                        raise CompileError(f"conflicting tile shapes for %{v.name}: used as {s} and as {su}",
                                           location=location(u), rule=SHAPE_RULE, values={"value": v.name})
        # what a tile value may flow into (checked by the analysis, so that a refusal leaves f unchanged)
        for v in tv:
            for u, k in self.uses.get(id(v), []):
                if id(u) in self.ops or u.opcode == "phi" or _is_cast(u) or (u.opcode == "store" and k == 0):
                    continue
                raise UnmodelledConstruct(
                    f"tile value %{v.name} used by {u.opcode} in @{self.f.name}; vector code on tile values is not "
                    "modelled (tile values may flow into tile intrinsics, phis, casts and <256 x i32> stores)",
                    location=location(u), rule=SHAPE_RULE,
                    values={"construct": f"{u.opcode} of a tile value", "function": self.f.name,
                            "line": u.attrs.get("loc")})
        return tv

    # ------------------------------------------------------------------ rewrite into the final form
    def check_available(self, s: Shape, at: Instr, what: str) -> None:
        for x in (s.rows, s.cols):
            if not self.dom.value_available(x, at):
                raise CompileError(f"{self.f.name}: Failed to config tile register, please define the shape "
                                   f"earlier ({what} needs {x.ref()}, which is not defined before it)",
                                   location=location(at), rule=SHAPE_RULE)

    def defer_load(self, ins: Instr, s: Shape) -> None:
        """A vector load whose tile shape is defined only after it (amx-combine.ll ``test_tile_dpbssd``: "the
        shape is loaded after tile"): as LLVM's X86LowerAMXType, the vector load stays where it is and stores
        its 1024 bytes to a stack slot, and the tile is loaded from that slot right before its first use, where
        the shape must be defined. All its uses must be in one block (else the usual error). The bytes are the
        ones the eager run reads at the load, masked to the tile's shape by the tile load as by the eager run."""
        users_ = self.uses.get(id(ins), [])
        blocks = {id(u.block) for u, _k in users_}
        if not users_ or len(blocks) != 1:
            return
        b = users_[0][0].block
        first = min((u for u, _k in users_), key=lambda u: b.instrs.index(u))
        if not all(self.dom.value_available(x, first) for x in (s.rows, s.cols)):
            return
        f = self.f
        slot = Instr("alloca", PTR, [], name=f.fresh("tile.vec."), alloc_type=ArrayType(1024, I8), align=64)
        f.entry.insert(0, slot)
        vec = Instr("load", ins.type, list(ins.operands), name=f.fresh(f"{ins.name}.vec."),
                    **{k: v for k, v in ins.attrs.items()})
        here = ins.block
        k = here.instrs.index(ins)
        here.instrs[k] = vec
        vec.block = here
        here.insert(k + 1, Instr("store", VOID, [vec, slot], align=64))
        ins.operands = [slot]
        ins.block = None
        b.insert(b.instrs.index(first), ins)
        self.dom = Dominance(f)

    def rewrite(self, tv: list[Instr]) -> None:
        f, m = self.f, self.m
        self.insert_pending()
        tset = {id(v) for v in tv}
        casts = [v for v in tv if _is_cast(v)]  # before retyping: afterwards both sides are x86_amx
        self.dom = Dominance(f)
        for b in list(f.blocks):
            for ins in list(b.instrs):
                op = self.ops.get(id(ins))
                if op is not None:
                    if op.form == "seed":
                        ptypes = [o.type if not (o.type == V256I32) else X86_AMX for o in ins.operands]
                        ret = X86_AMX if ins.type == V256I32 else ins.type
                        ptypes = [PTR if isinstance(t, PtrType) else t for t in ptypes]
                        ins.attrs["callee"] = intrinsic(m, internal_name(op.mnemonic), ret, ptypes)
                        ins.type = ret
                        ins.attrs["seed"] = True
                elif ins.opcode == "load" and id(ins) in tset:
                    s = self.shape[id(ins)]
                    if not all(self.dom.value_available(x, ins) for x in (s.rows, s.cols)):
                        self.defer_load(ins, s)
                    self.check_available(s, ins, f"the tile load %{ins.name}")
                    callee = intrinsic(m, internal_name("tileloadd"), X86_AMX, [I16, I16, PTR, I64])
                    ins.opcode, ins.type = "call", X86_AMX
                    ins.operands = [s.rows, s.cols, ins.operands[0], ConstantInt(I64, 64)]
                    ins.attrs = {"callee": callee, "loc": ins.attrs.get("loc"), "from": "load <256 x i32>"}
                    self.ops[id(ins)] = TileOp("load", "tileloadd", "internal")
                elif ins.opcode == "store" and id(ins.operands[0]) in tset:
                    s = self.shape[id(ins.operands[0])]
                    self.check_available(s, ins, "the tile store")
                    callee = intrinsic(m, internal_name("tilestored"), VOID, [I16, I16, PTR, I64, X86_AMX])
                    ins.opcode = "call"
                    ins.operands = [s.rows, s.cols, ins.operands[1], ConstantInt(I64, 64), ins.operands[0]]
                    ins.attrs = {"callee": callee, "loc": ins.attrs.get("loc"), "from": "store <256 x i32>"}
                    self.ops[id(ins)] = TileOp("store", "tilestored", "internal")
                elif ins.opcode == "phi" and id(ins) in tset:
                    ins.type = X86_AMX
        for v in casts:
            src = v.operands[0]
            if isinstance(src, ConstantSpecial) and id(v) in self.shape:
                # a constant vector (zeroinitializer, or undef, which the runner reads as zeros) cast to a
                # tile is a tilezero of the cast's shape (LLVM's amx-tile-basic.ll PR90954, pr209512.ll)
                s = self.shape[id(v)]
                z = Instr("call", X86_AMX, [s.rows, s.cols], name=f.fresh("tz"),
                          callee=intrinsic(m, internal_name("tilezero"), X86_AMX, [I16, I16]))
                v.block.insert(v.block.instrs.index(v), z)
                self.check_available(s, z, f"the tilezero for {src.ref()} cast to a tile")
                self.ops[id(z)] = TileOp("zero", "tilezero", "internal")
                self.shape[id(z)] = s
                src = z
            replace_uses(f, v, src)
            v.block.instrs.remove(v)
            self.shape.pop(id(v), None)
        # undef / zeroinitializer flowing into a tile phi: a tilezero of the phi's shape in the predecessor
        for b in f.blocks:
            for phi in b.phis():
                if phi.type != X86_AMX:
                    continue
                s = self.shape[id(phi)]
                for k, x in enumerate(phi.operands):
                    if isinstance(x, ConstantSpecial):
                        pred = phi.attrs["blocks"][k]
                        z = Instr("call", X86_AMX, [s.rows, s.cols], name=f.fresh("tz"),
                                  callee=intrinsic(m, internal_name("tilezero"), X86_AMX, [I16, I16]))
                        pred.insert(len(pred.instrs) - 1, z)
                        self.check_available(s, z, f"the tilezero for {x.ref()} into %{phi.name}")
                        phi.operands[k] = z
                        self.ops[id(z)] = TileOp("zero", "tilezero", "internal")
                        self.shape[id(z)] = s


@dataclass
class ShapeAnalysis:
    """What :func:`analyze` found: ``shapes`` (id(tile value) -> Shape), the tile values, and the K/4 values the
    rewrite will insert (``pending``)."""

    shapes: dict
    tile_values: list
    pending: list
    _prop: object = None


def analyze(module: Module, f: Function) -> ShapeAnalysis:
    """Shape analysis of ``f`` (no change to ``f``): errors for unknown or conflicting shapes are raised here."""
    p = _Propagation(module, f)
    tv = p.analyze()
    return ShapeAnalysis(p.shape, tv, list(p.pending), p)


def rewrite(module: Module, f: Function, analysis: ShapeAnalysis) -> dict[int, Shape]:
    """Rewrite ``f`` into LLVM's final form with the shapes of ``analysis`` (see the module docstring).

    Returns (and stores in ``f.meta["shapes"]``) ``id(tile value) -> Shape``.
    """
    p = analysis._prop
    p.rewrite(analysis.tile_values)
    # keep only live entries (casts were removed)
    live = {id(i) for i in f.instructions()}
    shapes = {k: v for k, v in p.shape.items() if k in live}
    f.meta["shapes"] = shapes
    f.meta["uses_tiles"] = bool(shapes) or any(classify(i) is not None for i in f.instructions())
    return shapes


def propagate(module: Module, f: Function) -> dict[int, Shape]:
    """:func:`analyze` then :func:`rewrite`."""
    return rewrite(module, f, analyze(module, f))
