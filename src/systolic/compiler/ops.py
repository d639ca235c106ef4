"""The LLVM instructions the tile compiler models, one typed definition each (xDSL style).

Each :class:`OpDef` owns everything the compiler knows about one opcode:

* ``read``    - build the :class:`~.ir.Instr` from the instruction LLVM parsed (``llvmlite.binding``), through the
                reader context (:class:`~.llvm_reader.FunctionReader`);
* ``print``   - its LLVM IR text (what :mod:`.printer` writes and LLVM reads back);
* ``verify``  - the LangRef typing rules, checked after every pass;
* ``execute`` - its semantics in the :class:`~.to_machine.Runner` (integers modulo 2**bits, pointers as
                region + offset, undefined behaviour refused);
* ``build``   - the same instruction in an ``llvmlite.ir`` module, through an ``IRBuilder`` (what
                :mod:`.to_llvm` hands LLVM to compile; ``cx`` maps our values, types and blocks to llvmlite's).

A new opcode is taught by adding one class here and registering it in :data:`OPS`. Terminators and phi are
defined here too; the runner's block loop asks them for the next block (``successor``).

The pseudo and machine tile instructions (``PTDPBSSDV``, ``TDPBSSD``, ...) are not LLVM opcodes: they print in
an MIR-like form (:func:`print_machine`) and run on the TileMachine (``Runner.machine_op``).
"""

from __future__ import annotations

import numpy as np

from ..errors import CompileError, InvalidValue
from .ir import (I1, VOID, ArrayType, Instr, IntType, PtrType, StructType, TileType, Type, Value, VectorType,
                 field_offsets, size_of, _quote)

__all__ = ["POISON", "OpDef", "OPS", "op_for", "print_instr", "verify_instr", "verify_function", "BINARY_OPS", "CAST_OPS",
           "mask", "signed", "binop", "icmp", "ub"]

BINARY_OPS = ("add", "sub", "mul", "sdiv", "udiv", "srem", "urem", "shl", "lshr", "ashr", "and", "or", "xor")
CAST_OPS = ("sext", "zext", "trunc", "bitcast", "ptrtoint", "inttoptr", "addrspacecast")
ICMP_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


