"""vISA variables and where the JIT places them in the GRF.

Sources: IGC documentation/visa/8_appendix_visa_assembly_syntax.md ("Declarations": general
``v_type=G``, address ``v_type=A`` (type UW), predicate ``v_type=P`` (BOOL); align values
byte|word|dword|qword|oword|GRF|2GRF) and visa-operands.md "Region Restrictions", implementation
note: variables of at least one GRF are GRF-aligned, smaller ones are placed inside one GRF.
The GRF size comes from the platform (REFERENCE.md section 3: 32 bytes on DG2, 64 on PVC/Xe2).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import IllegalInstruction
from .isa import VisaType

__all__ = ["ALIGNMENTS", "GeneralVar", "AddressVar", "PredicateVar", "NULL_VAR", "layout", "Layout"]

RULE_DECL = "8_appendix_visa_assembly_syntax.md: Declarations"
RULE_ALIGN = "visa-operands.md: Region Restrictions, implementation note (JIT variable alignment)"

#: align=<...> -> bytes (None: in GRF units, resolved with the platform's GRF size). The appendix lists
#: byte..oword, GRF, 2GRF; IGC's printer also writes GRFx2, hword, wordx32, wordx64
#: (visa/Common_ISA_util.cpp ``CISAAlignTable``).
ALIGNMENTS = {"byte": 1, "word": 2, "dword": 4, "qword": 8, "oword": 16, "hword": 32, "wordx32": 64,
              "wordx64": 128, "GRF": None, "2GRF": None, "GRFx2": None}
_ALIGN_CANON = {k.lower(): k for k in ALIGNMENTS}


def canonical_align(name: str | None) -> str | None:
    if name is None:
        return None
    key = _ALIGN_CANON.get(name.lower())
    if key is None:
        raise IllegalInstruction("unknown alignment", rule=RULE_DECL,
                                 values={"align": name, "known": list(ALIGNMENTS)})
    return key


@dataclass(frozen=True)
class GeneralVar:
    """``.decl V v_type=G type=T num_elts=N [align=A] [alias=<W, off>]`` (id counts from 1; 0 is %null)."""

    name: str
    type: VisaType
    num_elts: int
    align: str | None = None
    alias: tuple[str, int] | None = None
    id: int = 0

    def __post_init__(self):
        if self.type.kind in ("vector", "bool"):
            raise IllegalInstruction("a general variable may not have type V, UV, VF or BOOL", rule=RULE_DECL,
                                     values={"variable": self.name, "type": self.type.name})
        if not 1 <= self.num_elts <= 65536:
            raise IllegalInstruction("num_elts of a general variable must be in [1, 65536]", rule=RULE_DECL,
                                     values={"variable": self.name, "num_elts": self.num_elts})
        object.__setattr__(self, "align", canonical_align(self.align))

    @property
    def size(self) -> int:
        return self.num_elts * self.type.size


NULL_VAR = GeneralVar("%null", VisaType("ud", 0, 4, "int", False, "ud"), 1, None, None, 0)


@dataclass(frozen=True)
class AddressVar:
    """``.decl A v_type=A num_elts=N``: N UW byte addresses into the GRF (N in 1..16)."""

    name: str
    num_elts: int
    id: int = 0

    def __post_init__(self):
        if not 1 <= self.num_elts <= 16:
            raise IllegalInstruction("num_elts of an address variable must be in [1, 16]", rule=RULE_DECL,
                                     values={"variable": self.name, "num_elts": self.num_elts})


@dataclass(frozen=True)
class PredicateVar:
    """``.decl P v_type=P num_elts=N``: N BOOL channels (N in 1..32); ids count from 1 (P0 = none)."""

    name: str
    num_elts: int
    id: int = 1

    def __post_init__(self):
        if not 1 <= self.num_elts <= 32:
            raise IllegalInstruction("num_elts of a predicate variable must be in [1, 32]", rule=RULE_DECL,
                                     values={"variable": self.name, "num_elts": self.num_elts})


def align_bytes(var: GeneralVar, grf_bytes: int) -> int:
    """The byte alignment the JIT gives ``var``: declared, element size, and GRF for >= one GRF."""
    a = max(var.type.size, 1)
    if var.align == "GRF":
        a = max(a, grf_bytes)
    elif var.align in ("2GRF", "GRFx2"):
        a = max(a, 2 * grf_bytes)
    elif var.align is not None:
        a = max(a, ALIGNMENTS[var.align])
    if var.size >= grf_bytes:
        a = max(a, grf_bytes)
    return a


@dataclass(frozen=True)
class Layout:
    """Byte offset of every general variable in the GRF file (``offsets[name]``)."""

    offsets: dict
    grf_bytes: int
    num_grf: int
    end: int

    def owner(self, address: int, variables) -> GeneralVar | None:
        """The (non-alias) variable whose bytes contain ``address``."""
        for v in variables:
            if v.alias is None and v.id != 0:
                o = self.offsets[v.name]
                if o <= address < o + v.size:
                    return v
        return None


def layout(variables, grf_bytes: int, num_grf: int) -> Layout:
    """Place variables in declaration order, first fit, obeying the JIT alignment rules.

    A variable of at least one GRF starts on a GRF boundary; a smaller one never crosses one.
    Aliases take their parent's offset plus the alias offset.
    """
    offsets: dict[str, int] = {}
    total = grf_bytes * num_grf
    ptr = 0
    byname = {v.name: v for v in variables}
    for v in variables:
        if v.alias is not None:
            continue
        a = align_bytes(v, grf_bytes)
        ptr = -(-ptr // a) * a
        if v.size < grf_bytes and ptr // grf_bytes != (ptr + v.size - 1) // grf_bytes:
            ptr = -(-ptr // grf_bytes) * grf_bytes
        if ptr + v.size > total:
            raise IllegalInstruction("variables do not fit in the GRF file", rule=RULE_ALIGN,
                                     values={"variable": v.name, "needs_end": ptr + v.size, "grf_file_bytes": total})
        offsets[v.name] = ptr
        ptr += v.size
    for v in variables:
        if v.alias is None:
            continue
        parent, off = v.alias
        seen = set()
        p = byname.get(parent)
        while p is not None and p.alias is not None and p.name not in seen:
            seen.add(p.name)
            off += p.alias[1]
            p = byname.get(p.alias[0])
        if p is None or p.name in seen:
            raise IllegalInstruction("alias of an undeclared variable", rule=RULE_DECL,
                                     values={"variable": v.name, "alias_of": parent})
        base = offsets[p.name] + off
        if off < 0 or off + v.size > p.size:
            raise IllegalInstruction("alias reaches outside the variable it aliases", rule=RULE_DECL,
                                     values={"variable": v.name, "alias_of": p.name, "offset": off, "size": v.size,
                                             "parent_size": p.size})
        offsets[v.name] = base
    return Layout(offsets, grf_bytes, num_grf, ptr)
