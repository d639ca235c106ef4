"""The tile compiler's front door: LLVM parses and verifies the module, this module translates it.

LLVM's own parser (``llvmlite.binding``, LLVM 22 like clang 22) reads the text, so every module LLVM accepts is
read, and its syntax and verifier errors reach the user as :class:`~systolic.errors.AsmSyntaxError` /
``IRVerifyError`` (through the shared front door :mod:`systolic.llvmir`). The translation walks LLVM's functions,
blocks and instructions into the compiler's IR (:mod:`.ir`); each opcode is read by its definition in
:mod:`.ops`.

What the compiler does not model (inline asm, floating point, vector arithmetic, atomics, indirect calls, AMX
families the TileMachine lacks, ...) is an :class:`~systolic.errors.UnmodelledConstruct` naming the construct,
the function and the IR line. The refusal is per function: ``Module.refused`` keeps it, the function becomes a
declaration, and the module's other functions still compile and run; calling the refused function raises it.

llvmlite shows some facts only in an instruction's text (REFERENCE.md section 8): predicates, flags, GEP source
and alloca types, alignment, switch case values, global initialisers and constant expressions. Those are read
from LLVM's own printing of the one value (``str(value)``), never from the user's text; the user's text is used
only to find an instruction's line number.
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm

from ..errors import AsmSyntaxError, UnmodelledConstruct
from ..llvmir import facts
from ..llvmir import module as llvmir_module
from .amx_table import CONFIG, PHYSICAL, SHAPED, is_cast
from .ir import (LABEL, VOID, X86_AMX, Argument, ArrayType, Block, ConstantInt, ConstantSpecial, ConstGEP,
                 FloatType, Function, GlobalVariable, Instr, IntType, Module, OpaqueType, PtrType, StructType,
                 TileType, Type, Value, VectorType, is_tile_vector, size_of)
from .int_intrinsics import base_name as int_base_name
from .ops import OPS, verify_function

__all__ = ["parse", "parse_type", "read_module", "DROPPED_INTRINSICS", "RUNNER_INTRINSICS"]

#: intrinsics with no effect on the values the runner computes: dropped while reading
DROPPED_INTRINSICS = ("llvm.dbg.", "llvm.lifetime.", "llvm.assume", "llvm.experimental.noalias.scope.decl",
                      "llvm.donothing", "llvm.sideeffect", "llvm.invariant.", "llvm.pseudoprobe")
#: intrinsics the runner executes itself (memory), besides the AMX ones of amx_table
RUNNER_INTRINSICS = ("llvm.memset.", "llvm.memcpy.", "llvm.memmove.")
_MAX_BYTES = 1 << 28  # largest global/alloca the byte memory model makes
_FLAG_ORDER = ("inbounds", "nusw", "nuw", "nsw", "exact", "disjoint", "nneg", "samesign")


# --------------------------------------------------------------------------------------------- parsing
def _parse_ref(text: str, source: str | None):
    """LLVM's parse + verify (the shared front door :mod:`systolic.llvmir.module`)."""
    return llvmir_module.parse(text, name=source or "<ir>", verify=True)


# --------------------------------------------------------------------------------------------- type text
_TYPE_TOKEN = re.compile(r"\s*(i\d+|ptr(?:\s+addrspace\(\d+\))?|x86_amx|void|half|bfloat|float|double|fp128|"
                         r"x86_fp80|label|metadata|token|%(?:[-a-zA-Z$._0-9]+|\"[^\"]*\")|<\{|\}>|[\[\]<>{},x]|\d+)")


