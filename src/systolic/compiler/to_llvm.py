"""Emission (b) and (c): the compiled program as an ``llvmlite.ir`` module, built with ``IRBuilder``.

(b) :func:`physical_module` / :func:`physical_ir`: the allocated machine program with LLVM's *physical-register*
    intrinsics (``llvm.x86.ldtilecfg(ptr)``, ``llvm.x86.tileloadd64(i8 tmm, ptr, i64)``, ``llvm.x86.tdpbssd(i8,
    i8, i8)``, ... the names of the instruction records, :mod:`systolic.amx.isa`): our allocation and our 64-byte
    configuration, so LLVM's own AMX passes have nothing left to do. This is what runs natively
    (``backend="llvm"``, the module itself goes to the JIT) and what ``--emit asm`` compiles.
(c) :func:`internal_module` / :func:`internal_ir`: the function after shape propagation, in LLVM's final form
    (``x86_amx`` values and the ``*.internal`` intrinsics), leaving shape propagation, ldtilecfg placement and
    tile allocation to LLVM (X86PreTileConfig / X86TileConfig), for comparison.

Each LLVM instruction is built by its definition in :mod:`.ops` (``build``); this module maps our types, values,
globals, functions and blocks to llvmlite's. llvmlite has no ``x86_amx`` type, no ``freeze`` instruction, no
flags on casts and no opaque-pointer constant ``getelementptr``: the first three are small subclasses of its own
type and instruction classes below, and a constant ``getelementptr`` operand is built as the same
``getelementptr`` instruction at the top of the entry block (LLVM folds it back). ``poison`` is emitted as
``undef`` (a refinement LLVM allows), GEP flags other than ``inbounds`` are dropped (they only promise more).
LLVM 15+ only has opaque pointers, so typed pointers (the seed's ``i8*``) become ``ptr``. The text functions
return ``str(module)``: llvmlite's printing, which LLVM's parser verifies (:mod:`systolic.llvmir.module`).
"""

from __future__ import annotations

from llvmlite import ir as L

from ..errors import CompileError
from ..amx.isa import INSTRUCTIONS
from .amx_table import FAMILIES, physical_name
from .ir import (ArrayType, Block, ConstantInt, ConstantSpecial, ConstGEP, FloatType, Function, GlobalVariable,
                 Instr, IntType, LabelType, Module, OpaqueType, PtrType, StructType, TileType, Type, Value,
                 VectorType, VoidType, location)
from .ops import OPS

__all__ = ["physical_ir", "internal_ir", "physical_module", "internal_module"]

#: machine opcode -> physical-register intrinsic: configuration, then every modelled tile instruction (its record's)
_PHYS = {**{m.upper(): INSTRUCTIONS[m].intrinsic for m in ("ldtilecfg", "tilerelease")},
         **{m.upper(): physical_name(m) for m, (_k, _f, ok) in FAMILIES.items() if ok}}

_TRIPLE = "x86_64-unknown-linux-gnu"
_LINKAGES = {"private", "internal", "available_externally", "linkonce", "weak", "common", "appending",
             "extern_weak", "linkonce_odr", "weak_odr", "external"}


class _X86Amx(L.Type):
    """LLVM's ``x86_amx`` (a value in a tile register), which llvmlite.ir does not have."""

    def _to_string(self) -> str:
        return "x86_amx"

    def __eq__(self, other) -> bool:
        return isinstance(other, _X86Amx)

    def __hash__(self) -> int:
        return hash("x86_amx")


class _Spelled(L.Type):
    """A type llvmlite.ir lacks, kept as LLVM spelled it when it parsed the input (``bfloat``, ``token``...)."""

    def __init__(self, spelling: str) -> None:
        self.spelling = spelling

    def _to_string(self) -> str:
        return self.spelling

    def __eq__(self, other) -> bool:
        return isinstance(other, _Spelled) and other.spelling == self.spelling

    def __hash__(self) -> int:
        return hash(("spelled", self.spelling))


class _Freeze(L.instructions.Instruction):
    """``%r = freeze <ty> %x`` (LangRef 'freeze'): llvmlite's generic instruction form prints it."""

    def __init__(self, parent, value, name: str = "") -> None:
        super().__init__(parent, value.type, "freeze", [value], name=name)


class _FlaggedCast(L.instructions.CastInstr):
    """A cast with its flags (``zext nneg``, ``trunc nuw nsw``), which llvmlite's CastInstr does not print."""

    def __init__(self, parent, op: str, flags: list[str], val, typ, name: str = "") -> None:
        super().__init__(parent, op, val, typ, name=name)
        self.flags = list(flags)

    def descr(self, buf) -> None:
        op = " ".join([self.opname, *self.flags])
        buf.append(f"{op} {self.operands[0].type} {self.operands[0].get_reference()} to {self.type}\n")


