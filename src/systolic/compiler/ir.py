"""The tile IR: a small SSA IR shaped like the subset of LLVM IR that AMX code uses.

It holds what the seed proposal (specs/amx-llvm-programming-model.md sections 1, 2, 5) and LLVM's realisation
(REFERENCE.md section 7) need: integer and pointer scalars, ``<256 x i32>`` tile vectors (the seed's
``_tile_data``), the ``x86_amx`` tile type, basic blocks, phi, branches, calls, loads/stores and
getelementptr. The same classes carry the later compiler levels: after ``lower`` the tile intrinsics become
pseudo tile instructions (opcode ``PTILELOADDV`` ...) with shape operands; after ``regalloc`` they become the
real instructions (``TILELOADD`` ...) naming physical tiles (seed section 8).

Every value has a name unique in its function (numbers as LLVM writes them are names too); passes create new
names with :meth:`Function.fresh`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

__all__ = [
    "Type", "IntType", "PtrType", "VectorType", "ArrayType", "TileType", "VoidType", "LabelType", "StructType",
    "FloatType", "OpaqueType", "align_of", "field_offsets",
    "I1", "I8", "I16", "I32", "I64", "PTR", "VOID", "LABEL", "X86_AMX", "V256I32",
    "size_of", "is_tile_vector", "is_tile",
    "Value", "ConstantInt", "ConstantSpecial", "GlobalVariable", "Argument", "ConstGEP",
    "Function", "Block", "Instr", "Module",
    "BINARY_OPS", "CAST_OPS", "ICMP_PREDICATES", "TERMINATORS",
]


# --------------------------------------------------------------------------------------------- types
class Type:
    """An IR type; subclasses are frozen dataclasses, so equal types compare equal."""


@dataclass(frozen=True)
class IntType(Type):
    bits: int

    def __str__(self) -> str:
        return f"i{self.bits}"


@dataclass(frozen=True)
class PtrType(Type):
    """``ptr`` (opaque, pointee None) or a typed pointer ``T*`` as in the seed's IR (LLVM <= 14)."""

    pointee: Type | None = None

    def __str__(self) -> str:
        return "ptr" if self.pointee is None else f"{self.pointee}*"


@dataclass(frozen=True)
class VectorType(Type):
    count: int
    elem: Type

    def __str__(self) -> str:
        return f"<{self.count} x {self.elem}>"


@dataclass(frozen=True)
class ArrayType(Type):
    count: int
    elem: Type

    def __str__(self) -> str:
        return f"[{self.count} x {self.elem}]"


@dataclass(frozen=True)
class StructType(Type):
    """A literal or named struct (``%struct.__tile1024i_str = type <{ i16, i16, [60 x i8], <256 x i32> }>``).

    Equality is structural (the name is kept for printing only): LLVM's layout depends on the fields alone."""

    elems: tuple
    packed: bool = False
    name: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        # always the literal body: the printed IR then needs no ``%name = type`` definitions
        inner = ", ".join(str(e) for e in self.elems)
        return f"<{{ {inner} }}>" if self.packed else f"{{ {inner} }}"


@dataclass(frozen=True)
class FloatType(Type):
    """half / bfloat / float / double...: read so that declarations and globals keep their types; the runner
    computes no floating point (functions doing so are refused by the reader)."""

    kind: str

    def __str__(self) -> str:
        return self.kind


@dataclass(frozen=True)
class OpaqueType(Type):
    """A type the compiler does not model (target extension types, metadata, token, ...), kept as LLVM prints
    it so that declarations still read; a function computing with it is refused."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class TileType(Type):
    """LLVM's ``x86_amx``: a value living in a tile register (no in-memory layout of its own)."""

    def __str__(self) -> str:
        return "x86_amx"