class _TypeText:
    """Types as LLVM prints them inside a constant expression (the one place llvmlite gives no TypeRef)."""

    def __init__(self, text: str, structs: dict[str, StructType]):
        self.toks = [m.group(1) for m in _TYPE_TOKEN.finditer(text)]
        self.k, self.structs = 0, structs

    def next(self) -> str:
        t = self.toks[self.k]
        self.k += 1
        return t

    def type(self) -> Type:
        t = self.next()
        if re.fullmatch(r"i\d+", t):
            return IntType(int(t[1:]))
        if t.startswith("ptr"):
            return PtrType()
        if t == "x86_amx":
            return X86_AMX
        if t in ("half", "bfloat", "float", "double", "fp128", "x86_fp80"):
            return FloatType(t)
        if t.startswith("%"):
            name = t[1:].strip('"')
            return self.structs.get(name, OpaqueType(t))
        if t in ("[", "<"):
            n = int(self.next())
            self.next()  # x
            e = self.type()
            self.next()  # ] or >
            return ArrayType(n, e) if t == "[" else VectorType(n, e)
        if t in ("{", "<{"):
            elems = []
            while self.toks[self.k] not in ("}", "}>"):
                elems.append(self.type())
                if self.toks[self.k] == ",":
                    self.k += 1
            self.next()
            return StructType(tuple(elems), packed=t == "<{")
        return OpaqueType(t)


def _c_string(body: str) -> bytes:
    return bytes(int(m[1:], 16) if m.startswith("\\") else ord(m)
                 for m in re.findall(r"\\[0-9A-Fa-f]{2}|.", body, re.S))