class _Builder:
    """The ``cx`` of :meth:`systolic.compiler.ops.OpDef.build`: our values, types, blocks and functions as
    llvmlite's, and the IRBuilder ``b`` positioned in the block being built."""

    def __init__(self, name: str) -> None:
        self.mod = L.Module(name=name)
        self.mod.triple = _TRIPLE
        self.functions: dict[str, L.Function] = {}
        self.globals: dict[int, L.GlobalVariable] = {}
        self.values: dict[int, L.Value] = {}
        self.blocks: dict[int, L.Block] = {}
        self.pending: list = []
        self.b: L.IRBuilder | None = None

    # ---------------------------------------------------------------------------------------- types
    def t(self, t: Type) -> L.Type:
        if isinstance(t, IntType):
            return L.IntType(t.bits)
        if isinstance(t, PtrType):
            return L.PointerType()
        if isinstance(t, VectorType):
            return L.VectorType(self.t(t.elem), t.count)
        if isinstance(t, ArrayType):
            return L.ArrayType(self.t(t.elem), t.count)
        if isinstance(t, StructType):
            return L.LiteralStructType([self.t(e) for e in t.elems], packed=t.packed)
        if isinstance(t, TileType):
            return _X86Amx()
        if isinstance(t, VoidType):
            return L.VoidType()
        if isinstance(t, LabelType):
            return L.LabelType()
        if isinstance(t, FloatType):
            known = {"half": L.HalfType, "float": L.FloatType, "double": L.DoubleType}.get(t.kind)
            return known() if known else _Spelled(t.kind)
        if isinstance(t, OpaqueType):
            return _Spelled(t.text)
        raise CompileError(f"type {t} has no LLVM form here", rule="to_llvm: the compiler's types")

    # ---------------------------------------------------------------------------------------- values
    def v(self, v: Value) -> L.Value:
        key = id(v)
        if key in self.values:
            return self.values[key]
        if isinstance(v, ConstantInt):
            return L.Constant(self.t(v.type), v.value)
        if isinstance(v, ConstantSpecial):
            if v.kind in ("undef", "poison"):
                return L.Constant(self.t(v.type), L.Undefined)
            return L.Constant(self.t(v.type), None)          # zeroinitializer / null
        if isinstance(v, GlobalVariable):
            return self.globals[id(v)]
        if isinstance(v, Function):
            return self.function(v)
        if isinstance(v, ConstGEP):
            # built where it is first used: the entry block's top (see _define)
            gep = self.b.gep(self.v(v.base), [self.v(i) for i in v.indices], inbounds=v.inbounds,
                             source_etype=self.t(v.source_type), name="cgep")
            self.values[key] = gep
            return gep
        raise CompileError(f"value {v.ref()} has no LLVM form here", rule="to_llvm: values")

    def name(self, ins: Instr) -> str:
        return ins.name or ""

    def block(self, b: Block) -> L.Block:
        return self.blocks[id(b)]

    def later(self, fn) -> None:
        self.pending.append(fn)

    def cast(self, op: str, flags: list[str], val, typ, name: str):
        instr = _FlaggedCast(self.b.block, op, flags, val, typ, name)
        self.b._insert(instr)
        return instr

    def alloca(self, typ, name: str, align: int | None):
        a = self.b.alloca(typ, name=name)
        a.type = L.PointerType()             # llvmlite types it ``typ*``; LLVM 15+ has opaque pointers only
        a.align = align
        return a

    def freeze(self, val, name: str):
        instr = _Freeze(self.b.block, val, name)
        self.b._insert(instr)
        return instr

    # ---------------------------------------------------------------------------------------- module parts
    def function(self, f: Function) -> L.Function:
        fn = self.functions.get(f.name)
        if fn is None:
            fty = L.FunctionType(self.t(f.ret_type), [self.t(p.type) for p in f.params], var_arg=f.varargs)
            fn = self.functions[f.name] = L.Function(self.mod, fty, name=f.name)
            for p, a in zip(f.params, fn.args):
                _attributes(a, p.attrs)
        return fn

    def intrinsic(self, name: str, params: list[L.Type]) -> L.Function:
        fn = self.functions.get(name)
        if fn is None:
            fn = self.functions[name] = L.Function(self.mod, L.FunctionType(L.VoidType(), params), name=name)
        return fn

    def global_variable(self, g: GlobalVariable, name: str, external: bool) -> None:
        vt = self.t(g.value_type)
        gv = L.GlobalVariable(self.mod, vt, name=name)
        gv.type = L.PointerType()            # llvmlite types it ``vt*``; LLVM 15+ has opaque pointers only
        gv.global_constant = g.constant
        if g.align is not None:
            gv.align = g.align
        words = g.linkage.split()
        for w in words:
            if w in _LINKAGES:
                gv.linkage = w
            elif w == "unnamed_addr":
                gv.unnamed_addr = True
        if external or g.external:
            gv.linkage = "external"
            if external:                     # the JIT binds the caller's array: our alignment is what we ask
                gv.align = 64
        else:
            gv.initializer = self.initializer(g, vt)
        self.globals[id(g)] = gv

    def initializer(self, g: GlobalVariable, vt: L.Type) -> L.Constant:
        init = g.initializer
        if isinstance(init, bytes):
            return L.Constant(vt, bytearray(init))
        if isinstance(init, int) and not isinstance(init, bool):
            return L.Constant(vt, init)
        if isinstance(init, list):
            return L.Constant(vt, [L.Constant(vt.element, x) for x in init])
        return L.Constant(vt, None)         # zeroinitializer (and what the reader could not read, as before)

    def define(self, f: Function, instr_builder) -> None:
        fn = self.function(f)
        for p, a in zip(f.params, fn.args):
            a.name = p.name
            self.values[id(p)] = a
        for b in f.blocks:
            self.blocks[id(b)] = fn.append_basic_block(name=b.name)
        self.b = L.IRBuilder(self.blocks[id(f.blocks[0])])
        # constant getelementptr operands first, at the top of the entry block, which dominates every use
        for ins in f.instructions():
            for o in ins.operands:
                if isinstance(o, ConstGEP):
                    self.v(o)
        for b in f.blocks:
            self.b.position_at_end(self.blocks[id(b)])
            for ins in b.instrs:
                out = instr_builder(self, ins)
                if out is not None:
                    self.values[id(ins)] = out
        for fn_ in self.pending:
            fn_()
        self.pending.clear()


