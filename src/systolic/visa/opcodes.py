"""The supported vISA instructions, one :class:`~systolic.visa.isa.Opcode` record each: opcode value, binary
format row, supported types, source-modifier kind, saturation, operand classes, the manual page, and its
execute semantics (:mod:`systolic.visa.semantics`).

Sources: IGC ``documentation/visa/instructions/<NAME>.md`` (opcode, format row, supported types, saturation,
source-modifier kind). Adding an instruction is one record here plus its semantics (a per-element function of
:mod:`systolic.visa.alu` wrapped by :func:`~systolic.visa.semantics.arithmetic`, or an execute of its own); the
assembler, the encoder, the static checks and the interpreter read the record.
"""

from __future__ import annotations

from ..errors import IllegalInstruction
from . import semantics as S
from .isa import FLOAT_TYPES as FLT, INT_TYPES as INT, Opcode

__all__ = ["OPCODES", "OPCODE_BY_VALUE", "opcode"]

_ARITH2 = ("exec", "pred", "dst", "src0", "src1")
OPCODES: dict[str, Opcode] = {o.name: o for o in (
    Opcode("add", 0x01, _ARITH2, INT + FLT, "arithmetic", "yes", execute=S.arithmetic(S.add), doc="ADD.md"),
    Opcode("mad", 0x0C, ("exec", "pred", "dst", "src0", "src1", "src2"), INT + FLT, "arithmetic", "float",
           execute=S.arithmetic(S.mad), doc="MAD.md"),
    Opcode("mul", 0x10, _ARITH2, INT + FLT, "arithmetic", "yes", execute=S.arithmetic(S.mul), doc="MUL.md"),
    Opcode("and", 0x20, _ARITH2, INT + ("bool",), "logic", "no",
           dst_classes=("general", "indirect", "predicate"),
           src_classes=("general", "indirect", "predicate", "immediate"), execute=S.logic(S.and_), doc="AND.md"),
    Opcode("or", 0x21, _ARITH2, INT + ("bool",), "logic", "no",
           dst_classes=("general", "indirect", "predicate"),
           src_classes=("general", "indirect", "predicate", "immediate"), execute=S.logic(S.or_), doc="OR.md"),
    Opcode("xor", 0x22, _ARITH2, INT + ("bool",), "logic", "no",
           dst_classes=("general", "indirect", "predicate"),
           src_classes=("general", "indirect", "predicate", "immediate"), execute=S.logic(S.xor), doc="XOR.md"),
    Opcode("not", 0x23, ("exec", "pred", "dst", "src0"), INT + ("bool",), "logic", "no",
           dst_classes=("general", "indirect", "predicate"),
           src_classes=("general", "indirect", "predicate", "immediate"), execute=S.logic(S.not_), doc="NOT.md"),
    Opcode("shl", 0x24, _ARITH2, INT, "arithmetic", "yes", execute=S.arithmetic(S.shl), doc="SHL.md"),
    Opcode("shr", 0x25, _ARITH2, INT, "arithmetic", "yes", execute=S.arithmetic(S.shr), doc="SHR.md"),
    Opcode("asr", 0x26, _ARITH2, INT, "arithmetic", "yes", execute=S.arithmetic(S.asr), doc="ASR.md"),
    Opcode("addr_add", 0x28, ("exec", "dst", "src0", "src1"), ("uw",), "arithmetic", "no",
           dst_classes=("address",), src_classes=("address", "general", "state", "immediate"),
           execute=S.execute_addr_add, doc="ADDR_ADD.md"),
    Opcode("mov", 0x29, ("exec", "pred", "dst", "src0"), INT + FLT + ("bool",), "arithmetic", "yes",
           src_classes=("general", "indirect", "immediate", "predicate"), execute=S.execute_mov, doc="MOV.md"),
    Opcode("sel", 0x2A, _ARITH2, INT + FLT, "arithmetic", "yes", execute=S.execute_sel, doc="SEL.md"),
    Opcode("setp", 0x2B, ("exec", "dst", "src0"), ("ub", "uw", "ud"), None, "no",
           dst_classes=("predicate",), execute=S.execute_setp, doc="SETP.md"),
    Opcode("cmp", 0x2C, ("exec", "relop", "dst", "src0", "src1"), INT + FLT, "arithmetic", "no",
           dst_classes=("predicate", "general"), execute=S.execute_cmp, doc="CMP.md"),
    Opcode("min", 0x45, ("exec", "minmax", "dst", "src0", "src1"), INT + FLT, "arithmetic", "yes",
           execute=S.arithmetic(S.min_), doc="MIN_MAX.md (Op bit 0 = 0)"),
    Opcode("max", 0x45, ("exec", "minmax", "dst", "src0", "src1"), INT + FLT, "arithmetic", "yes",
           execute=S.arithmetic(S.max_), doc="MIN_MAX.md (Op bit 0 = 1)"),
    Opcode("dpasw", 0x1C, ("exec", "rdst", "rsrc0", "rsrc1", "src2", "w", "a", "sd", "rc"), ("d", "ud", "f"),
           None, "no", dst_classes=("raw",), src_classes=("raw", "raw", "general"),
           execute=S.execute_dpas, doc="DPASW.md"),
    Opcode("dpas", 0x83, ("exec", "rdst", "rsrc0", "rsrc1", "src2", "w", "a", "sd", "rc"),
           ("d", "ud", "f", "bf", "hf"), None, "no", dst_classes=("raw",), src_classes=("raw", "raw", "general"),
           execute=S.execute_dpas, doc="DPAS.md"),
)}
OPCODE_BY_VALUE: dict[int, Opcode] = {}
for _o in OPCODES.values():
    OPCODE_BY_VALUE.setdefault(_o.value, _o)  # 0x45 -> min; the Op byte picks max


def opcode(name: str) -> Opcode:
    """The instruction named ``name`` (case-insensitive)."""
    o = OPCODES.get(name.lower())
    if o is None:
        raise IllegalInstruction(f"unsupported vISA instruction {name!r}", rule="systolic.visa.isa: supported subset",
                                 values={"opcode": name, "supported": sorted(OPCODES)})
    return o