# --------------------------------------------------------------------------------------------- translation
class ModuleReader:
    def __init__(self, ref, text: str, source: str | None):
        self.ref, self.text, self.source = ref, text, source
        self.module = Module(source=source)
        self.types: dict[str, Type] = {}
        self.structs: dict[str, StructType] = {}
        self.lines = text.splitlines()
        self.define_line = self._define_lines()

    # ------------------------------------------------------------------ types
    def type(self, t) -> Type:
        key = str(t)
        got = self.types.get(key)
        if got is None:
            got = self.types[key] = self._type(t, key)
        return got

    def _type(self, t, key: str) -> Type:
        try:
            kind = t.type_kind.name
        except ValueError:  # target extension types
            return OpaqueType(key)
        if kind == "integer":
            return IntType(t.type_width)
        if kind == "pointer":
            return PtrType()
        if kind == "x86_amx":
            return X86_AMX
        if kind == "void":
            return VOID
        if kind == "label":
            return LABEL
        if kind in ("half", "bfloat", "float", "double", "fp128", "x86_fp80"):
            return FloatType(kind)
        if kind in ("array", "vector"):
            elem = self.type(next(iter(t.elements)))
            return (ArrayType if kind == "array" else VectorType)(t.element_count, elem)
        if kind == "struct":
            if t.is_opaque_struct:
                return OpaqueType(key)
            st = StructType(tuple(self.type(e) for e in t.elements), packed=t.is_packed_struct,
                            name=t.name or None)
            if t.name:
                self.structs[t.name] = st
            return st
        return OpaqueType(key)

    # ------------------------------------------------------------------ module
    def read(self) -> Module:
        m = self.module
        for st in self.ref.struct_types:
            self.type(st)
        for key in ("source_filename", "target datalayout", "target triple"):
            for line in str(self.ref).splitlines()[:8]:
                if line.startswith(key + " ="):
                    m.header.append(line)
        for g in self.ref.global_variables:
            m.globals[g.name] = self.global_variable(g)
        fns = [fn for fn in self.ref.functions if not fn.name.startswith("llvm.dbg.")]
        for fn in fns:  # every function first: a call may come before its callee's definition
            m.functions[fn.name] = self.signature(fn)
        for fn in fns:
            if not fn.is_declaration:
                f = m.functions[fn.name]
                try:
                    FunctionReader(self, fn, f).read()
                    verify_function(f)  # the LangRef typing rules of ops.py hold for what was read
                except UnmodelledConstruct as err:
                    f.blocks = []
                    f.declaration = True
                    f.refused = err
                    m.refused[f.name] = err
        m.text = self.text
        return m

    def global_variable(self, g) -> GlobalVariable:
        vt = self.type(g.global_value_type)
        text = str(g)
        head, _, rest = text.partition(" = ")
        m = re.match(r"(.*?)\b(global|constant)\s", rest)
        linkage, kind = (m.group(1).strip(), m.group(2)) if m else ("", "global")
        body = rest[m.end():] if m else ""
        tstr = str(g.global_value_type)
        init_text = body[len(tstr):].strip() if body.startswith(tstr) else ""
        parts = facts.split_top_level(init_text)
        gv = GlobalVariable(g.name, vt, constant=kind == "constant", linkage=linkage, external=g.is_declaration)
        for p in parts[1:]:
            am = re.fullmatch(r"align (\d+)", p)
            if am:
                gv.align = int(am.group(1))
        if g.is_declaration:
            gv.initializer = None
        else:
            gv.initializer = self.initializer(vt, parts[0] if parts else "")
        try:
            size = size_of(vt)
        except TypeError:
            size = None
        if size is None or size > _MAX_BYTES:
            gv.unreadable = f"global @{g.name} of type {vt} has no size the byte memory model holds"
        elif gv.initializer is None and not g.is_declaration:
            gv.unreadable = f"global @{g.name}'s initializer {parts[0][:60] if parts else ''} is not readable " \
                            "as bytes (integers, strings and integer arrays are)"
        return gv

    def initializer(self, vt: Type, s: str):
        """The initial value as the runner keeps it: 'zeroinitializer', an int, bytes or a list of ints; None
        for initialisers the byte memory model does not read (floats, pointers, structs)."""
        if s in ("zeroinitializer", "undef", "poison"):
            return "zeroinitializer"
        if isinstance(vt, IntType) and re.fullmatch(r"-?\d+", s):
            return int(s)
        if isinstance(vt, IntType) and s in ("true", "false"):
            return int(s == "true")
        if s.startswith('c"') and s.endswith('"'):
            return _c_string(s[2:-1])
        if s[:1] in ("[", "<") and isinstance(vt, (ArrayType, VectorType)) and isinstance(vt.elem, IntType):
            vals = []
            for item in facts.split_top_level(s[1:-1]):
                # an undef/poison element may hold any value: its bytes are 0 here, as LLVM's code generator
                # emits them (a program that reads them computes with an unspecified value either way)
                tm = re.fullmatch(r"i\d+ (-?\d+|true|false|poison|undef)", item)
                if tm is None:
                    return None
                v = tm.group(1)
                vals.append(int(v == "true") if v in ("true", "false", "poison", "undef") else int(v))
            return vals if len(vals) == vt.count else None
        return None

    def signature(self, fn) -> Function:
        ft = fn.global_value_type
        ret = self.type(ft.get_function_return())
        params = []
        for k, a in enumerate(fn.arguments):
            attrs = tuple(x.decode() if isinstance(x, bytes) else str(x) for x in a.attributes)
            attrs = tuple(x for x in attrs if re.fullmatch(r"[a-z_]+|align \d+|dereferenceable(_or_null)?\(\d+\)",
                                                            x))
            params.append(Argument(self.type(a.type), a.name or "", attrs))
        link = fn.linkage.name
        prefix = "" if link == "external" else link.replace("_any", "").replace("linker_private", "private")
        f = Function(fn.name, ret, params, declaration=fn.is_declaration, prefix=prefix,
                     varargs=ft.is_function_vararg)
        f.meta["loc"] = self.define_line.get(fn.name)
        if fn.is_declaration:  # declarations print their parameters unnamed-numbered
            for k, p in enumerate(f.params):
                p.name = p.name or str(k)
        return f

    def _define_lines(self) -> dict[str, int]:
        out = {}
        for k, line in enumerate(self.lines):
            m = re.match(r"\s*define\b[^@]*@(\"[^\"]*\"|[-a-zA-Z$._0-9]+)\s*\(", line)
            if m:
                out[m.group(1).strip('"')] = k + 1
        return out