_ARG_VALUE_ATTRS = ("align", "dereferenceable", "dereferenceable_or_null")


def _attributes(arg: L.Argument, attrs) -> None:
    """Parameter attributes the reader kept (``noundef``, ``align 64``, ``dereferenceable(8)``...), as llvmlite's;
    one it does not know is left out (they are promises to the optimiser, not semantics)."""
    for a in attrs:
        key, _, rest = a.replace("(", " ").replace(")", "").partition(" ")
        if key in _ARG_VALUE_ATTRS and rest.isdigit():
            setattr(arg.attributes, key, int(rest))
            continue
        try:
            arg.add_attribute(a)
        except ValueError:
            pass


def _instruction(cx: _Builder, ins: Instr):
    d = OPS.get(ins.opcode)
    if d is not None:
        return d.build(cx, ins)
    if ins.opcode in _PHYS:                 # a machine tile instruction: the physical-register intrinsic
        tiles = [L.Constant(L.IntType(8), t) for t in ins.attrs.get("tiles", [])]
        args = tiles + [cx.v(o) for o in ins.operands]
        params = [L.IntType(8)] * len(tiles) + [cx.t(o.type) for o in ins.operands]
        return cx.b.call(cx.intrinsic(_PHYS[ins.opcode], params), args)
    raise CompileError(f"{ins.opcode} has no LLVM form (a pseudo instruction left after allocation?)",
                       location=location(ins), rule="to_llvm: LLVM instructions and machine tile instructions")


def physical_module(machine_module: Module, *, external_globals: bool = False,
                    rename: dict[str, str] | None = None) -> L.Module:
    """The compiled module with the physical-register tile intrinsics (emission (b)), as an llvmlite.ir module.

    ``external_globals``: declare the globals ``external`` (the JIT binds them to the caller's arrays);
    ``rename`` maps global names to the symbols used instead.
    """
    cx = _Builder("systolic.physical")
    for g in machine_module.globals.values():
        cx.global_variable(g, (rename or {}).get(g.name, g.name), external_globals)
    for f in machine_module.functions.values():
        if f.declaration and not f.name.startswith("llvm.x86."):
            cx.function(f)              # every other declaration, called or not (the AMX ones come with their calls)
    for f in machine_module.functions.values():
        if not f.declaration:
            cx.define(f, _instruction)
    return cx.mod


def internal_module(final_module: Module) -> L.Module:
    """LLVM's final form (x86_amx + ``*.internal`` intrinsics) after our shape propagation (emission (c))."""
    cx = _Builder("systolic.internal")
    for g in final_module.globals.values():
        cx.global_variable(g, g.name, False)
    for f in final_module.functions.values():
        if not f.declaration:
            cx.define(f, _instruction)  # the callees are declared as the calls reach them
    return cx.mod


def physical_ir(machine_module: Module, *, external_globals: bool = False, rename: dict[str, str] | None = None) \
        -> str:
    """LLVM IR text of :func:`physical_module` (llvmlite's printing)."""
    return str(physical_module(machine_module, external_globals=external_globals, rename=rename))


def internal_ir(final_module: Module) -> str:
    """LLVM IR text of :func:`internal_module` (llvmlite's printing)."""
    return str(internal_module(final_module))