@dataclass(frozen=True)
class VoidType(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class LabelType(Type):
    def __str__(self) -> str:
        return "label"


I1, I8, I16, I32, I64 = IntType(1), IntType(8), IntType(16), IntType(32), IntType(64)
PTR, VOID, LABEL, X86_AMX = PtrType(), VoidType(), LabelType(), TileType()
#: the seed's ``_tile_data``: 1024 bytes, the largest tile (seed section 1)
V256I32 = VectorType(256, I32)


_FLOAT_BYTES = {"half": 2, "bfloat": 2, "float": 4, "double": 8, "fp128": 16, "x86_fp80": 16}


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def align_of(t: Type) -> int:
    """ABI alignment in bytes (x86-64 DataLayout ``e-m:e-...-i64:64-i128:128-f80:128-n8:16:32:64-S128``)."""
    if isinstance(t, IntType):
        return min(16, _pow2_at_least(max(1, (t.bits + 7) // 8)))
    if isinstance(t, PtrType):
        return 8
    if isinstance(t, FloatType):
        return min(16, _FLOAT_BYTES.get(t.kind, 8))
    if isinstance(t, ArrayType):
        return align_of(t.elem)
    if isinstance(t, VectorType):  # LLVM: a vector is aligned to its size rounded up to a power of two
        return _pow2_at_least(max(1, t.count * size_of(t.elem)))
    if isinstance(t, StructType):
        return 1 if t.packed else max([align_of(e) for e in t.elems] or [1])
    if isinstance(t, TileType):
        return 64
    raise TypeError(f"type {t} has no alignment")


def field_offsets(t: StructType) -> list[int]:
    """Byte offset of each field (LLVM StructLayout: each field at its alignment unless packed)."""
    offs, off = [], 0
    for e in t.elems:
        if not t.packed:
            a = align_of(e)
            off = (off + a - 1) // a * a
        offs.append(off)
        off += size_of(e)
    return offs


def size_of(t: Type) -> int:
    """Allocation size in bytes (LLVM DataLayout for x86-64: i1 takes a byte, pointers 8 bytes)."""
    if isinstance(t, IntType):
        return max(1, (t.bits + 7) // 8)
    if isinstance(t, PtrType):
        return 8
    if isinstance(t, (VectorType, ArrayType)):
        return t.count * size_of(t.elem)
    if isinstance(t, TileType):
        return 1024
    if isinstance(t, FloatType) and t.kind in _FLOAT_BYTES:
        return _FLOAT_BYTES[t.kind]
    if isinstance(t, StructType):
        if not t.elems:
            return 0
        end = field_offsets(t)[-1] + size_of(t.elems[-1])
        a = align_of(t)
        return (end + a - 1) // a * a
    raise TypeError(f"type {t} has no size")


def is_tile_vector(t: Type) -> bool:
    """A 1024-byte integer vector: the seed's ``<256 x i32>`` and the other widths LLVM's tile casts take
    (``<512 x i16>``, ``<1024 x i8>``): all are the same 16 x 64 byte image."""
    return isinstance(t, VectorType) and isinstance(t.elem, IntType) and t.elem.bits % 8 == 0 and \
        t.count * t.elem.bits == 8192


def is_tile(t: Type) -> bool:
    """A type that holds tile data: ``x86_amx`` or a 1024-byte integer vector (the seed's ``<256 x i32>``)."""
    return isinstance(t, TileType) or is_tile_vector(t)


# --------------------------------------------------------------------------------------------- values
class Value:
    """Anything an instruction can use. ``name`` is without its sigil."""

    type: Type
    name: str | None = None

    def ref(self) -> str:  # how a use prints
        return f"%{_quote(self.name)}"


def _quote(name: str | None) -> str:
    import re
    if name is None:
        return "<unnamed>"
    if re.fullmatch(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*|[0-9]+", name):
        return name
    return '"' + name.replace('"', "\\22") + '"'


class ConstantInt(Value):
    """An integer constant; ``value`` is kept as written (signed), interpreted modulo 2**bits."""

    def __init__(self, type: Type, value: int) -> None:
        self.type, self.value = type, int(value)

    def ref(self) -> str:
        if self.type == I1:
            return "true" if self.value & 1 else "false"
        return str(self.value)

    def __eq__(self, other) -> bool:
        return isinstance(other, ConstantInt) and other.type == self.type and other.value == self.value

    def __hash__(self) -> int:
        return hash((self.type, self.value))


class ConstantSpecial(Value):
    """``undef``, ``poison``, ``zeroinitializer`` or ``null``."""

    def __init__(self, type: Type, kind: str) -> None:
        self.type, self.kind = type, kind

    def ref(self) -> str:
        return self.kind

    def __eq__(self, other) -> bool:
        return isinstance(other, ConstantSpecial) and (other.type, other.kind) == (self.type, self.kind)

    def __hash__(self) -> int:
        return hash((self.type, self.kind))


class GlobalVariable(Value):
    """``@name = global T init``: lives in a memory region of ``size_of(value_type)`` bytes (module.run)."""

    def __init__(self, name: str, value_type: Type, *, constant: bool = False, linkage: str = "",
                 initializer: str = "zeroinitializer", align: int | None = None, typed_ptr: bool = False,
                 external: bool = False) -> None:
        self.name, self.value_type, self.constant, self.linkage = name, value_type, constant, linkage
        self.initializer, self.align, self.external = initializer, align, external
        self.type = PtrType(value_type) if typed_ptr else PTR
        #: why the runner cannot make this global's bytes itself (None: it can); the caller must then give them
        self.unreadable: str | None = None

    def ref(self) -> str:
        return f"@{_quote(self.name)}"


class Argument(Value):
    def __init__(self, type: Type, name: str, attrs: tuple[str, ...] = ()) -> None:
        self.type, self.name, self.attrs = type, name, tuple(attrs)


class ConstGEP(Value):
    """A ``getelementptr [inbounds] (T, P base, idx...)`` constant expression (seed section 5)."""

    def __init__(self, source_type: Type, base: Value, indices: list[Value], inbounds: bool, type: Type) -> None:
        self.source_type, self.base, self.indices, self.inbounds, self.type = \
            source_type, base, list(indices), inbounds, type

    def ref(self) -> str:
        ib = "inbounds " if self.inbounds else ""
        idx = "".join(f", {i.type} {i.ref()}" for i in self.indices)
        return f"getelementptr {ib}({self.source_type}, {self.base.type} {self.base.ref()}{idx})"


#: the switch and the dispatch tables live in :mod:`.ops`; these names stay for the passes that test opcodes
BINARY_OPS = ("add", "sub", "mul", "sdiv", "udiv", "srem", "urem", "shl", "lshr", "ashr", "and", "or", "xor")
CAST_OPS = ("sext", "zext", "trunc", "bitcast", "ptrtoint", "inttoptr", "addrspacecast")
ICMP_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
TERMINATORS = ("br", "switch", "ret", "unreachable")


class Instr(Value):
    """One instruction. ``opcode`` is the LLVM opcode (or a pseudo/machine opcode after lowering).

    ``operands`` are Values; ``attrs`` holds the rest: ``pred`` (icmp), ``flags`` (nsw/nuw/exact/inbounds),
    ``callee`` (Function, for call), ``blocks`` (phi incoming blocks / branch targets), ``source_type`` (gep),
    ``alloc_type`` (alloca), ``align``, ``tail``, ``tiles`` (physical tiles of machine instructions), ``loc``.
    """

    def __init__(self, opcode: str, type: Type, operands: list[Value] | None = None, name: str | None = None,
                 **attrs) -> None:
        self.opcode, self.type, self.name = opcode, type, name
        self.operands = list(operands or [])
        self.attrs = attrs
        self.block: Block | None = None

    @property
    def is_terminator(self) -> bool:
        return self.opcode in TERMINATORS

    @property
    def callee(self):
        return self.attrs.get("callee")

    @property
    def intrinsic(self) -> str | None:
        """The callee's name for a call (e.g. ``llvm.x86.tdpbssd.internal``), else None."""
        c = self.attrs.get("callee")
        return c.name if (self.opcode == "call" and c is not None) else None

    def __repr__(self) -> str:
        return f"<Instr {self.opcode} %{self.name}>"


class Block(Value):
    def __init__(self, name: str) -> None:
        self.name, self.type = name, LABEL
        self.instrs: list[Instr] = []
        self.function: Function | None = None

    def append(self, ins: Instr) -> Instr:
        ins.block = self
        self.instrs.append(ins)
        return ins

    def insert(self, index: int, ins: Instr) -> Instr:
        ins.block = self
        self.instrs.insert(index, ins)
        return ins

    @property
    def terminator(self) -> Instr | None:
        return self.instrs[-1] if self.instrs and self.instrs[-1].is_terminator else None

    @property
    def successors(self) -> list["Block"]:
        t = self.terminator
        if t is None or t.opcode not in ("br", "switch"):
            return []
        out = []
        for b in t.attrs.get("blocks", []):  # a switch may name one block for several cases
            if b not in out:
                out.append(b)
        return out

    def phis(self) -> list[Instr]:
        return [i for i in self.instrs if i.opcode == "phi"]

    def first_non_phi(self) -> int:
        for k, i in enumerate(self.instrs):
            if i.opcode != "phi":
                return k
        return len(self.instrs)

    def __repr__(self) -> str:
        return f"<Block {self.name}>"


class Function(Value):
    def __init__(self, name: str, ret_type: Type, params: list[Argument], *, declaration: bool = False,
                 prefix: str = "", suffix: str = "", implicit: bool = False, varargs: bool = False) -> None:
        self.name, self.ret_type, self.params = name, ret_type, list(params)
        self.type = PTR
        self.blocks: list[Block] = []
        self.declaration, self.implicit, self.varargs = declaration, implicit, varargs
        self.prefix, self.suffix = prefix, suffix  # linkage/attributes text kept for printing
        self._counter = 0
        self.meta: dict = {}

    def ref(self) -> str:
        return f"@{_quote(self.name)}"

    def add_block(self, name: str) -> Block:
        b = Block(name)
        b.function = self
        self.blocks.append(b)
        return b

    def block_named(self, name: str) -> Block | None:
        for b in self.blocks:
            if b.name == name:
                return b
        return None

    def names(self) -> set[str]:
        s = {p.name for p in self.params} | {b.name for b in self.blocks}
        s |= {i.name for b in self.blocks for i in b.instrs if i.name is not None}
        return s

    def fresh(self, prefix: str = "t") -> str:
        taken = self.names()
        while True:
            self._counter += 1
            n = f"{prefix}{self._counter}"
            if n not in taken:
                return n

    def instructions(self) -> Iterator[Instr]:
        for b in self.blocks:
            yield from b.instrs

    @property
    def entry(self) -> Block:
        return self.blocks[0]

    def predecessors(self) -> dict[Block, list[Block]]:
        preds: dict[Block, list[Block]] = {b: [] for b in self.blocks}
        for b in self.blocks:
            for s in b.successors:
                if b not in preds[s]:
                    preds[s].append(b)
        return preds

    def __repr__(self) -> str:
        return f"<Function @{self.name}>"


@dataclass
class Module:
    functions: dict[str, Function] = field(default_factory=dict)
    globals: dict[str, GlobalVariable] = field(default_factory=dict)
    header: list[str] = field(default_factory=list)  # source_filename / target lines, kept verbatim
    source: str | None = None
    #: functions the reader refused (name -> UnmodelledConstruct); they stay in ``functions`` as declarations
    refused: dict = field(default_factory=dict)

    def _mangled(self, name: str) -> str:
        """The IR name of the one function whose C++ source name is ``name`` (else ``name`` unchanged; several:
        an InvalidValue listing them)."""
        from ..errors import InvalidValue
        hits = [k for k, f in self.functions.items() if (not f.declaration or k in self.refused)
                and _source_name(k) == name]
        if len(hits) > 1:
            raise InvalidValue(f"@{name} names {len(hits)} C++ functions (overloads); give the mangled name",
                               rule="module.run: a function by its IR name, or a unique C++ source name",
                               values={"function": name, "candidates": hits})
        return hits[0] if hits else name

    def function(self, name: str) -> Function:
        """The defined function ``name``; a C++ function may also be named by its source name (``f`` for the
        Itanium-mangled ``_Z1fii``) when exactly one defined function has that name."""
        from ..errors import InvalidValue
        if name not in self.functions:
            name = self._mangled(name)
        f = self.functions.get(name)
        if name in self.refused:
            raise self.refused[name]
        if f is None or f.declaration:
            raise InvalidValue(f"no function @{name} defined in the module",
                               rule="module.run: the function must be defined in the IR",
                               values={"function": name, "defined": sorted(k for k, v in self.functions.items()
                                                                           if not v.declaration)})
        return f


def _source_name(mangled: str) -> str | None:
    """``f`` of an Itanium-mangled ``_Z1fii`` (a function at namespace scope), else None."""
    import re
    m = re.match(r"_Z(\d+)", mangled)
    if m is None:
        return None
    n, start = int(m.group(1)), m.end()
    return mangled[start:start + n] if len(mangled) >= start + n else None


def location(ins: Instr) -> str:
    """``@fn/block/%name`` (or the source line when known) for CompileError messages."""
    b = ins.block
    f = b.function if b is not None else None
    where = f"@{f.name}:{b.name}" if f is not None else "?"
    what = f"%{ins.name}" if ins.name else ins.opcode
    line = ins.attrs.get("loc")
    return f"{where}: {what}" + (f" (line {line})" if line else "")


def replace_uses(f: Function, old: Value, new: Value) -> None:
    """Replace every use of ``old`` in ``f`` (phi operands included) with ``new``."""
    for ins in f.instructions():
        for k, v in enumerate(ins.operands):
            if v is old:
                ins.operands[k] = new


def users(f: Function) -> dict[int, list[tuple[Instr, int]]]:
    """id(value) -> [(user instruction, operand index)] for every value used in ``f``."""
    out: dict[int, list[tuple[Instr, int]]] = {}
    for ins in f.instructions():
        for k, v in enumerate(ins.operands):
            out.setdefault(id(v), []).append((ins, k))
    return out


def intrinsic(module: Module, name: str, ret: Type, params: list[Type]) -> Function:
    """The declaration of intrinsic ``name`` in ``module`` (created, unprinted, when missing)."""
    f = module.functions.get(name)
    if f is None:
        f = Function(name, ret, [Argument(t, str(k)) for k, t in enumerate(params)], declaration=True,
                     implicit=True)
        module.functions[name] = f
    return f