class FunctionReader:
    """Translates one function; ops.OPS[opcode].read(self, inst, shell) reads each instruction through it."""

    def __init__(self, mr: ModuleReader, fn, f: Function):
        self.mr, self.fn, self.f = mr, fn, f
        self.values: dict = {}
        self.blocks: dict = {}
        self.texts: dict = {}
        self.line_of: dict = {}

    # ------------------------------------------------------------------ services for the op definitions
    def text(self, inst) -> str:
        t = self.texts.get(inst)
        if t is None:
            t = self.texts[inst] = str(inst).strip()
        return t

    def operands(self, inst) -> list:
        return list(inst.operands)

    def refuse(self, inst, construct: str, rule: str = "what systolic's compiler models") -> None:
        line = self.line_of.get(inst)
        where = f"@{self.f.name}" + (f", line {line}" if line else "")
        values = {"construct": construct, "function": self.f.name, "line": line}
        src = facts.debug_line(self.mr.ref, self.text(inst)) if "!dbg" in self.text(inst) else None
        if src is not None:  # compiled with -g: the C/C++ source line too
            # the file's own name: clang compiled a copy in a temporary directory
            values["source"] = f"{(src[0] or '?').rsplit('/', 1)[-1]}:{src[1]}:{src[2]}"
            where += f" ({values['source']})"
        raise UnmodelledConstruct(
            f"{construct} in @{self.f.name} is not modelled{f' (line {line})' if line else ''}: "
            f"{self.text(inst).split(', !dbg')[0][:120]}",
            location=where, rule=rule, values=values)

    def value(self, v) -> Value:
        kind = v.value_kind.name
        if kind in ("instruction", "argument"):
            got = self.values.get(v)
            if got is None:  # an instruction that was dropped (debug/lifetime intrinsics have no result)
                raise self._construct_error(v, "use of a dropped value")
            return got
        if kind == "basic_block":
            return self.block(v)
        return self.constant(v)

    def _construct_error(self, v, what):
        return UnmodelledConstruct(f"{what} {str(v)[:80]} in @{self.f.name}", location=f"@{self.f.name}",
                                   values={"construct": what, "function": self.f.name, "line": None})

    def constant(self, v) -> Value:
        kind = v.value_kind.name
        t = self.mr.type(v.type)
        if kind == "constant_int":
            return ConstantInt(t, facts.int_value(v, signed=t.bits > 1))
        if kind == "constant_pointer_null":
            return ConstantSpecial(t, "null")
        if kind in ("undef_value", "poison_value"):
            return ConstantSpecial(t, "undef" if kind == "undef_value" else "poison")
        if kind == "constant_aggregate_zero":
            return ConstantSpecial(t, "zeroinitializer")
        if kind == "global_variable":
            return self.mr.module.globals[v.name]
        if kind == "function":
            return self.mr.module.functions[v.name]
        if kind == "constant_expr":
            return self.const_expr(str(v), v)
        raise self._construct_error(v, kind.replace("_", " "))

    def const_expr(self, s: str, v=None) -> Value:
        """A constant expression from LLVM's printing of it: ``ptr getelementptr inbounds (i8, ptr @buf, i64
        64)``; pointer casts fold to their operand (opaque pointers). Others are refused."""
        s = s.strip()
        m = re.match(r"(ptr(?:\s+addrspace\(\d+\))?|i\d+)\s+(.*)$", s, re.S)
        if m is None:
            raise self._construct_error(v or s, "constant expression")
        ty_text, body = m.group(1), m.group(2).strip()
        if body.startswith("@"):
            name = body[1:].strip('"')
            g = self.mr.module.globals.get(name) or self.mr.module.functions.get(name)
            if g is None:
                raise self._construct_error(s, "constant")
            return g
        if body == "null":
            return ConstantSpecial(PtrType(), "null")
        if re.fullmatch(r"-?\d+", body):
            return ConstantInt(IntType(int(ty_text[1:])), int(body))
        gm = re.match(r"getelementptr\s+((?:(?:inbounds|nuw|nusw|inrange\([^)]*\))\s+)*)\((.*)\)$", body, re.S)
        if gm:
            flags = gm.group(1).split()
            args = facts.split_top_level(gm.group(2))
            src = _TypeText(args[0], self.mr.structs).type()
            base = self.const_expr(args[1])
            idx = [self.const_expr(a) for a in args[2:]]
            for i in idx:
                if not isinstance(i, ConstantInt):
                    raise self._construct_error(s, "getelementptr constant with a non-integer index")
            self.check_gep(None, src, idx)
            return ConstGEP(src, base, idx, "inbounds" in flags, PtrType())
        cm = re.match(r"(bitcast|addrspacecast)\s+\((.*)\s+to\s+ptr(?:\s+addrspace\(\d+\))?\)$", body, re.S)
        if cm:
            return self.const_expr(cm.group(2))
        raise self._construct_error(s, "constant expression")

    def block(self, b) -> Block:
        return self.blocks[b]

    def function(self, fref) -> Function:
        return self.mr.module.functions[fref.name]

    def flags(self, inst) -> list[str]:
        """Poison-generating flags in LLVM's printing order (so the printer writes what LLVM writes)."""
        got = facts.flags(self.text(inst))
        return [f for f in _FLAG_ORDER if f in got]

    def predicate(self, inst) -> str:
        return facts.predicate(self.text(inst))

    def switch_values(self, inst) -> list[int]:
        return [v for v, _dest in facts.switch_cases(self.text(inst))]

    def align(self, inst) -> int | None:
        m = re.search(r", align (\d+)", self.text(inst))
        return int(m.group(1)) if m else None

    def is_atomic(self, inst) -> bool:
        return " atomic " in f" {self.text(inst)} "

    def gep_source_type(self, inst) -> Type:
        return _TypeText(facts.gep_source_type(self.text(inst)), self.mr.structs).type()

    def alloca_type(self, inst) -> Type:
        return _TypeText(facts.alloca_type(self.text(inst)), self.mr.structs).type()

    def check_gep(self, inst, src: Type, idx: list[Value]) -> None:
        t = src
        for k, i in enumerate(idx[1:]):
            if isinstance(t, StructType):
                t = t.elems[i.value] if isinstance(i, ConstantInt) else None
            elif isinstance(t, (ArrayType, VectorType)):
                t = t.elem
            else:
                t = None
            if t is None:
                break
        try:
            if t is None:
                raise TypeError
            size_of(src)
            size_of(t)
        except TypeError:
            if inst is None:
                raise self._construct_error(str(src), "getelementptr over an unsized type") from None
            self.refuse(inst, f"getelementptr over {src}", "getelementptr over sized integer/pointer aggregates")

    def check_call(self, inst, ins: Instr) -> None:
        name = ins.attrs["callee"].name
        if name.startswith("llvm."):
            self.check_intrinsic(inst, ins, name)
        for o in ins.operands:
            if not _modelled_arg(o.type):
                self.refuse(inst, f"call of @{name} with a {o.type} argument",
                            "calls pass integers, pointers and tiles")
        if not _modelled_arg(ins.type) and ins.type != VOID:
            self.refuse(inst, f"call of @{name} returning {ins.type}", "calls return integers, pointers or tiles")

    def check_intrinsic(self, inst, ins: Instr, name: str) -> None:
        """The AMX intrinsics the TileMachine models, the tile casts and llvm.mem*; anything else is refused
        naming it (an AMX one with its family)."""
        if is_cast(name):
            vec = [t for t in [ins.type] + [o.type for o in ins.operands] if not isinstance(t, TileType)]
            if len(vec) != 1 or not is_tile_vector(vec[0]):
                self.refuse(inst, f"@{name} of {vec[0] if vec else '?'}",
                            "a tile cast's vector is a 1024-byte integer vector (<256 x i32>, <512 x i16>, "
                            "<1024 x i8>...): the 16 x 64 byte tile image")
            return
        if name.startswith(RUNNER_INTRINSICS):
            return
        if int_base_name(name) is not None and isinstance(ins.type, IntType):
            return
        if name in CONFIG:
            self.refuse(inst, f"@{name}", "the compiler places ldtilecfg/tilerelease itself (as LLVM X86PreTileConfig); "
                                          "its input uses the shaped .internal intrinsics only")
        a = SHAPED.get(name)
        if a is not None:
            if not a.modelled:
                self.refuse(inst, f"@{name} ({a.family})",
                            f"the TileMachine does not model {a.family} ({a.mnemonic.upper()})")
            return
        a = PHYSICAL.get(name)
        if a is not None:
            self.refuse(inst, f"@{name} (physical-register form, {a.family})",
                        "the physical-register form is the compiler's output; write the shaped intrinsic "
                        f"@{name}.internal")
        self.refuse(inst, f"intrinsic @{name}", "the compiler knows the AMX intrinsics of LLVM 22 that the "
                                                "TileMachine models, the tile casts, llvm.mem* and the scalar "
                                                "integer intrinsics of compiler.int_intrinsics")

    # ------------------------------------------------------------------ the walk
    def read(self) -> None:
        f, fn = self.f, self.fn
        slot = 0
        for p, a in zip(f.params, fn.arguments):
            if not p.name:
                p.name = str(slot)
                slot += 1
            self.values[a] = p
            if not _modelled_arg(p.type):
                raise UnmodelledConstruct(
                    f"parameter %{p.name} of type {p.type} in @{f.name} is not modelled",
                    location=f"@{f.name}" + (f", line {f.meta.get('loc')}" if f.meta.get("loc") else ""),
                    rule="functions take integers and pointers",
                    values={"construct": f"{p.type} parameter", "function": f.name, "line": f.meta.get("loc")})
        insts = []
        for bref in fn.blocks:
            name = bref.name
            if not name:
                name, slot = str(slot), slot + 1
            b = f.add_block(name)
            self.blocks[bref] = b
            for inst in bref.instructions:
                t = self.mr.type(inst.type)
                nm = inst.name or None
                if nm is None and t != VOID:
                    nm, slot = str(slot), slot + 1
                shell = Instr(inst.opcode, t, [], name=nm)
                self.values[inst] = shell
                insts.append((b, inst, shell))
        self.assign_lines(insts)
        for b, inst, shell in insts:
            d = OPS.get(inst.opcode)
            if d is None:
                self.refuse(inst, f"instruction '{inst.opcode}'", "the LLVM instructions of compiler.ops: integer "
                                                                  "arithmetic, icmp, casts, select, phi, br, "
                                                                  "switch, ret, call, getelementptr, load, "
                                                                  "store, alloca, freeze")
            if inst.opcode == "call" and self._dropped(inst):
                continue
            shell.attrs["loc"] = self.line_of.get(inst)
            d.read(self, inst, shell)
            b.append(shell)

    def _dropped(self, inst) -> bool:
        callee = list(inst.operands)[-1]
        return callee.value_kind.name == "function" and callee.name.startswith(DROPPED_INTRINSICS)

    def assign_lines(self, insts) -> None:
        """Line numbers in the user's text: each instruction is found, in order, on the first following line
        that starts with its result name (or its opcode)."""
        start = self.f.meta.get("loc")
        if not start:
            return
        lines = self.mr.lines
        k = start  # 0-based index of the line after ``define``
        for _b, inst, shell in insts:
            want = f"%{shell.name} =" if shell.name is not None and shell.type != VOID else None
            j = k
            while j < len(lines):
                s = lines[j].strip()
                if s.startswith("}"):
                    j = len(lines)
                    break
                if (want and (s.startswith(want) or s.startswith(f'%"{shell.name}" ='))) or \
                        (not want and re.match(rf"(tail |musttail |notail )?{re.escape(inst.opcode)}\b", s)):
                    break
                j += 1
            if j >= len(lines):
                continue
            self.line_of[inst] = j + 1
            k = j + 1


