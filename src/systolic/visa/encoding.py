"""Binary encoding and decoding of vISA operands (and of the instructions of the supported subset).

Source: visa-operands.md (IGC documentation/visa/5_operands.md): "Vector Operands" (the tag byte:
operand_class bits 0-2, modifiers bits 3-5), "General Operands" (``gen_opnd`` and the 4-bit region
encoding), "Address Operands", "Predicate Operands", "Indirect Operands", "Immediate Operands" (the
high dword only for DF/Q/UQ), "State Operands" and "Raw Operands"; the instruction format rows of
``documentation/visa/instructions/<NAME>.md``. All fields are little-endian.

Choices the text leaves open, documented here and in docs/visa.md:

* tag bits 6-7 and region bits 12-15 are not assigned by the spec; we require them to be zero.
* the address operand's ``width`` byte holds the execution-size code (0..4 = 1..16 elements), as
  IGC's disassembler reads it (``Get_VISA_Exec_Size(width & 0xF)`` in visa/IsaDisassembly.cpp).
* general variable ids count from 1; id 0 is the predefined ``%null`` variable (IGC's V0), only
  legal as DPAS Src0 ("It could be a null operand, meaning it is zero").

The instruction field order agrees with IGC's reader (visa/ByteCodeReaderNG.cpp
``readInstructionCommonNG``; ``hasPredicate`` in Common_ISA_util.cpp) and DPAS's W, A, SD, RC bytes
are the little-endian UD of ``DpasInfoToUI32`` (Common_ISA_util.h).
"""

from __future__ import annotations

import dataclasses

import struct
from dataclasses import dataclass, field

from ..errors import IllegalInstruction, InvalidValue
from . import isa, program
from .opcodes import OPCODE_BY_VALUE, opcode
from .isa import (EXEC_SIZES, MODIFIER_CODES, MODIFIERS, OPERAND_CLASS_CODES, OPERAND_CLASSES,
                  PRECISION_BY_CODE, PRECISIONS, TYPE_BY_CODE, exec_size_code)
# the operand records live in .operands (program's static checks read them too); re-exported here
from .operands import (AddressOfOperand, AddressOperand, GeneralOperand, ImmediateOperand, IndirectOperand,
                       PredicateOperand, RawOperand, StateOperand, VecOperand)
from .predication import PredControl
from .regions import decode_region_value, encode_region_value

__all__ = ["GeneralOperand", "AddressOperand", "PredicateOperand", "IndirectOperand", "ImmediateOperand",
           "StateOperand", "RawOperand", "AddressOfOperand", "VecOperand", "encode_region", "decode_region",
           "encode_operand", "decode_operand", "encode_raw", "decode_raw", "expand_v", "expand_uv",
           "expand_vf", "vf_to_float_bits", "Reader"]

RULE_TAG = "visa-operands.md: Vector Operands (tag byte)"




