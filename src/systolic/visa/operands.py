"""The operand records of a vISA instruction: what the assembler builds, the encoder packs, the program's
static checks and the interpreter read (data only: their byte layouts are :mod:`systolic.visa.encoding`).

Source: visa-operands.md (IGC documentation/visa/5_operands.md): "General Operands" (``gen_opnd``),
"Address Operands", "Predicate Operands", "Indirect Operands", "Immediate Operands", "State Operands" and
"Raw Operands"; ``&V`` is ADDR_ADD.md's address-of source. Each record's ``cls`` is its operand class, the name
the instruction pages' operand-class rules and the tag byte use.
"""

from __future__ import annotations

from dataclasses import dataclass

from .isa import VisaType
from .predication import PredControl

__all__ = ["GeneralOperand", "AddressOperand", "PredicateOperand", "IndirectOperand", "ImmediateOperand",
           "StateOperand", "RawOperand", "AddressOfOperand", "VecOperand"]


@dataclass(frozen=True)
class GeneralOperand:
    """``gen_opnd``: variable ``id``, row/column offsets, region (values in elements; None = Null)."""

    id: int
    row: int = 0
    col: int = 0
    vstride: int | None = None
    width: int | None = None
    hstride: int | None = 1
    modifier: str = "none"
    cls = "general"


@dataclass(frozen=True)
class AddressOperand:
    """``addr_opnd``: address variable ``id``, element ``offset`` and ``width`` (1..16 elements)."""

    id: int
    offset: int = 0
    width: int = 1
    modifier: str = "none"
    cls = "address"


@dataclass(frozen=True)
class PredicateOperand:
    """``pred_opnd``: the predicate id/control/inverse word."""

    pred: PredControl
    modifier: str = "none"
    cls = "predicate"


@dataclass(frozen=True)
class IndirectOperand:
    """``indirect_opnd``: ``r[A<id>(addr_offset), indirect_offset]<region>:type``."""

    id: int
    addr_offset: int
    indirect_offset: int
    type: VisaType
    vstride: int | None = None
    width: int | None = None
    hstride: int | None = 1
    modifier: str = "none"
    cls = "indirect"


@dataclass(frozen=True)
class ImmediateOperand:
    """``const_opnd``: type and the low (and, for DF/Q/UQ, high) dword of the value's bits."""

    type: VisaType
    low: int
    high: int | None = None
    modifier: str = "none"
    cls = "immediate"

    @property
    def bits(self) -> int:
        return self.low | ((self.high or 0) << 32)


@dataclass(frozen=True)
class StateOperand:
    """``state_opnd``: storage class 0 surface / 1 sampler, id, offset."""

    state_class: int
    id: int
    offset: int = 0
    modifier: str = "none"
    cls = "state"


@dataclass(frozen=True)
class RawOperand:
    """``raw_operand``: variable id and byte offset (text ``V16.0``)."""

    id: int
    offset: int = 0
    cls = "raw"


@dataclass(frozen=True)
class AddressOfOperand:
    """``&V21[+off]``: the byte address of a general variable (ADDR_ADD src0; text only, encoded as general)."""

    id: int
    offset: int = 0
    cls = "addressof"


VecOperand = GeneralOperand | AddressOperand | PredicateOperand | IndirectOperand | ImmediateOperand | StateOperand