def _modelled_arg(t: Type) -> bool:
    if isinstance(t, (IntType, PtrType, TileType)):
        return True
    return isinstance(t, VectorType) and isinstance(t.elem, IntType) and t.elem.bits % 8 == 0


# --------------------------------------------------------------------------------------------- entry points
def read_module(ref, text: str = "", source: str | None = None) -> Module:
    """Translate an ``llvmlite.binding`` module (already parsed and verified) into the compiler's IR."""
    return ModuleReader(ref, text or str(ref), source).read()


def parse(text: str, source: str | None = None) -> Module:
    """Parse LLVM IR text with LLVM and translate it (see the module docstring)."""
    if not isinstance(text, str):
        raise TypeError("parse() takes IR text (str)")
    return read_module(_parse_ref(text, source), text, source)


def parse_type(text: str) -> Type:
    """A type from its LLVM spelling (``i16``, ``ptr``, ``<256 x i32>``, ``x86_amx``, ``[4 x i8]``, ...)."""
    tt = _TypeText(text, {})
    try:
        t = tt.type()
    except (IndexError, ValueError):
        t = None
    if t is None or tt.k != len(tt.toks) or isinstance(t, OpaqueType):
        raise AsmSyntaxError(f"not a type: {text!r}", line=1, column=1, rule="LLVM LangRef: types")
    return t

