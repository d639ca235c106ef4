"""Per-element arithmetic of the vISA ALU instructions (spec path: exact integers and Fractions).

Sources: IGC documentation/visa/2_datatypes.md ("Type Conversion": integer execution with extra
precision then implicit conversion; float->integer rounds toward zero and saturates, NaN -> 0;
integer->float and float->float round to nearest even by default; fused operations round once),
instructions/ADD.md, MUL.md, MAD.md (``dst = src0 * src1 + src2``), MIN_MAX.md (IEEE min/max: a
NaN loses to a number; two NaNs give src1), SHL.md/SHR.md/ASR.md (5 LSBs of src1, 6 for Q/UQ),
CMP.md, SEL.md.

Choices the documents leave open are the fields of :class:`FloatModel` (docs/visa.md): NaN results
are the format's default quiet NaN (as systolic.xmx.models), denormals are kept, -0 < +0 in
min/max, ``.sat`` on a float result clamps to [0, 1] with NaN -> +0 (the Gen saturation rule), and an
F computation with a 16-bit float destination rounds to F first (2_datatypes.md: the destination of
a float instruction has the execution type; conversion happens on the write). BF sources compute in F
up to Xe3 (IGC has no pure-BF ALU before ``supportPureBF()``, platform > Xe3), so there a ``mad`` of BF
values rounds to F, then to BF.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..errors import IllegalInstruction
from ..numerics import formats as NF
from ..numerics.rounding import decode_fraction, round_fraction
from .isa import VisaType

__all__ = ["FloatModel", "DEFAULT_MODEL", "FVal", "fmt_of", "decode_value", "encode_value", "to_int_bits",
           "apply_modifier", "op_add", "op_mul", "op_mad", "op_minmax", "compare"]

_FMT = {"f": NF.FP32, "hf": NF.FP16, "bf": NF.BF16, "df": NF.FP64}


@dataclass(frozen=True)
class FloatModel:
    """The open choices of the float ALU, as data (DESIGN principle 4).

    Denormals: the control register cr0 holds one retain/flush bit per format (HF 0x400, F 0x80,
    DF 0x40, BF/TF bit 30; IGC ``CISABuilder.cpp`` ``initCR``) and IGC's OpenCL default retains HF
    and F denormals (``dllInterfaceCompute.cpp``; ``-cl-denorms-are-zero`` flushes), so the default
    keeps them. 2_datatypes.md still says HF denormals are flushed; ``ftz``/``daz`` model that.
    """

    name: str = "ieee-rne"
    rounding: str = "rne"          # the control register's default (2_datatypes.md)
    ftz: frozenset = frozenset()   # float types whose results flush denormals ("f", "hf", "bf", "df")
    daz: frozenset = frozenset()   # float types whose inputs flush denormals
    negative_zero_is_less: bool = True
    #: F execution with an HF/BF destination (the XeHP+ type maps allow F sources with a BF
    #: destination; up to Xe3 every BF source makes the execution type F, IGC ``getExecType2`` and
    #: ``HWConformity::fixBFMixedMode``) rounds to F first, then converts; False rounds the exact result once.
    via_execution_type: bool = True


DEFAULT_MODEL = FloatModel()


def fmt_of(t: VisaType):
    return _FMT[t.name]


@dataclass(frozen=True)
class FVal:
    """An exact float value: ``kind`` "num" (``q``, with ``neg`` the sign bit, meaningful for zeros), "inf", "nan"."""

    kind: str
    q: Fraction = Fraction(0)
    neg: bool = False

    @property
    def is_zero(self) -> bool:
        return self.kind == "num" and self.q == 0


def decode_value(bits: int, t: VisaType, model: FloatModel = DEFAULT_MODEL):
    """Bits of one element -> Python int (integer types) or :class:`FVal` (float types)."""
    if t.is_int:
        if t.signed and bits >> (t.bits - 1):
            return bits - (1 << t.bits)
        return bits
    fmt = _FMT[t.name]
    neg = bool(bits >> (fmt.bits - 1))
    v = decode_fraction(bits, fmt)
    if isinstance(v, float):
        return FVal("nan") if math.isnan(v) else FVal("inf", neg=neg)
    if t.name in model.daz and v != 0 and abs(v) < Fraction(2) ** fmt.emin:
        return FVal("num", Fraction(0), neg)
    return FVal("num", v, neg)


def _default_nan(fmt) -> int:
    return fmt.exp_mask | (1 << (fmt.man_bits - 1))


def encode_value(v, t: VisaType, *, sat: bool = False, model: FloatModel = DEFAULT_MODEL) -> int:
    """An exact int or FVal -> bits of destination type ``t`` (the conversion rules of 2_datatypes.md)."""
    if t.is_int:
        if isinstance(v, FVal):
            return to_int_bits(v, t)
        lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.signed else (0, (1 << t.bits) - 1)
        if sat:
            v = min(max(v, lo), hi)
        return v & ((1 << t.bits) - 1)  # lower precision: bit truncation
    fmt = _FMT[t.name]
    if not isinstance(v, FVal):
        v = FVal("num", Fraction(v), False)
    if sat:
        if v.kind == "nan":
            return 0
        if v.kind == "inf":
            return 0 if v.neg else round_fraction(1, fmt)
        q = min(max(v.q, Fraction(0)), Fraction(1))
        return round_fraction(q, fmt, model.rounding)
    if v.kind == "nan":
        return _default_nan(fmt)
    if v.kind == "inf":
        return fmt.exp_mask | (fmt.sign_bit if v.neg else 0)
    return round_fraction(v.q, fmt, model.rounding, negative_zero=v.neg, ftz=t.name in model.ftz)


def to_int_bits(v: FVal, t: VisaType) -> int:
    """Float -> integer: toward zero, saturating; NaN -> 0 (2_datatypes.md, "Float to Integer")."""
    lo, hi = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.signed else (0, (1 << t.bits) - 1)
    if v.kind == "nan":
        r = 0
    elif v.kind == "inf":
        r = lo if v.neg else hi
    else:
        r = min(max(int(v.q), lo), hi)  # int() truncates toward zero
    return r & ((1 << t.bits) - 1)


def apply_modifier(v, mod: str, t: VisaType):
    """Source modifiers: (-), (abs), (-abs) on numbers; (~) bitwise not within the type."""
    if mod == "none":
        return v
    if mod == "not":
        if isinstance(v, FVal):
            raise IllegalInstruction("the not modifier applies to integer operands only",
                                     rule="visa-operands.md: Vector Operands (modifiers)", values={"type": t.name})
        bits = ~v & ((1 << t.bits) - 1)
        return decode_value(bits, t)
    if isinstance(v, FVal):
        neg = v.neg
        q = v.q
        if mod in ("abs", "neg_abs"):
            neg, q = False, abs(q)
        if mod in ("neg", "neg_abs"):
            neg, q = not neg, -q
        return FVal(v.kind, q, neg)
    if mod == "abs":
        return abs(v)
    if mod == "neg":
        return -v
    return -abs(v)


def op_add(a, b, rounding: str = "rne"):
    """``a + b`` exactly; ``rounding`` (the mode the result will be rounded in) decides the sign of an exact zero.

    IEEE 754-2019 6.3: an exact zero sum of operands of opposite signs (x + (-x), +0 + -0) is +0 in every
    rounding direction except roundTowardNegative (``"rdn"``), where it is -0; x + x keeps the sign of x when
    x is zero. The rule covers the addition inside a fused multiply-add too (6.3: "x * y + z").
    """
    if not isinstance(a, FVal):
        return a + b
    if "nan" in (a.kind, b.kind):
        return FVal("nan")
    if a.kind == "inf" or b.kind == "inf":
        if a.kind == "inf" and b.kind == "inf" and a.neg != b.neg:
            return FVal("nan")
        return a if a.kind == "inf" else b
    s = a.q + b.q
    if s == 0:
        # same signs can only sum to zero when both are zeros of that sign
        neg = a.neg if a.neg == b.neg else rounding == "rdn"
        return FVal("num", Fraction(0), neg)
    return FVal("num", s, s < 0)


def op_mul(a, b):
    if not isinstance(a, FVal):
        return a * b
    if "nan" in (a.kind, b.kind):
        return FVal("nan")
    neg = a.neg != b.neg
    if a.kind == "inf" or b.kind == "inf":
        if a.is_zero or b.is_zero:
            return FVal("nan")
        return FVal("inf", neg=neg)
    return FVal("num", a.q * b.q, neg)


def op_mad(a, b, c, rounding: str = "rne"):
    """``src0 * src1 + src2`` with one rounding (fused; 2_datatypes.md "fused operations"); the product keeps
    its sign when it is zero, so an exact zero result takes the sign rule of :func:`op_add`."""
    return op_add(op_mul(a, b), c, rounding)


def _key(a: FVal):
    if a.kind == "inf":
        return (-1 if a.neg else 1, Fraction(0))
    return (0, a.q)


def _less(a: FVal, b: FVal, model: FloatModel) -> bool:
    """Order of two non-NaN values; -0 < +0 when the model says so."""
    ka, kb = _key(a), _key(b)
    if ka != kb:
        return ka < kb
    return model.negative_zero_is_less and a.is_zero and a.neg and not b.neg


def op_minmax(a, b, is_max: bool, model: FloatModel = DEFAULT_MODEL):
    """MIN_MAX.md: IEEE min/max; one NaN -> the other source; both NaN -> src1."""
    if not isinstance(a, FVal):
        return max(a, b) if is_max else min(a, b)
    if a.kind == "nan" or b.kind == "nan":
        return b if a.kind == "nan" else a
    if is_max:
        return b if _less(a, b, model) else a
    return b if _less(b, a, model) else a


def compare(a, b, relop: str, model: FloatModel = DEFAULT_MODEL) -> bool:
    """CMP.md relational operators; a NaN compares unordered (only ne is true); -0 == +0."""
    if isinstance(a, FVal):
        if a.kind == "nan" or b.kind == "nan":
            return relop == "ne"
        eq = (a.kind == b.kind == "num" and a.q == b.q) or (a.kind == b.kind == "inf" and a.neg == b.neg)
        lt = not eq and _less(a, b, FloatModel(negative_zero_is_less=False))
    else:
        eq, lt = a == b, a < b
    return {"eq": eq, "ne": not eq, "lt": lt, "le": lt or eq, "gt": not (lt or eq), "ge": not lt}[relop]