# --------------------------------------------------------------------------------------------- semantics helpers
class _Poison:
    """LLVM's poison value (LangRef "Poison Values"): the result of e.g. ``shl`` by >= the width or ``cttz(0,
    true)``. It propagates through arithmetic, casts, icmp, getelementptr, select and phi; ``freeze`` turns it
    into an arbitrary value (0 here). A use that is undefined behaviour on poison (a branch condition, an
    address, a divisor, a stored, returned or passed value, a tile intrinsic's operand) is refused by the
    runner (``Runner.value``)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "poison"


POISON = _Poison()


def mask(v: int, bits: int) -> int:
    return v & ((1 << bits) - 1)


def signed(v: int, bits: int) -> int:
    v = mask(v, bits)
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


def ub(msg: str, **values) -> InvalidValue:
    return InvalidValue(msg, rule="LLVM LangRef: undefined behaviour is refused, not guessed", values=values)


def binop(op: str, a: int, b: int, bits: int) -> int:
    """LLVM LangRef binary operations on ``bits``-bit integers (operands and result as unsigned residues)."""
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op in ("sdiv", "udiv", "srem", "urem"):
        if b == 0:
            raise ub(f"{op} by zero", op=op)
        if op[0] == "u":
            return a // b if op == "udiv" else a % b
        sa, sb = signed(a, bits), signed(b, bits)
        if sa == -(1 << (bits - 1)) and sb == -1:
            raise ub(f"{op} overflow (INT_MIN / -1)", op=op)
        q = abs(sa) // abs(sb) * (1 if (sa < 0) == (sb < 0) else -1)
        return q if op == "sdiv" else sa - q * sb
    if op in ("shl", "lshr", "ashr"):
        if b >= bits:
            return POISON  # LangRef: a shift by >= the width is poison
        if op == "shl":
            return a << b
        if op == "lshr":
            return a >> b
        return signed(a, bits) >> b
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    return a ^ b


def icmp(pred: str, a: int, b: int, bits: int) -> bool:
    if pred in ("slt", "sle", "sgt", "sge"):
        a, b = signed(a, bits), signed(b, bits)
    return {"eq": a == b, "ne": a != b, "slt": a < b, "sle": a <= b, "sgt": a > b, "sge": a >= b,
            "ult": a < b, "ule": a <= b, "ugt": a > b, "uge": a >= b}[pred]


def bits_cast(a, src: Type, dst: Type):
    """``bitcast`` between integers and integer vectors: the same bytes, little endian."""
    n = size_of(src)
    raw = a.tobytes() if isinstance(a, np.ndarray) else mask(a, 8 * n).to_bytes(n, "little")
    if isinstance(dst, IntType):
        return mask(int.from_bytes(raw, "little"), dst.bits)
    return np.frombuffer(raw, np.uint8).copy()


def _tv(v: Value) -> str:
    return f"{v.type} {v.ref()}"


def _label(b) -> str:
    return f"label %{_quote(b.name)}"


def _verr(ins: Instr, msg: str, rule: str = "LLVM LangRef") -> CompileError:
    from .ir import location
    return CompileError(msg, location=location(ins), rule=rule, values={"opcode": ins.opcode})


def _modelled_value_type(t: Type) -> bool:
    """Types the runner computes with: integers, pointers, integer vectors (bytes), tiles."""
    if isinstance(t, (IntType, PtrType, TileType)):
        return True
    return isinstance(t, VectorType) and isinstance(t.elem, IntType) and t.elem.bits % 8 == 0


# --------------------------------------------------------------------------------------------- definitions
class OpDef:
    """Base of the opcode definitions. ``names``: the LLVM opcodes it defines."""

    names: tuple[str, ...] = ()
    terminator = False

    def read(self, rd, inst, ins: Instr) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def print(self, ins: Instr) -> str:  # pragma: no cover
        raise NotImplementedError

    def verify(self, ins: Instr) -> None:
        pass

    def execute(self, rn, ins: Instr, env: dict):  # pragma: no cover
        raise NotImplementedError

    def build(self, cx, ins: Instr):  # pragma: no cover
        """The llvmlite.ir value of ``ins``, appended through ``cx.b`` (an IRBuilder); None for no value."""
        raise NotImplementedError

    @staticmethod
    def lhs(ins: Instr) -> str:
        return f"%{_quote(ins.name)} = " if ins.name is not None and ins.type != VOID else ""


class BinaryOp(OpDef):
    names = BINARY_OPS

    def read(self, rd, inst, ins):
        if not isinstance(ins.type, IntType):
            rd.refuse(inst, f"{ins.opcode} on {ins.type}", "integer arithmetic only (no floating point or "
                                                             "vector arithmetic)")
        ins.operands = [rd.value(o) for o in rd.operands(inst)]
        ins.attrs["flags"] = rd.flags(inst)

    def print(self, ins):
        flags = "".join(f" {f}" for f in ins.attrs.get("flags", []))
        return f"{self.lhs(ins)}{ins.opcode}{flags} {ins.type} {ins.operands[0].ref()}, {ins.operands[1].ref()}"

    def build(self, cx, ins):
        method = {"and": "and_", "or": "or_"}.get(ins.opcode, ins.opcode)
        a, b = (cx.v(o) for o in ins.operands)
        return getattr(cx.b, method)(a, b, name=cx.name(ins), flags=list(ins.attrs.get("flags", [])))

    def verify(self, ins):
        if not isinstance(ins.type, IntType) or any(o.type != ins.type for o in ins.operands) or \
                len(ins.operands) != 2:
            raise _verr(ins, f"{ins.opcode} needs two {ins.type} integer operands",
                        "LLVM LangRef: binary operations")

    def execute(self, rn, ins, env):
        bits = ins.type.bits
        # poison propagates (LangRef), except as a divisor, which is undefined behaviour
        a = rn.value(ins.operands[0], env, allow_poison=True)
        b = rn.value(ins.operands[1], env, allow_poison=ins.opcode not in ("sdiv", "udiv", "srem", "urem"))
        if a is POISON or b is POISON:
            return POISON
        r = binop(ins.opcode, a, b, bits)
        return r if r is POISON else mask(r, bits)


class ICmp(OpDef):
    names = ("icmp",)

    def read(self, rd, inst, ins):
        ins.operands = [rd.value(o) for o in rd.operands(inst)]
        if not isinstance(ins.operands[0].type, (IntType, PtrType)):
            rd.refuse(inst, f"icmp on {ins.operands[0].type}", "icmp of integers and pointers only")
        ins.attrs["pred"] = rd.predicate(inst)

    def print(self, ins):
        return f"{self.lhs(ins)}icmp {ins.attrs['pred']} {_tv(ins.operands[0])}, {ins.operands[1].ref()}"

    def build(self, cx, ins):
        pred = ins.attrs["pred"]
        op = {"eq": "==", "ne": "!="}.get(pred) or {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}[pred[1:]]
        signed_cmp = cx.b.icmp_signed if pred[0] == "s" else cx.b.icmp_unsigned
        return signed_cmp(op, *(cx.v(o) for o in ins.operands), name=cx.name(ins))

    def verify(self, ins):
        a, b = ins.operands
        if ins.type != I1 or a.type != b.type or ins.attrs.get("pred") not in ICMP_PREDICATES:
            raise _verr(ins, "icmp compares two values of one type into i1", "LLVM LangRef: icmp")

    def execute(self, rn, ins, env):
        o = ins.operands
        a, b = rn.value(o[0], env, allow_poison=True), rn.value(o[1], env, allow_poison=True)
        if a is POISON or b is POISON:
            return POISON
        pred = ins.attrs["pred"]
        if isinstance(o[0].type, PtrType):
            if pred not in ("eq", "ne"):
                raise ub("only eq/ne compare pointers (they are region + offset)", pred=pred)
            same = (a.region is b.region and a.offset == b.offset)
            return int(same == (pred == "eq"))
        return int(icmp(pred, a, b, o[0].type.bits))


class Cast(OpDef):
    names = CAST_OPS

    def read(self, rd, inst, ins):
        ins.operands = [rd.value(o) for o in rd.operands(inst)]
        src, dst = ins.operands[0].type, ins.type
        op = ins.opcode
        if op in ("ptrtoint", "inttoptr"):
            rd.refuse(inst, op, "pointers are region + offset in the byte memory model; they have no integer value")
        if not (_modelled_value_type(src) and _modelled_value_type(dst)):
            rd.refuse(inst, f"{op} from {src} to {dst}", "casts between integers, pointers and tiles only")
        ins.attrs["flags"] = rd.flags(inst)

    def print(self, ins):
        flags = "".join(f" {f}" for f in ins.attrs.get("flags", []))
        return f"{self.lhs(ins)}{ins.opcode}{flags} {_tv(ins.operands[0])} to {ins.type}"

    def build(self, cx, ins):
        return cx.cast(ins.opcode, list(ins.attrs.get("flags", [])), cx.v(ins.operands[0]), cx.t(ins.type),
                       cx.name(ins))

    def verify(self, ins):
        a, b, op = ins.operands[0].type, ins.type, ins.opcode
        if op in ("sext", "zext"):
            ok = isinstance(a, IntType) and isinstance(b, IntType) and a.bits < b.bits
        elif op == "trunc":
            ok = isinstance(a, IntType) and isinstance(b, IntType) and a.bits > b.bits
        elif op in ("bitcast", "addrspacecast"):
            ok = (isinstance(a, PtrType) and isinstance(b, PtrType)) or isinstance(a, TileType) or \
                isinstance(b, TileType) or size_of(a) == size_of(b)
        else:
            ok = True
        if not ok:
            raise _verr(ins, f"invalid cast {op} from {a} to {b}", "LLVM LangRef: conversion operations")

    def execute(self, rn, ins, env):
        op, src = ins.opcode, ins.operands[0]
        a = rn.value(src, env, allow_poison=True)
        if a is POISON:
            return POISON
        if op == "sext":
            return mask(signed(a, src.type.bits), ins.type.bits)
        if op in ("zext", "trunc"):
            return mask(a, ins.type.bits)
        if isinstance(ins.type, PtrType):
            return a
        if isinstance(src.type, TileType) or isinstance(ins.type, TileType):
            return a  # eager mode: tile <-> vector casts keep the value
        return bits_cast(a, src.type, ins.type)


class Freeze(OpDef):
    """``freeze``: the runner has no poison values (it refuses undefined behaviour), so freeze is the identity."""

    names = ("freeze",)

    def read(self, rd, inst, ins):
        ins.operands = [rd.value(o) for o in rd.operands(inst)]
        if not _modelled_value_type(ins.type):
            rd.refuse(inst, f"freeze of {ins.type}", "integers, pointers and integer vectors")

    def print(self, ins):
        return f"{self.lhs(ins)}freeze {_tv(ins.operands[0])}"

    def build(self, cx, ins):
        return cx.freeze(cx.v(ins.operands[0]), cx.name(ins))

    def verify(self, ins):
        if len(ins.operands) != 1 or ins.operands[0].type != ins.type:
            raise _verr(ins, f"freeze needs one {ins.type} operand", "LLVM LangRef: 'freeze' Instruction")

    def execute(self, rn, ins, env):
        v = rn.value(ins.operands[0], env, allow_poison=True)
        return 0 if v is POISON else v  # freeze(poison) is some fixed value; 0 is one


class Select(OpDef):
    names = ("select",)

    def read(self, rd, inst, ins):
        ins.operands = [rd.value(o) for o in rd.operands(inst)]
        if ins.operands[0].type != I1:
            rd.refuse(inst, f"select on a {ins.operands[0].type} condition", "scalar i1 conditions only")
        if not _modelled_value_type(ins.type):
            rd.refuse(inst, f"select of {ins.type}", "integers, pointers and integer vectors")

    def print(self, ins):
        o = ins.operands
        return f"{self.lhs(ins)}select {_tv(o[0])}, {_tv(o[1])}, {_tv(o[2])}"

    def build(self, cx, ins):
        return cx.b.select(*(cx.v(o) for o in ins.operands), name=cx.name(ins))

    def verify(self, ins):
        c, a, b = ins.operands
        if c.type != I1 or a.type != b.type or a.type != ins.type:
            raise _verr(ins, "select takes an i1 and two values of the result type", "LLVM LangRef: select")

    def execute(self, rn, ins, env):
        o = ins.operands
        c = rn.value(o[0], env, allow_poison=True)
        if c is POISON:
            return POISON
        return rn.value(o[1] if c & 1 else o[2], env, allow_poison=True)


class Phi(OpDef):
    names = ("phi",)

    def read(self, rd, inst, ins):
        ins.operands = [rd.value(o) for o in rd.operands(inst)]
        ins.attrs["blocks"] = [rd.block(b) for b in inst.incoming_blocks]
        if not _modelled_value_type(ins.type):
            rd.refuse(inst, f"phi of {ins.type}", "integers, pointers, integer vectors and tiles")

    def print(self, ins):
        inc = ", ".join(f"[ {v.ref()}, %{_quote(b.name)} ]" for v, b in zip(ins.operands, ins.attrs["blocks"]))
        return f"{self.lhs(ins)}phi {ins.type} {inc}"

    def build(self, cx, ins):
        # the incoming values may be defined later in block order: cx adds them once every block is built
        phi = cx.b.phi(cx.t(ins.type), name=cx.name(ins))
        cx.later(lambda: [phi.add_incoming(cx.v(v), cx.block(b)) for v, b in zip(ins.operands, ins.attrs["blocks"])])
        return phi

    def verify(self, ins):
        if len(ins.operands) != len(ins.attrs["blocks"]) or any(o.type != ins.type for o in ins.operands):
            raise _verr(ins, "phi has one value of its type per incoming block", "LLVM LangRef: phi")

    def execute(self, rn, ins, env, prev=None):
        """The value for the edge from block ``prev`` (the runner reads a block's phis together on entry)."""
        k = next((j for j, b in enumerate(ins.attrs["blocks"]) if b is prev), None)
        if k is None:
            raise ub(f"phi %{ins.name} has no entry for the block we came from")
        return rn.value(ins.operands[k], env, allow_poison=True)


class Br(OpDef):
    names = ("br",)
    terminator = True

    def read(self, rd, inst, ins):
        ops = rd.operands(inst)
        if len(ops) == 1:
            ins.attrs["blocks"] = [rd.block(ops[0])]
        else:
            # llvmlite lists a conditional br's operands as [cond, false_dest, true_dest]
            ins.operands = [rd.value(ops[0])]
            ins.attrs["blocks"] = [rd.block(ops[2]), rd.block(ops[1])]

    def print(self, ins):
        bl = ins.attrs["blocks"]
        if not ins.operands:
            return f"br {_label(bl[0])}"
        return f"br {_tv(ins.operands[0])}, {_label(bl[0])}, {_label(bl[1])}"

    def build(self, cx, ins):
        bl = ins.attrs["blocks"]
        if not ins.operands:
            return cx.b.branch(cx.block(bl[0]))
        return cx.b.cbranch(cx.v(ins.operands[0]), cx.block(bl[0]), cx.block(bl[1]))

    def verify(self, ins):
        n = len(ins.attrs.get("blocks", []))
        if not ((not ins.operands and n == 1) or (len(ins.operands) == 1 and ins.operands[0].type == I1 and n == 2)):
            raise _verr(ins, "br takes a label, or an i1 and two labels", "LLVM LangRef: br")

    def successor(self, rn, ins, env):
        bl = ins.attrs["blocks"]
        if ins.operands:
            return bl[0] if rn.value(ins.operands[0], env) & 1 else bl[1]
        return bl[0]


class Switch(OpDef):
    names = ("switch",)
    terminator = True

    def read(self, rd, inst, ins):
        ops = rd.operands(inst)
        cond = rd.value(ops[0])
        if not isinstance(cond.type, IntType):
            rd.refuse(inst, f"switch on {cond.type}", "switch on an integer")
        # llvmlite lists cond, default, then the case destinations; the case values are only in the text
        from .ir import ConstantInt
        ins.operands = [cond] + [ConstantInt(cond.type, v) for v in rd.switch_values(inst)]
        ins.attrs["blocks"] = [rd.block(ops[1])] + [rd.block(b) for b in ops[2:]]

    def print(self, ins):
        cond, cases = ins.operands[0], ins.operands[1:]
        bl = ins.attrs["blocks"]
        body = "".join(f"\n    {_tv(v)}, {_label(b)}" for v, b in zip(cases, bl[1:]))
        return f"switch {_tv(cond)}, {_label(bl[0])} [{body}\n  ]"

    def build(self, cx, ins):
        bl = ins.attrs["blocks"]
        sw = cx.b.switch(cx.v(ins.operands[0]), cx.block(bl[0]))
        for v, b in zip(ins.operands[1:], bl[1:]):
            sw.add_case(cx.v(v), cx.block(b))
        return sw

    def verify(self, ins):
        if len(ins.attrs["blocks"]) != len(ins.operands) or \
                any(v.type != ins.operands[0].type for v in ins.operands[1:]):
            raise _verr(ins, "switch has one destination per case value of the condition's type",
                        "LLVM LangRef: switch")

    def successor(self, rn, ins, env):
        c = rn.value(ins.operands[0], env)
        for k, v in enumerate(ins.operands[1:]):
            if rn.value(v, env) == c:
                return ins.attrs["blocks"][k + 1]
        return ins.attrs["blocks"][0]


class Ret(OpDef):
    names = ("ret",)
    terminator = True

    def read(self, rd, inst, ins):
        ins.operands = [rd.value(o) for o in rd.operands(inst)]
        if ins.operands and not _modelled_value_type(ins.operands[0].type):
            rd.refuse(inst, f"ret of {ins.operands[0].type}", "functions return integers, pointers or void")

    def print(self, ins):
        return f"ret {_tv(ins.operands[0])}" if ins.operands else "ret void"

    def build(self, cx, ins):
        return cx.b.ret(cx.v(ins.operands[0])) if ins.operands else cx.b.ret_void()

    def verify(self, ins):
        f = ins.block.function if ins.block is not None else None
        if len(ins.operands) > 1 or f is None:
            if len(ins.operands) > 1:
                raise _verr(ins, "ret takes at most one value", "LLVM LangRef: 'ret' Instruction")
            return
        got = ins.operands[0].type if ins.operands else VOID
        if got != f.ret_type:
            raise _verr(ins, f"ret of {got} in @{f.name}, which returns {f.ret_type}",
                        "LLVM LangRef: 'ret' Instruction (the value has the function's return type)")


class Unreachable(OpDef):
    names = ("unreachable",)
    terminator = True

    def read(self, rd, inst, ins):
        pass

    def print(self, ins):
        return "unreachable"

    def build(self, cx, ins):
        return cx.b.unreachable()

    def verify(self, ins):
        if ins.operands:
            raise _verr(ins, "unreachable takes no operands", "LLVM LangRef: 'unreachable' Instruction")

    def successor(self, rn, ins, env):
        raise ub("reached 'unreachable'")


class Call(OpDef):
    names = ("call",)

    def read(self, rd, inst, ins):
        ops = rd.operands(inst)
        callee_ref = ops[-1]
        kind = callee_ref.value_kind.name
        if kind == "inline_asm":
            rd.refuse(inst, "inline asm", "the runner executes LLVM instructions, not machine code")
        if kind != "function":
            rd.refuse(inst, "indirect call", "calls name their callee (@function)")
        callee = rd.function(callee_ref)
        ins.operands = [rd.value(o) for o in ops[:-1]]
        ins.attrs["callee"] = callee
        words = rd.text(inst).split("=", 1)[-1].split()
        if words and words[0] in ("tail", "musttail", "notail"):
            ins.attrs["tail"] = words[0]
        rd.check_call(inst, ins)

    def print(self, ins):
        a = ins.attrs
        tail = f"{a['tail']} " if a.get("tail") else ""
        args = ", ".join(_tv(v) for v in ins.operands)
        return f"{self.lhs(ins)}{tail}call {ins.type} {a['callee'].ref()}({args})"

    def build(self, cx, ins):
        tail = ins.attrs.get("tail") or False
        return cx.b.call(cx.function(ins.attrs["callee"]), [cx.v(o) for o in ins.operands],
                         name=cx.name(ins), tail=tail)

    def verify(self, ins):
        c = ins.attrs["callee"]
        if c.ret_type != ins.type or (not c.varargs and len(c.params) != len(ins.operands)):
            raise _verr(ins, f"call does not match @{c.name}'s signature", "LLVM LangRef: call")

    def execute(self, rn, ins, env):
        return rn.do_call(ins, env)


class GetElementPtr(OpDef):
    names = ("getelementptr",)

    def read(self, rd, inst, ins):
        ins.operands = [rd.value(o) for o in rd.operands(inst)]
        if not isinstance(ins.type, PtrType):
            rd.refuse(inst, "vector getelementptr", "scalar pointers only")
        ins.attrs["source_type"] = src = rd.gep_source_type(inst)
        ins.attrs["flags"] = rd.flags(inst)
        rd.check_gep(inst, src, ins.operands[1:])

    def print(self, ins):
        flags = "".join(f"{f} " for f in ins.attrs.get("flags", []))
        idx = "".join(f", {_tv(v)}" for v in ins.operands[1:])
        return f"{self.lhs(ins)}getelementptr {flags}{ins.attrs['source_type']}, {_tv(ins.operands[0])}{idx}"

    def build(self, cx, ins):
        # llvmlite spells one GEP flag, inbounds; the others (nuw, nusw) only promise more, so dropping them keeps
        # the program's meaning
        return cx.b.gep(cx.v(ins.operands[0]), [cx.v(o) for o in ins.operands[1:]],
                        inbounds="inbounds" in ins.attrs.get("flags", []), name=cx.name(ins),
                        source_etype=cx.t(ins.attrs["source_type"]))

    def verify(self, ins):
        if not isinstance(ins.operands[0].type, PtrType) or \
                any(not isinstance(i.type, IntType) for i in ins.operands[1:]):
            raise _verr(ins, "getelementptr takes a pointer and integer indices", "LLVM LangRef: getelementptr")

    def execute(self, rn, ins, env):
        o = ins.operands
        vals = [rn.value(v, env, allow_poison=True) for v in o]
        if any(v is POISON for v in vals):
            return POISON
        return rn.gep(ins.attrs["source_type"], vals[0], [(v, i.type.bits) for v, i in zip(vals[1:], o[1:])])


def _align(ins: Instr) -> str:
    return f", align {ins.attrs['align']}" if ins.attrs.get("align") else ""


def _memory_type_ok(t: Type) -> bool:
    if isinstance(t, (IntType, PtrType)):
        return True
    return isinstance(t, VectorType) and isinstance(t.elem, IntType) and t.elem.bits % 8 == 0


class Load(OpDef):
    names = ("load",)

    def read(self, rd, inst, ins):
        ins.operands = [rd.value(o) for o in rd.operands(inst)]
        if not _memory_type_ok(ins.type):
            rd.refuse(inst, f"load of {ins.type}", "loads of integers, pointers and integer vectors")
        ins.attrs["align"] = rd.align(inst)
        if rd.is_atomic(inst):
            rd.refuse(inst, "atomic load", "the runner is single-threaded; atomics are not modelled")

    def print(self, ins):
        return f"{self.lhs(ins)}load {ins.type}, {_tv(ins.operands[0])}{_align(ins)}"

    def build(self, cx, ins):
        return cx.b.load(cx.v(ins.operands[0]), name=cx.name(ins), align=ins.attrs.get("align") or None,
                         typ=cx.t(ins.type))

    def verify(self, ins):
        if not isinstance(ins.operands[0].type, PtrType):
            raise _verr(ins, "load through a non-pointer", "LLVM LangRef: load")

    def execute(self, rn, ins, env):
        return rn.load(ins.type, rn.value(ins.operands[0], env))


class Store(OpDef):
    names = ("store",)

    def read(self, rd, inst, ins):
        ins.operands = [rd.value(o) for o in rd.operands(inst)]
        t = ins.operands[0].type
        if not _memory_type_ok(t):
            rd.refuse(inst, f"store of {t}", "stores of integers and integer vectors")
        if isinstance(t, PtrType):
            rd.refuse(inst, "store of a pointer", "pointers are region + offset; the byte memory model cannot hold "
                                                 "them (at -O0, compile_c runs sroa first)")
        ins.attrs["align"] = rd.align(inst)
        if rd.is_atomic(inst):
            rd.refuse(inst, "atomic store", "the runner is single-threaded; atomics are not modelled")

    def print(self, ins):
        return f"store {_tv(ins.operands[0])}, {_tv(ins.operands[1])}{_align(ins)}"

    def build(self, cx, ins):
        return cx.b.store(cx.v(ins.operands[0]), cx.v(ins.operands[1]), align=ins.attrs.get("align") or None)

    def verify(self, ins):
        if not isinstance(ins.operands[1].type, PtrType):
            raise _verr(ins, "store through a non-pointer", "LLVM LangRef: store")

    def execute(self, rn, ins, env):
        o = ins.operands
        rn.store(o[0].type, rn.value(o[0], env), rn.value(o[1], env))
        return None


class Alloca(OpDef):
    names = ("alloca",)

    def read(self, rd, inst, ins):
        t = rd.alloca_type(inst)
        count = rd.operands(inst)[0]
        n = rd.value(count)
        from .ir import ConstantInt
        if not (isinstance(n, ConstantInt) and n.value == 1):
            rd.refuse(inst, "alloca with a run-time or >1 element count", "one object of the allocated type")
        try:
            size_of(t)
        except TypeError:
            rd.refuse(inst, f"alloca of {t}", "allocated types have a size")
        ins.attrs["alloc_type"] = t
        ins.attrs["align"] = rd.align(inst)

    def print(self, ins):
        return f"{self.lhs(ins)}alloca {ins.attrs['alloc_type']}{_align(ins)}"

    def build(self, cx, ins):
        return cx.alloca(cx.t(ins.attrs["alloc_type"]), cx.name(ins), ins.attrs.get("align") or None)

    def verify(self, ins):
        if not isinstance(ins.type, PtrType) or ins.attrs.get("alloc_type") is None:
            raise _verr(ins, f"alloca yields a ptr to a sized type, not {ins.type}",
                        "LLVM LangRef: 'alloca' Instruction")

    def execute(self, rn, ins, env):
        return rn.alloca(ins)


_DEFS = [BinaryOp(), ICmp(), Cast(), Freeze(), Select(), Phi(), Br(), Switch(), Ret(), Unreachable(), Call(),
         GetElementPtr(), Load(), Store(), Alloca()]
#: opcode -> its definition
OPS: dict[str, OpDef] = {name: d for d in _DEFS for name in d.names}


def op_for(opcode: str) -> OpDef | None:
    return OPS.get(opcode)


def print_machine(ins: Instr) -> str:
    """Pseudo / machine tile instructions (after ``lower`` / ``regalloc``): ``%t = PTILELOADDV %r, %c, %p, 64``,
    ``TDPBSSD tmm2, tmm0, tmm1`` - for reading, not for LLVM."""
    lhs = OpDef.lhs(ins)
    a = ins.attrs
    if a.get("def") is not None:  # during allocation: the tile variable written (phi copies, ties, spill temps)
        lhs = f"{a['def'].ref()} = "
    parts = [f"tmm{t}" for t in a.get("tiles", [])] + [v.ref() for v in ins.operands]
    extra = "".join(f" {k}={a[k]}" for k in ("slot",) if k in a)
    return f"{lhs}{ins.opcode} {', '.join(parts)}{extra}".rstrip()


def print_instr(ins: Instr) -> str:
    d = OPS.get(ins.opcode)
    return d.print(ins) if d is not None else print_machine(ins)


def verify_instr(ins: Instr) -> None:
    d = OPS.get(ins.opcode)
    if d is not None:
        d.verify(ins)


def verify_function(f) -> None:
    """Every instruction of ``f`` checked by its definition (LangRef typing rules); CompileError names it."""
    for ins in f.instructions():
        verify_instr(ins)


# kept for the gep offset computation of the runner and the reader
def gep_offset(src: Type, indices: list[int]) -> int:
    """Byte offset of ``getelementptr src, p, i0, i1, ...`` with signed index values (LLVM DataLayout)."""
    off = indices[0] * size_of(src) if indices else 0
    t = src
    for i in indices[1:]:
        if isinstance(t, StructType):
            off += field_offsets(t)[i]
            t = t.elems[i]
        elif isinstance(t, (ArrayType, VectorType)):
            t = t.elem
            off += i * size_of(t)
        else:
            raise ub(f"cannot index into {t}")
    return off

