"""The vISA instruction set as data: element types, operand classes, modifiers, masks, opcodes.

Sources: IGC ``documentation/visa/2_datatypes.md`` (type table and binary codes),
``5_operands.md`` (operand classes; visa-operands.md here), ``instructions/*.md`` (opcode,
format row, supported types, saturation, source-modifier kind), and the enums of
``visa/include/visa_igc_common_header.h`` (``VISA_Modifier``, ``ISA_Opcode``) for the values the
operand chapter leaves out. The :class:`Opcode` records, one per instruction with its execute semantics, are
:mod:`systolic.visa.opcodes`; the interpreter, the assembler and the encoder read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import IllegalInstruction

__all__ = ["VisaType", "TYPES", "TYPE_BY_CODE", "vtype", "EXEC_SIZES", "exec_size_code", "MASK_NAMES",
           "MaskControl", "mask_by_name", "MODIFIERS", "MODIFIER_TEXT", "OPERAND_CLASSES", "REL_OPS",
           "Opcode", "INT_TYPES", "FLOAT_TYPES", "PRECISIONS", "PRECISION_BY_CODE", "precision"]


@dataclass(frozen=True)
class VisaType:
    """One vISA element type (2_datatypes.md, "Fundamental Data Types")."""

    name: str          # text format, lower case as IGC prints it ("ud", "hf", ...)
    code: int          # 4-bit binary format
    size: int          # bytes one element occupies in a variable (V/UV/VF: one dword)
    kind: str          # "int", "float", "vector" (packed immediates) or "bool"
    signed: bool
    systolic: str | None  # name in systolic.types for conversions

    @property
    def bits(self) -> int:
        return 8 * self.size

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"


TYPES: dict[str, VisaType] = {t.name: t for t in (
    VisaType("ud", 0b0000, 4, "int", False, "ud"),
    VisaType("d", 0b0001, 4, "int", True, "d"),
    VisaType("uw", 0b0010, 2, "int", False, "uw"),
    VisaType("w", 0b0011, 2, "int", True, "w"),
    VisaType("ub", 0b0100, 1, "int", False, "ub"),
    VisaType("b", 0b0101, 1, "int", True, "b"),
    VisaType("df", 0b0110, 8, "float", True, "df"),
    VisaType("f", 0b0111, 4, "float", True, "f"),
    VisaType("v", 0b1000, 4, "vector", True, None),
    VisaType("vf", 0b1001, 4, "vector", True, None),
    VisaType("bool", 0b1010, 1, "bool", False, None),
    VisaType("uq", 0b1011, 8, "int", False, "uq"),
    VisaType("uv", 0b1100, 4, "vector", False, None),
    VisaType("q", 0b1101, 8, "int", True, "q"),
    VisaType("hf", 0b1110, 2, "float", True, "hf"),
    VisaType("bf", 0b1111, 2, "float", True, "bf"),
)}
TYPE_BY_CODE: dict[int, VisaType] = {t.code: t for t in TYPES.values()}


def vtype(name: str | VisaType) -> VisaType:
    """The vISA type named ``name`` (case-insensitive, e.g. "UD", "hf")."""
    if isinstance(name, VisaType):
        return name
    t = TYPES.get(str(name).lower())
    if t is None:
        raise IllegalInstruction(f"unknown vISA type {name!r}", rule="2_datatypes.md: type table",
                                 values={"type": name, "known": sorted(TYPES)})
    return t


#: Exec_size bits [2..0] -> number of channels (instructions/*.md, "Exec_size(ub)")
EXEC_SIZES: dict[int, int] = {0: 1, 1: 2, 2: 4, 3: 8, 4: 16, 5: 32}
_EXEC_CODE = {v: k for k, v in EXEC_SIZES.items()}


def exec_size_code(n: int) -> int:
    """The 3-bit code of execution size ``n`` (1, 2, 4, 8, 16 or 32)."""
    if n not in _EXEC_CODE:
        raise IllegalInstruction("execution size must be 1, 2, 4, 8, 16 or 32",
                                 rule="instructions/*.md: Exec_size bits [2..0]", values={"exec_size": n})
    return _EXEC_CODE[n]


#: Exec_size bits [7..4] (instructions/*.md): M1..M8, then M1_NM..M8_NM
MASK_NAMES = ("M1", "M2", "M3", "M4", "M5", "M6", "M7", "M8",
              "M1_NM", "M2_NM", "M3_NM", "M4_NM", "M5_NM", "M6_NM", "M7_NM", "M8_NM")


@dataclass(frozen=True)
class MaskControl:
    """Mask control {M1..M8}[_NM]: ``offset`` is the first channel (M3 -> 8), ``nomask`` ignores EM.

    5_operands.md "Predication": "a value of {M3} means the first element will be pred_id(8)".
    """

    code: int  # 4-bit field value

    @property
    def offset(self) -> int:
        return 4 * (self.code & 7)

    @property
    def nomask(self) -> bool:
        return bool(self.code & 8)

    @property
    def name(self) -> str:
        return MASK_NAMES[self.code]


def mask_by_name(name: str) -> MaskControl:
    """Parse a mask name as IGC prints it; "NoMask"/"NM" mean M1_NM (visa/Common_ISA.cpp ``emask_str``)."""
    key = name.upper()
    if key in ("NOMASK", "NM"):
        key = "M1_NM"
    if key == "M0":  # the appendix grammar lists M0; it is the first group, as M1
        key = "M1"
    for i, n in enumerate(MASK_NAMES):
        if n.upper() == key:
            return MaskControl(i)
    raise IllegalInstruction(f"unknown mask control {name!r}", rule="instructions/*.md: Exec_size bits [7..4]",
                             values={"mask": name, "known": list(MASK_NAMES) + ["NoMask"]})


#: operand tag bits 3-5 (visa_igc_common_header.h ``VISA_Modifier``; the operand chapter omits the table)
MODIFIERS = {0: "none", 1: "abs", 2: "neg", 3: "neg_abs", 4: "sat", 5: "not"}
MODIFIER_CODES = {v: k for k, v in MODIFIERS.items()}
#: text spelling (visa/Common_ISA_util.cpp ``Common_ISA_Get_Modifier_Name``); sat is printed as ".sat" on the opcode
MODIFIER_TEXT = {"none": "", "abs": "(abs)", "neg": "(-)", "neg_abs": "(-abs)", "not": "(~)"}

#: operand tag bits 0-2 (5_operands.md "Vector Operands")
OPERAND_CLASSES = {0b000: "general", 0b001: "address", 0b010: "predicate", 0b011: "indirect",
                   0b101: "immediate", 0b110: "state"}
OPERAND_CLASS_CODES = {v: k for k, v in OPERAND_CLASSES.items()}

#: CMP Rel_op bits [2..0] (instructions/CMP.md)
REL_OPS = {"eq": 0, "ne": 1, "gt": 2, "ge": 3, "lt": 4, "le": 5}

#: the integer and float element types an instruction page lists as "Supported Types"
INT_TYPES = ("ud", "d", "uw", "w", "ub", "b", "uq", "q")
FLOAT_TYPES = ("f", "hf", "bf", "df")


@dataclass(frozen=True)
class Opcode:
    """One instruction of the supported subset (instructions/<NAME>.md).

    ``fields`` is the binary format row after the opcode byte, e.g. ("exec", "pred", "dst", "src0", "src1").
    ``modifier`` is the source-modifier kind the page states ("arithmetic", "logic" or None).
    ``sat``: "yes", "float" (only when the type is float) or "no".
    ``execute(machine, inst)``: the instruction's semantics (:mod:`systolic.visa.semantics`), run by the
    interpreter once the instruction is decoded and checked. The records themselves are the table
    :data:`systolic.visa.opcodes.OPCODES`.
    """

    name: str
    value: int
    fields: tuple[str, ...]
    types: tuple[str, ...]
    modifier: str | None
    sat: str
    dst_classes: tuple[str, ...] = ("general", "indirect")
    src_classes: tuple[str, ...] = ("general", "indirect", "immediate")
    doc: str = ""
    execute: Callable | None = field(default=None, compare=False, repr=False)

    @property
    def n_src(self) -> int:
        return sum(1 for f in self.fields if f.startswith("src"))

    @property
    def has_pred(self) -> bool:
        return "pred" in self.fields


#: DPAS operand precisions (visa-DPAS.md "operand precisions" table; REFERENCE.md section 1 for bf8/hf8/e2m1)
PRECISIONS: dict[str, int] = {"u1": 1, "s1": 2, "u2": 3, "s2": 4, "u4": 5, "s4": 6, "u8": 7, "s8": 8,
                              "bf": 9, "hf": 10, "bf8": 11, "tf32": 12, "hf8": 14, "e2m1": 15}
PRECISION_BY_CODE: dict[int, str] = {v: k for k, v in PRECISIONS.items()}


def precision(name: str) -> str:
    """Canonical DPAS precision name (``u8``, ``s4``, ``bf``, ``hf``, ``tf32``, ...)."""
    key = name.lower()
    if key not in PRECISIONS:
        raise IllegalInstruction(f"unknown DPAS precision {name!r}", rule="visa-DPAS.md: operand precisions table",
                                 values={"precision": name, "known": sorted(PRECISIONS)})
    return key
