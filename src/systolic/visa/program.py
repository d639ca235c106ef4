"""A vISA program as data: declarations and instructions (what the assembler reads and prints,
the encoder packs and the interpreter runs).

Sources: IGC documentation/visa/8_appendix_visa_assembly_syntax.md (declarations, instruction
syntax) and instructions/<NAME>.md (fields of each instruction).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import IllegalInstruction, SystolicError
from .isa import MaskControl, Opcode
from .opcodes import opcode
from .operands import (AddressOfOperand, AddressOperand, GeneralOperand, ImmediateOperand, IndirectOperand,
                       RawOperand)
from .predication import PredControl
from .regions import check_dst_region, check_src_region
from .variables import NULL_VAR, AddressVar, GeneralVar, PredicateVar

__all__ = ["DpasInfo", "Instruction", "Program", "check_address_of", "check_address_width", "check_immediate_type",
           "check_dpas_operands", "located"]

RULE_ADDR_OF = "ADDR_ADD.md notes (a general Src0 is the variable's byte address; its region must be <0;1,0>)"
RULE_ADDR_WIDTH = ("visa-operands.md: Address Operands (width: \"the same of those for execution size, "
                   "except that 32 is not allowed\")")
RULE_IMM_TYPE = "visa-operands.md: Immediate Operands (\"An immediate constant may have any type except BOOL\")"
RULE_DPAS_MOD = "visa-DPAS.md: Properties (Source Modifier: false; IGC IsaVerification: modifier not allowed for dpas)"
RULE_DPAS_REGION = "visa-DPAS.md: Notes (Register region: No)"
RULE_DPAS_FORMAT = "visa-DPAS.md: Format (raw Dst, Src0, Src1; Src2 operand class general)"


def check_address_width(width) -> None:
    """An address operand's width is an execution size other than 32: 1, 2, 4, 8 or 16 (visa-operands.md
    "Address Operands"). The one copy of the rule: the static checks, the encoder and the decoder call it."""
    if isinstance(width, bool) or width not in (1, 2, 4, 8, 16):
        raise IllegalInstruction("address operand width must be an execution size other than 32 (1, 2, 4, 8, 16)",
                                 rule=RULE_ADDR_WIDTH, values={"width": width})


def check_immediate_type(t) -> None:
    """An immediate constant has any type but BOOL (visa-operands.md "Immediate Operands"); the one copy of
    the rule, read by the static checks and the encoder."""
    if t.kind == "bool":
        raise IllegalInstruction("an immediate constant may have any type except BOOL", rule=RULE_IMM_TYPE,
                                 values={"type": t.name})


def check_dpas_operands(inst: "Instruction") -> None:
    """DPAS/DPASW operands (visa-DPAS.md): Dst, Src0 and Src1 are raw operands (which take no modifier:
    visa-operands.md "Raw Operands", and their records have no field for one), Src2 is a general operand
    with no source modifier ("Source Modifier: false") and no register region ("Register region: No";
    a Src2 written without a region is ``vstride = width = None``). ``.sat`` is refused by the opcode's
    saturation column before this runs. Their footprints need the register layout: the interpreter checks
    them (:func:`systolic.visa.semantics.execute_dpas`)."""
    names = ("dst", "src0", "src1", "src2")
    ops = (inst.dst, *inst.srcs)
    if len(ops) != 4:
        raise IllegalInstruction(f"{inst.op} takes Dst, Src0, Src1 and Src2", rule=RULE_DPAS_FORMAT,
                                 values={"operands": len(ops)})
    for name, op in zip(names, ops):
        want = GeneralOperand if name == "src2" else RawOperand
        if type(op) is not want:
            raise IllegalInstruction(f"{inst.op} {name} must be a {want.cls} operand", rule=RULE_DPAS_FORMAT,
                                     values={"operand": name, "class": getattr(op, "cls", type(op).__name__)})
    s2 = ops[3]
    if s2.modifier != "none":
        raise IllegalInstruction(f"{inst.op} Src2 takes no source modifier", rule=RULE_DPAS_MOD,
                                 values={"opcode": inst.op, "modifier": s2.modifier})
    if s2.vstride is not None or s2.width is not None or s2.hstride not in (None, 1):
        raise IllegalInstruction(f"{inst.op} Src2 takes no register region", rule=RULE_DPAS_REGION,
                                 values={"opcode": inst.op,
                                         "region": f"<{s2.vstride};{s2.width},{s2.hstride}>"})


def check_address_of(op: GeneralOperand) -> None:
    """ADDR_ADD's general Src0 stands for the byte address of the variable plus its row and column offsets
    (``&V``): ADDR_ADD.md notes say its region must be <0;1,0>, and an address takes no source modifier (IGC's
    ``CreateVISAAddressOfOperand`` has no modifier argument; its binary reader drops the bits). Either one
    set would be lost silently, so both are refused."""
    if op.modifier != "none":
        raise IllegalInstruction("addr_add's general Src0 (&V, an address) takes no source modifier",
                                 rule=RULE_ADDR_OF, values={"modifier": op.modifier})
    if (op.vstride, op.width, op.hstride) != (0, 1, 0):
        region = f"<{op.vstride};{op.width},{op.hstride}>"
        raise IllegalInstruction("addr_add's general Src0 (&V) must have the region <0;1,0>", rule=RULE_ADDR_OF,
                                 values={"region": region})


@dataclass(frozen=True)
class DpasInfo:
    """``DPAS.W.A.SD.RC``: Src1 precision W, Src2 precision A, systolic depth, repeat count (visa-DPAS.md)."""

    w: str
    a: str
    sd: int
    rc: int


@dataclass(frozen=True)
class Instruction:
    """One instruction; operands are the operand records of :mod:`systolic.visa.operands`."""

    op: str
    exec_size: int
    mask: MaskControl
    dst: object
    srcs: tuple
    pred: PredControl = PredControl()
    sat: bool = False
    relop: str | None = None
    dpas: DpasInfo | None = None
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)

    @property
    def opcode(self) -> Opcode:
        return opcode(self.op)

    def where(self) -> str:
        return f"{self.line}:{self.column}" if self.line else ""


def located(err: SystolicError, line: int, column: int, source: str | None = None) -> SystolicError:
    """The same error with ``[source:]line:column:`` in front of its message (kept type, rule and values)."""
    if not line or getattr(err, "_located", False):
        return err
    where = f"{source}:" if source else ""
    new = type(err).__new__(type(err))
    SystolicError.__init__(new, f"{where}{line}:{column}: {err.message}", rule=err.rule, values=err.values)
    for k, v in vars(err).items():
        if k not in ("message", "rule", "values"):
            setattr(new, k, v)
    new._located = True
    return new


@dataclass
class Program:
    """Declarations (general ids from 1, address ids from 0, predicate ids from 1) and instructions."""

    general: list = field(default_factory=list)
    address: list = field(default_factory=list)
    predicate: list = field(default_factory=list)
    instructions: list = field(default_factory=list)
    kernel: str | None = None
    version: str | None = None
    source: str | None = None

    # ---------------------------------------------------------------- declaration tables
    def names(self) -> set:
        return {v.name for v in self.general} | {v.name for v in self.address} | {v.name for v in self.predicate}

    def declare(self, var):
        """Add a declaration, giving it the next id of its table."""
        if var.name in self.names() or var.name == NULL_VAR.name:
            raise IllegalInstruction("variable declared twice", rule="8_appendix_visa_assembly_syntax.md: Declarations",
                                     values={"variable": var.name})
        if isinstance(var, GeneralVar):
            var = replace(var, id=len(self.general) + 1)
            self.general.append(var)
        elif isinstance(var, AddressVar):
            var = replace(var, id=len(self.address))
            self.address.append(var)
        elif isinstance(var, PredicateVar):
            var = replace(var, id=len(self.predicate) + 1)
            self.predicate.append(var)
        return var

    def gvar(self, vid: int) -> GeneralVar:
        if vid == 0:
            return NULL_VAR
        if not 1 <= vid <= len(self.general):
            raise IllegalInstruction("general variable id not declared", rule="visa-operands.md: gen_opnd.id",
                                     values={"id": vid, "declared": len(self.general)})
        return self.general[vid - 1]

    def avar(self, aid: int) -> AddressVar:
        if not 0 <= aid < len(self.address):
            raise IllegalInstruction("address variable id not declared", rule="visa-operands.md: addr_opnd.id",
                                     values={"id": aid, "declared": len(self.address)})
        return self.address[aid]

    def pvar(self, pid: int) -> PredicateVar:
        if not 1 <= pid <= len(self.predicate):
            raise IllegalInstruction("predicate variable id not declared",
                                     rule="visa-operands.md: Predication (predicate ID)",
                                     values={"id": pid, "declared": len(self.predicate)})
        return self.predicate[pid - 1]

    def lookup(self, name: str):
        if name == NULL_VAR.name:
            return NULL_VAR
        for table in (self.general, self.address, self.predicate):
            for v in table:
                if v.name == name:
                    return v
        return None


def check_instruction(inst: Instruction) -> None:
    """The static rules of one instruction (no register state needed); raises IllegalInstruction.

    Exec size and mask (instructions/*.md Exec_size; ChEn is 32 channels), predication only where the
    format row has a Pred field, ``.sat`` only where the page allows it, operand classes of the page,
    source modifiers by kind (visa-operands.md "Vector Operands": "not" only in and/not/or/xor,
    arithmetic ones in arithmetic, shift and move instructions), region rules 1-5, no multi-address
    destination, no BOOL immediate, address-operand widths 1..16 (:func:`check_address_width`), and the
    DPAS/DPASW operand rules of :func:`check_dpas_operands`.
    """
    o = inst.opcode
    doc = f"instructions/{o.doc}"
    n = inst.exec_size
    if n not in (1, 2, 4, 8, 16, 32):
        raise IllegalInstruction("execution size must be 1, 2, 4, 8, 16 or 32", rule=f"{doc}: Exec_size",
                                 values={"exec_size": n})
    if inst.mask.offset + n > 32:
        raise IllegalInstruction("mask control offset + execution size exceeds 32 channels",
                                 rule="visa-operands.md: Predication (ChEn is a 32-bit mask)",
                                 values={"mask": inst.mask.name, "exec_size": n})
    if inst.pred.active and not o.has_pred:
        raise IllegalInstruction(f"{inst.op} takes no predicate", rule=f"{doc}: format", values={"opcode": inst.op})
    if inst.sat and o.sat == "no":
        raise IllegalInstruction(f"{inst.op} does not support .sat", rule=f"{doc}: Saturation",
                                 values={"opcode": inst.op})
    if inst.op in ("dpas", "dpasw"):
        check_dpas_operands(inst)
        return
    classes = [("dst", inst.dst, o.dst_classes)] + [(f"src{i}", s, o.src_classes) for i, s in enumerate(inst.srcs)]
    for where, op, allowed in classes:
        cls = "general" if isinstance(op, AddressOfOperand) else op.cls
        if cls not in allowed:
            raise IllegalInstruction(f"{inst.op} {where} may not be a {cls} operand", rule=f"{doc}: operand class",
                                     values={"operand": where, "class": cls, "allowed": list(allowed)})
        if isinstance(op, ImmediateOperand):
            check_immediate_type(op.type)
        elif isinstance(op, AddressOperand):
            check_address_width(op.width)
        mod = getattr(op, "modifier", "none")
        if mod != "none":
            if isinstance(op, ImmediateOperand):
                raise IllegalInstruction("modifiers may only be used for General and Indirect operands",
                                         rule="visa-operands.md: Vector Operands (tag byte)",
                                         values={"class": "immediate"})
            kind = "logic" if mod == "not" else "arithmetic"
            if o.modifier != kind:
                raise IllegalInstruction(f"the {mod} modifier is not allowed on {inst.op}",
                                         rule="visa-operands.md: Vector Operands (modifiers) / " + doc,
                                         values={"modifier": mod, "opcode": inst.op,
                                                 "allowed": o.modifier or "none"})
        if isinstance(op, (GeneralOperand, IndirectOperand)) and not isinstance(op, AddressOfOperand):
            if where == "dst":
                if isinstance(op, IndirectOperand) and op.vstride is None and op.width is not None:
                    raise IllegalInstruction("a multi-address indirect operand may not be a destination",
                                             rule="visa-operands.md: Additional Region Restrictions for indirect "
                                                  "operands rule 1", values={"operand": where})
                check_dst_region(op.hstride)
            elif inst.op == "addr_add" and where == "src0":
                check_address_of(op)
            else:
                check_src_region(op.vstride, op.width, op.hstride, n,
                                 multi_address_ok=isinstance(op, IndirectOperand))
