"""DPAS/DPASW operand rules: OPS_PER_CHAN, the legal type table, alignment and footprints.

Sources: visa-DPAS.md ("Semantics", the legal-combination table, "Notes:
Alignment"), IGC ``visa/IsaVerification.cpp`` ``verifyInstructionDpas``
(``getDpasOpsPerChan``, the dst/src0/src1/src2 alignment checks, the exec-size
and DPASW platform checks), ``visa/G4_Verifier.cpp`` (Dst/Src0 types per
precision), ``visa/G4_IR.cpp`` ``G4_InstDpas::computeRightBound`` (operand
footprints: Dst and Src0 are packed, ``exec_size * type_size`` bytes per row).

:func:`check` validates one instruction and returns a :class:`DpasShape`
holding every derived quantity; every broken rule raises
:class:`~systolic.errors.IllegalInstruction` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import types as T
from ..errors import IllegalInstruction, InvalidValue
from .platform import FLOAT_PRECISIONS, INT_PRECISIONS, Platform

__all__ = ["DpasShape", "canonical_precision", "canonical_acc_type", "precision_class", "ops_per_chan", "check"]

_SUB_BYTE_INT = ("s4", "u4", "s2", "u2")
ACC_TYPES = ("int32", "u32", "fp32", "bf16", "fp16")


def canonical_precision(p) -> str:
    """The canonical name of a DPAS precision (accepts systolic.types aliases: ``bf``, ``hf``, ``e5m2``...)."""
    try:
        name = T.get(p).name
    except InvalidValue:
        name = str(p)
    if name in ("u1", "s1"):
        # the precision table lists u1/s1 (and they encode), but no platform modelled here takes them
        # (systolic.xmx.platform: INT_PRECISIONS)
        raise IllegalInstruction(f"no modelled platform takes the 1-bit DPAS precision {name}",
                                 rule="visa-DPAS.md precision table lists u1/s1; no modelled platform "
                                      "(xmx.platform INT_PRECISIONS) takes 1-bit precisions",
                                 values={"precision": p})
    if name not in INT_PRECISIONS + FLOAT_PRECISIONS:
        from ..suggest import did_you_mean
        raise IllegalInstruction(f"{p!r} is not a DPAS operand precision"
                                 f"{did_you_mean(name, INT_PRECISIONS + FLOAT_PRECISIONS)}",
                                 rule="visa-DPAS.md precision table (u2/s2/u4/s4/u8/s8/bf/hf/tf32/bf8/hf8/e2m1)",
                                 values={"precision": p})
    return name


def canonical_acc_type(t, what: str) -> str:
    """Canonical name of a Dst/Src0 type: ``d``->int32, ``ud``->u32, ``f``->fp32, ``bf``->bf16, ``hf``->fp16."""
    try:
        name = T.get(t).name
    except InvalidValue:
        name = str(t)
    if name == "fp64":
        raise IllegalInstruction(f"no platform implements a DF DPAS {what}",
                                 rule="visa-DPAS.md lists DF for Dst/Src0, but neither a platform nor IGC "
                                      "implements a DF DPAS (modelled here: D, UD, F, BF, HF)",
                                 values={what: t})
    if name not in ACC_TYPES:
        raise IllegalInstruction(f"DPAS {what} must have type D, UD, F, BF or HF",
                                 rule="visa-DPAS.md: Dst/Src0 must have type D,UD,F,BF,HF", values={what: t})
    return name


def precision_class(p: str) -> str:
    """"int", "bf16", "fp16", "tf32", "fp8" or "e2m1": the rows of the legal-combination table."""
    if p in INT_PRECISIONS:
        return "int"
    if p in ("bf8", "hf8"):
        return "fp8"
    return p


def precision_bits(p: str) -> int:
    """Bits one element occupies in its register (tf32 occupies a whole dword)."""
    return T.get(p).storage_bits


def ops_per_chan(src1: str, src2: str) -> int:
    """OPS_PER_CHAN: elements per dword channel per systolic stage (IGC getDpasOpsPerChan)."""
    if src1 in ("bf16", "fp16"):
        return 2
    if src1 == "tf32":
        return 1
    if src1 in ("bf8", "hf8"):
        return 4
    if src1 in _SUB_BYTE_INT and src2 in _SUB_BYTE_INT:
        return 8
    if src1 == "e2m1":
        return 8
    return 4


@dataclass(frozen=True)
class DpasShape:
    """Everything one validated DPAS/DPASW instruction derives from its fields."""

    platform: Platform
    opcode: str
    exec_size: int
    sd: int
    rc: int
    dst_type: str
    src0_type: str | None
    src1_precision: str
    src2_precision: str
    ops_per_chan: int
    src1_operands_per_chan: int
    src1_bits: int
    src2_bits: int
    kind: str  # "int" or "float"

    @property
    def K(self) -> int:
        return self.sd * self.ops_per_chan

    @property
    def acc_bytes(self) -> int:
        return T.get(self.dst_type).bits // 8

    def row_bytes(self, t: str) -> int:
        """Bytes of one Dst/Src0 row: exec_size elements of type ``t``, packed (G4_IR computeRightBound)."""
        return self.exec_size * (T.get(t).bits // 8)

    @property
    def src1_grfs(self) -> int:
        """GRFs Src1 spans: depth d reads GRF d // SRC1_OPERANDS_PER_CHAN."""
        return -(-self.sd // self.src1_operands_per_chan)

    @property
    def src2_row_bytes(self) -> int:
        """Bytes of one row of A: SD * OPS_PER_CHAN elements (also Src2's alignment, IsaVerification.cpp)."""
        return self.sd * self.ops_per_chan * self.src2_bits // 8

    @property
    def src2_bytes(self) -> int:
        return self.rc * self.src2_row_bytes


def check(platform: Platform, *, opcode: str = "dpas", exec_size: int | None, sd: int, rc: int,
          dst_type, src0_type, src1_precision, src2_precision, dst: int, src0: int | None, src1: int,
          src2: int) -> DpasShape:
    """Validate one DPAS/DPASW; return its :class:`DpasShape`. Raises IllegalInstruction naming the rule."""
    P = platform
    op = opcode.upper()
    p1, p2 = canonical_precision(src1_precision), canonical_precision(src2_precision)
    for which, p in (("src1", p1), ("src2", p2)):
        if not P.supports(p):
            raise IllegalInstruction(f"{op} precision {p} is not supported on {P.name}",
                                     rule=f"{P.name} DPAS precisions: {sorted(P.precisions)}",
                                     values={which + "_precision": p, "platform": P.name})
    c1, c2 = precision_class(p1), precision_class(p2)
    if c1 != c2:
        raise IllegalInstruction(f"{op} Src1 and Src2 precisions must be of one kind: {p1} vs {p2}",
                                 rule="visa-DPAS.md: Src2 type should be consistent with Src1's "
                                      "(int with int, bf with bf, hf with hf, tf32 with tf32, bf8/hf8 with bf8/hf8)",
                                 values={"src1_precision": p1, "src2_precision": p2})
    legal = P.acc_types.get(c1, ())
    dt = canonical_acc_type(dst_type, "dst")
    s0t = None if src0 is None else canonical_acc_type(src0_type if src0_type is not None else dt, "src0")
    for what, t in (("dst", dt), ("src0", s0t)):
        if t is not None and t not in legal:
            raise IllegalInstruction(f"{op} {what} type {t} is illegal for {p1} x {p2} on {P.name}",
                                     rule="visa-DPAS.md legal combinations / G4_Verifier.cpp: "
                                          f"{c1} takes Dst/Src0 in {list(legal)} on {P.name}",
                                     values={what + "_type": t, "precision": p1, "platform": P.name})
    for name, v in (("sd", sd), ("rc", rc), ("exec_size", exec_size)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise IllegalInstruction(f"{op} {name} must be an integer", rule=f"visa-DPAS.md: {name} is an integer field",
                                     values={name: v})
    if sd not in (1, 2, 4, 8):
        raise IllegalInstruction(f"{op} systolic depth must be 1, 2, 4 or 8", rule="visa-DPAS.md: SD encodings",
                                 values={"sd": sd})
    if sd not in P.systolic_depths:
        raise IllegalInstruction(f"{op} systolic depth {sd} is not supported on {P.name}",
                                 rule="visa-DPAS.md: XEHP+ only supports a systolic depth of 8", values={"sd": sd})
    if not isinstance(rc, int) or not 1 <= rc <= P.max_repeat_count:
        raise IllegalInstruction(f"{op} repeat count must be 1..{P.max_repeat_count}",
                                 rule="visa-DPAS.md: M = repeat count, 1..8", values={"rc": rc})
    es = P.exec_size if exec_size is None else exec_size
    if es != P.exec_size:
        raise IllegalInstruction(f"only execution size {P.exec_size} is supported for {op} on {P.name}",
                                 rule="IsaVerification.cpp: exec size 16 on PVC and later, 8 before",
                                 values={"exec_size": es, "platform": P.name})
    if op == "DPASW":
        if not P.has_dpasw:
            raise IllegalInstruction(f"DPASW is not supported on {P.name}",
                                     rule="IsaVerification.cpp: DPASW rejected on PVC and later (no EU fusion)",
                                     values={"platform": P.name})
        for what, t in (("dst", dt), ("src0", s0t)):
            if t is not None and t not in ("int32", "u32", "fp32"):
                raise IllegalInstruction(f"DPASW {what} must be D, UD or F", rule="IGC documentation/visa/instructions/DPASW.md",
                                         values={what + "_type": t})
    opc = ops_per_chan(p1, p2)
    b1, b2 = precision_bits(p1), precision_bits(p2)
    shape = DpasShape(P, opcode.lower(), es, sd, rc, dt, s0t, p1, p2, opc, 32 // (opc * b1), b1, b2,
                      "int" if c1 == "int" else "float")
    # alignment (IsaVerification.cpp verifyInstructionDpas)
    _align(op, "dst", dst, shape.row_bytes(dt), "Dst must be aligned to exec_size * sizeof(type)")
    if src0 is not None:
        _align(op, "src0", src0, shape.row_bytes(s0t), "Src0 must be aligned to exec_size * sizeof(type)")
    _align(op, "src1", src1, P.grf_bytes, "Src1 must be GRF-aligned")
    _align(op, "src2", src2, shape.src2_row_bytes,
           "Src2 must be aligned to SD * Src2PrecisionInBits * OPS_PER_CHAN / 8 bytes")
    return shape


def _align(op: str, what: str, offset, align: int, rule: str) -> None:
    if not isinstance(offset, (int,)) or isinstance(offset, bool) or offset < 0:
        raise IllegalInstruction(f"{op} {what} must be a non-negative byte offset into the GRF",
                                 rule="raw operand = variable + byte offset", values={what: offset})
    if offset % align:
        raise IllegalInstruction(f"{op} {what} at byte {offset} is not {align}-byte aligned",
                                 rule="visa-DPAS.md Notes / IsaVerification.cpp: " + rule,
                                 values={what: offset, "alignment": align})