# ------------------------------------------------------------------ byte reader
@dataclass
class Reader:
    """Bounds-checked little-endian reader: running off the end names the field being read."""

    data: bytes
    pos: int = 0
    what: list = field(default_factory=list)

    def take(self, fmt: str, name: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise InvalidValue(f"truncated vISA bytes while reading {name}",
                               rule="visa-operands.md: operand layouts",
                               values={"field": name, "offset": self.pos, "need": size,
                                       "have": len(self.data) - self.pos})
        v = struct.unpack_from("<" + fmt, self.data, self.pos)[0]
        self.pos += size
        return v

    @property
    def done(self) -> bool:
        return self.pos >= len(self.data)


# ------------------------------------------------------------------ regions
def encode_region(vstride: int | None, width: int | None, hstride: int | None) -> int:
    """The ``region`` UW: vertical stride bits 0-3, width bits 4-7, horizontal stride bits 8-11."""
    return (encode_region_value(vstride, "vstride") | (encode_region_value(width, "width") << 4)
            | (encode_region_value(hstride, "hstride") << 8))


def decode_region(word: int) -> tuple[int | None, int | None, int | None]:
    if word >> 12:
        raise IllegalInstruction("region bits 12-15 are not assigned and must be 0",
                                 rule="visa-operands.md: General Operands (region)", values={"region": word})
    return (decode_region_value(word & 0xF, "vstride"), decode_region_value((word >> 4) & 0xF, "width"),
            decode_region_value((word >> 8) & 0xF, "hstride"))


# ------------------------------------------------------------------ operands
def _check_range(name: str, v: int, lo: int, hi: int, rule: str) -> None:
    if not isinstance(v, int) or not lo <= v <= hi:
        raise IllegalInstruction(f"{name} out of range [{lo}, {hi}]", rule=rule, values={name: v})


def _tag(cls: str, modifier: str) -> int:
    if modifier not in MODIFIER_CODES:
        raise IllegalInstruction("unknown operand modifier", rule=RULE_TAG, values={"modifier": modifier})
    if modifier != "none" and cls not in ("general", "indirect"):
        raise IllegalInstruction("modifiers may only be used for General and Indirect operands", rule=RULE_TAG,
                                 values={"class": cls, "modifier": modifier})
    return OPERAND_CLASS_CODES[cls] | (MODIFIER_CODES[modifier] << 3)


def encode_operand(op) -> bytes:
    """``vec_operand`` bytes: the tag byte, then the class's ``info``."""
    if isinstance(op, GeneralOperand):
        _check_range("id", op.id, 0, 0xFFFFFFFF, "visa-operands.md: gen_opnd.id (ud)")
        _check_range("row_offset", op.row, 0, 255, "visa-operands.md: gen_opnd.row_offset (ub)")
        _check_range("col_offset", op.col, 0, 255, "visa-operands.md: gen_opnd.col_offset (ub)")
        return struct.pack("<BIBBH", _tag("general", op.modifier), op.id, op.row, op.col,
                           encode_region(op.vstride, op.width, op.hstride))
    if isinstance(op, AddressOperand):
        _check_range("id", op.id, 0, 0xFFFF, "visa-operands.md: addr_opnd.id (uw)")
        _check_range("offset", op.offset, 0, 255, "visa-operands.md: addr_opnd.offset (ub)")
        program.check_address_width(op.width)
        return struct.pack("<BHBB", _tag("address", op.modifier), op.id, op.offset, exec_size_code(op.width))
    if isinstance(op, PredicateOperand):
        return struct.pack("<BH", _tag("predicate", op.modifier), op.pred.encode())
    if isinstance(op, IndirectOperand):
        _check_range("id", op.id, 0, 0xFFFF, "visa-operands.md: indirect_opnd.id (uw)")
        _check_range("addr_offset", op.addr_offset, 0, 255, "visa-operands.md: indirect_opnd.addr_offset (ub)")
        _check_range("indirect_offset", op.indirect_offset, -512, 511,
                     "visa-operands.md: Indirect Operands (indirect_offset in [-512, 511])")
        if op.type.kind in ("vector", "bool"):
            raise IllegalInstruction("an indirect operand may not have type V, UV, VF or BOOL",
                                     rule="visa-operands.md: Indirect Operands (bit_properties)",
                                     values={"type": op.type.name})
        return struct.pack("<BHBhBH", _tag("indirect", op.modifier), op.id, op.addr_offset, op.indirect_offset,
                           op.type.code, encode_region(op.vstride, op.width, op.hstride))
    if isinstance(op, ImmediateOperand):
        program.check_immediate_type(op.type)
        _check_range("low", op.low, 0, 0xFFFFFFFF, "visa-operands.md: const_opnd.low (ud)")
        wide = op.type.name in ("df", "q", "uq")
        if wide:
            _check_range("high", op.high or 0, 0, 0xFFFFFFFF, "visa-operands.md: const_opnd.high (ud)")
            return struct.pack("<BBII", _tag("immediate", op.modifier), op.type.code, op.low, op.high or 0)
        if op.high:
            raise IllegalInstruction("the high dword is present only for DF, Q and UQ immediates",
                                     rule="visa-operands.md: Immediate Operands",
                                     values={"type": op.type.name, "high": op.high})
        return struct.pack("<BBI", _tag("immediate", op.modifier), op.type.code, op.low)
    if isinstance(op, StateOperand):
        if op.state_class not in (0, 1):
            raise IllegalInstruction("state class must be 0 (surface) or 1 (sampler)",
                                     rule="visa-operands.md: State Operands", values={"class": op.state_class})
        _check_range("id", op.id, 0, 0xFFFF, "visa-operands.md: state_opnd.id (uw)")
        _check_range("offset", op.offset, 0, 255, "visa-operands.md: state_opnd.offset (ub)")
        return struct.pack("<BBHB", _tag("state", op.modifier), op.state_class, op.id, op.offset)
    if isinstance(op, AddressOfOperand):
        raise InvalidValue("&V is encoded as a general operand whose column depends on V's type; "
                           "encode it with encode_instruction", rule="ADDR_ADD.md notes", values={"id": op.id})
    raise InvalidValue("not a vISA vector operand", rule="visa-operands.md: Vector Operands",
                       values={"operand": repr(op)})


def decode_operand(r: Reader):
    """Read one ``vec_operand`` from ``r``; malformed bytes raise naming the field."""
    tag = r.take("B", "tag")
    cls_code, mod_code = tag & 7, (tag >> 3) & 7
    if tag >> 6:
        raise IllegalInstruction("tag bits 6-7 are not assigned and must be 0", rule=RULE_TAG, values={"tag": tag})
    if cls_code not in OPERAND_CLASSES:
        raise IllegalInstruction("reserved operand class", rule=RULE_TAG, values={"operand_class": cls_code})
    if mod_code not in MODIFIERS:
        raise IllegalInstruction("reserved operand modifier", rule=RULE_TAG, values={"modifier": mod_code})
    cls, mod = OPERAND_CLASSES[cls_code], MODIFIERS[mod_code]
    if mod != "none" and cls not in ("general", "indirect"):
        raise IllegalInstruction("modifiers may only be used for General and Indirect operands", rule=RULE_TAG,
                                 values={"class": cls, "modifier": mod})
    if cls == "general":
        vid, row, col, region = r.take("I", "gen_opnd.id"), r.take("B", "row_offset"), r.take("B", "col_offset"), \
            r.take("H", "region")
        return GeneralOperand(vid, row, col, *decode_region(region), modifier=mod)
    if cls == "address":
        aid, off, wcode = r.take("H", "addr_opnd.id"), r.take("B", "addr_opnd.offset"), r.take("B", "addr_opnd.width")
        if wcode not in EXEC_SIZES:
            raise IllegalInstruction("address operand width code is not an execution size code",
                                     rule=program.RULE_ADDR_WIDTH, values={"width_code": wcode})
        program.check_address_width(EXEC_SIZES[wcode])
        return AddressOperand(aid, off, EXEC_SIZES[wcode])
    if cls == "predicate":
        return PredicateOperand(PredControl.decode(r.take("H", "pred_opnd.val")))
    if cls == "indirect":
        aid, aoff, ioff = r.take("H", "indirect_opnd.id"), r.take("B", "addr_offset"), r.take("h", "indirect_offset")
        props, region = r.take("B", "bit_properties"), r.take("H", "region")
        if props >> 4:
            raise IllegalInstruction("bit_properties bits 4-7 are not assigned and must be 0",
                                     rule="visa-operands.md: Indirect Operands", values={"bit_properties": props})
        t = TYPE_BY_CODE[props & 0xF]
        op = IndirectOperand(aid, aoff, ioff, t, *decode_region(region), modifier=mod)
        encode_operand(op)  # range and type rules, one place
        return op
    if cls == "immediate":
        tcode = r.take("B", "const_opnd.type")
        if tcode >> 4:
            raise IllegalInstruction("immediate type bits 4-7 are not assigned and must be 0",
                                     rule="visa-operands.md: Immediate Operands", values={"type": tcode})
        t = TYPE_BY_CODE[tcode]
        low = r.take("I", "const_opnd.low")
        high = r.take("I", "const_opnd.high") if t.name in ("df", "q", "uq") else None
        op = ImmediateOperand(t, low, high)
        encode_operand(op)
        return op
    # state
    scls, sid, soff = r.take("B", "state_opnd.class"), r.take("H", "state_opnd.id"), r.take("B", "state_opnd.offset")
    op = StateOperand(scls, sid, soff)
    encode_operand(op)
    return op


def encode_raw(op: RawOperand) -> bytes:
    """``raw_operand``: ud id, uw byte offset."""
    _check_range("id", op.id, 0, 0xFFFFFFFF, "visa-operands.md: raw_operand.id (ud)")
    _check_range("offset", op.offset, 0, 0xFFFF, "visa-operands.md: raw_operand.offset (uw)")
    return struct.pack("<IH", op.id, op.offset)


def decode_raw(r: Reader) -> RawOperand:
    return RawOperand(r.take("I", "raw_operand.id"), r.take("H", "raw_operand.offset"))


# ------------------------------------------------------------------ packed immediates
def expand_v(dword: int) -> list[int]:
    """Type V: eight signed 4-bit integers, element 0 in bits 0-3 (2_datatypes.md; equivalent to 8 x W)."""
    out = []
    for i in range(8):
        nib = (dword >> (4 * i)) & 0xF
        out.append(nib - 16 if nib & 8 else nib)
    return out


def expand_uv(dword: int) -> list[int]:
    """Type UV: eight unsigned 4-bit integers (equivalent to 8 x UW)."""
    return [(dword >> (4 * i)) & 0xF for i in range(8)]


def vf_to_float_bits(byte: int) -> int:
    """One 8-bit restricted float -> fp32 bits: sign bit 7, exponent bits 6-4 (bias 3), mantissa bits 3-0.

    0x00 and 0x80 are +0 and -0 (so 0.125 has no encoding). Sources: 2_datatypes.md (VF range
    [-31 .. -0.125, 0, 0.125 .. 31]); the layout as IGA states it (Formatter.cpp, "1 sign bit, 3 bits
    for the biased exponent (bias of 3), and 4 bits for the significand"); zero special-casing as in
    Mesa's brw_packed_float.c.
    """
    sign = (byte >> 7) & 1
    if byte & 0x7F == 0:
        return sign << 31
    exp = ((byte >> 4) & 7) - 3 + 127
    return (sign << 31) | (exp << 23) | ((byte & 0xF) << 19)


def expand_vf(dword: int) -> list[int]:
    """Type VF: four restricted floats (element 0 in bits 0-7) as fp32 bit patterns (4 x F)."""
    return [vf_to_float_bits((dword >> (8 * i)) & 0xFF) for i in range(4)]


def precision_code(name: str) -> int:
    return PRECISIONS[name]


def precision_name(code: int) -> str:
    if code not in PRECISION_BY_CODE:
        raise IllegalInstruction("unknown DPAS precision code", rule="visa-DPAS.md: operand precisions table",
                                 values={"precision": code})
    return PRECISION_BY_CODE[code]


# ------------------------------------------------------------------ instructions
def encode_instruction(inst, prog) -> bytes:
    """One instruction as the format row of instructions/<NAME>.md: opcode byte, then its fields in order.

    ``.sat`` is the destination's modifier (SAT = 4, as IGC stores it); ``&V[off]`` (ADDR_ADD src0) is
    the general operand ``V(0, off / sizeof(type))<0;1,0>`` (ADDR_ADD.md notes).
    """
    program.check_instruction(inst)     # the static rules the assembler, the decoder and the interpreter apply
    o = opcode(inst.op)
    out = bytearray([o.value])
    srcs = list(inst.srcs)
    for f in o.fields:
        if f == "exec":
            out.append((inst.mask.code << 4) | exec_size_code(inst.exec_size))
        elif f == "pred":
            out += struct.pack("<H", inst.pred.encode())
        elif f == "relop":
            out.append(isa.REL_OPS[inst.relop])
        elif f == "minmax":
            out.append(1 if inst.op == "max" else 0)
        elif f == "dst":
            d = inst.dst
            if inst.sat:
                if not isinstance(d, (GeneralOperand, IndirectOperand)):
                    raise IllegalInstruction(".sat needs a general or indirect destination", rule=RULE_TAG,
                                             values={"dst": type(d).__name__})
                d = type(d)(**{**d.__dict__, "modifier": "sat"})
            out += encode_operand(d)
        elif f.startswith("src"):
            s = srcs[int(f[3:])]
            if isinstance(s, AddressOfOperand):
                t = prog.gvar(s.id).type
                if s.offset % t.size:
                    raise IllegalInstruction("address-of byte offset must be a whole number of elements to encode",
                                             rule="ADDR_ADD.md notes (row and column offset)",
                                             values={"offset": s.offset, "type_size": t.size})
                s = GeneralOperand(s.id, 0, s.offset // t.size, 0, 1, 0)
            out += encode_operand(s)
        elif f == "rdst":
            out += encode_raw(inst.dst)
        elif f in ("rsrc0", "rsrc1"):
            out += encode_raw(srcs[int(f[4:])])
        elif f in ("w", "a"):
            out.append(precision_code(getattr(inst.dpas, f)))
        elif f in ("sd", "rc"):
            v = getattr(inst.dpas, f)
            _check_range(f, v, 0, 255, f"visa-DPAS.md: {f.upper()} (ub)")
            out.append(v)
    return bytes(out)


def decode_instruction(r: Reader, prog):
    """Read one instruction (the inverse of :func:`encode_instruction`)."""
    start = r.pos
    val = r.take("B", "opcode")
    o = OPCODE_BY_VALUE.get(val)
    if o is None:
        raise IllegalInstruction("opcode not in the supported subset", rule="visa_igc_common_header.h ISA_Opcode",
                                 values={"opcode": val, "offset": start})
    name, mask, n, pred, sat, relop, dst, dinfo = o.name, None, None, PredControl(), False, None, None, {}
    srcs = []
    for f in o.fields:
        if f == "exec":
            b = r.take("B", "exec_size")
            if (b & 7) not in EXEC_SIZES or b & 8:
                raise IllegalInstruction("exec size bits [2..0] must be 0..5 (bit 3 unused)",
                                         rule="instructions/*.md: Exec_size", values={"exec_size": b})
            n, mask = EXEC_SIZES[b & 7], isa.MaskControl(b >> 4)
        elif f == "pred":
            pred = PredControl.decode(r.take("H", "pred"))
        elif f == "relop":
            code = r.take("B", "rel_op")
            inv = {v: k for k, v in isa.REL_OPS.items()}
            if code not in inv:
                raise IllegalInstruction("rel_op must be 0..5", rule="CMP.md: Rel_op", values={"rel_op": code})
            relop = inv[code]
        elif f == "minmax":
            b = r.take("B", "op")
            if b > 1:
                raise IllegalInstruction("MIN_MAX op must be 0 (min) or 1 (max)", rule="MIN_MAX.md: Op",
                                         values={"op": b})
            name = "max" if b else "min"
        elif f == "dst":
            dst = decode_operand(r)
            if getattr(dst, "modifier", "none") == "sat":
                sat = True
                dst = type(dst)(**{**dst.__dict__, "modifier": "none"})
            elif getattr(dst, "modifier", "none") != "none":
                raise IllegalInstruction("a destination takes no source modifier", rule=RULE_TAG,
                                         values={"modifier": dst.modifier})
        elif f.startswith("src"):
            s = decode_operand(r)
            if getattr(s, "modifier", "none") == "sat":
                raise IllegalInstruction("sat is a destination modifier", rule=RULE_TAG, values={"operand": f})
            if name == "addr_add" and f == "src0" and isinstance(s, GeneralOperand):
                program.check_address_of(s)     # the bits AddressOfOperand has no room for must be canonical
                t = prog.gvar(s.id).type
                s = AddressOfOperand(s.id, s.row * 0 + s.col * t.size) if s.row == 0 else s
            if name in ("dpas", "dpasw") and f == "src2" and isinstance(s, GeneralOperand):
                # DPAS Src2 has no register region (visa-DPAS.md "Register region: No"), yet its record keeps
                # the general operand's region word, and IGC fills it with whatever its source-operand helper
                # defaults to (<1;1,0>, or <0;1,0> for a uniform variable: CISABuilder.cpp GetSourceOperand);
                # its disassembler prints Src2 without one (IsaDisassembly.cpp, showRegion = false). The bits
                # are don't-care: dropped here, as IGC's text does, so IGC's binaries decode.
                s = dataclasses.replace(s, vstride=None, width=None, hstride=1)
            srcs.append(s)
        elif f == "rdst":
            dst = decode_raw(r)
        elif f in ("rsrc0", "rsrc1"):
            srcs.append(decode_raw(r))
        elif f in ("w", "a"):
            dinfo[f] = precision_name(r.take("B", f))
        elif f in ("sd", "rc"):
            dinfo[f] = r.take("B", f)
    info = program.DpasInfo(**dinfo) if dinfo else None
    inst = program.Instruction(name, n, mask, dst, tuple(srcs), pred, sat, relop, info)
    program.check_instruction(inst)
    return inst


def encode_program(prog) -> bytes:
    """All instructions, back to back."""
    return b"".join(encode_instruction(i, prog) for i in prog.instructions)


def decode_program(data: bytes, prog) -> list:
    """Instructions from bytes, with ``prog``'s declarations giving the variable tables."""
    r = Reader(bytes(data))
    out = []
    while not r.done:
        out.append(decode_instruction(r, prog))
    return out
