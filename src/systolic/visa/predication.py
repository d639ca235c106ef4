"""vISA predication: the 16-bit predicate control and the channel-enable evaluation.

Source: visa-operands.md (IGC documentation/visa/5_operands.md), "Predication": the predicate
control table (bit 15 inverse, bits 13-14 combine, bit 12 reserved, bits 0-11 id) and the
``EvaluateChEn()`` pseudo-code, which :func:`evaluate_chen` follows line by line.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import IllegalInstruction, InvalidValue
from .isa import MaskControl

__all__ = ["PredControl", "COMBINE", "evaluate_chen", "evaluate_chen_bits", "mask_to_int"]

RULE = "visa-operands.md: Predication, predicate control table"
#: bits 13-14
COMBINE = {0b00: "", 0b01: "any", 0b10: "all"}
_COMBINE_CODE = {v: k for k, v in COMBINE.items()}


@dataclass(frozen=True)
class PredControl:
    """One predicate control word. ``id`` 0 means "not predicated" (P0, 8_appendix: "If the predicate is P0")."""

    id: int = 0
    combine: str = ""        # "", "any" or "all"
    inverse: bool = False

    def __post_init__(self):
        if not 0 <= self.id <= 4095:
            raise IllegalInstruction("predicate id out of range [0, 4095]", rule=RULE, values={"id": self.id})
        if self.combine not in _COMBINE_CODE:
            raise IllegalInstruction("predicate combine must be none, any or all", rule=RULE,
                                     values={"combine": self.combine})

    @property
    def active(self) -> bool:
        return self.id != 0

    def encode(self) -> int:
        """The UW of the table."""
        return (int(self.inverse) << 15) | (_COMBINE_CODE[self.combine] << 13) | self.id

    @classmethod
    def decode(cls, word: int) -> "PredControl":
        """Parse a UW; reserved bit 12 and combine "11" are errors."""
        if not 0 <= word <= 0xFFFF:
            raise InvalidValue("predicate control is a 16-bit word", rule=RULE, values={"word": word})
        if word & (1 << 12):
            raise IllegalInstruction("predicate control bit 12 is reserved and must be 0", rule=RULE,
                                     values={"word": word})
        comb = (word >> 13) & 3
        if comb == 3:
            raise IllegalInstruction("predicate combine 11b is reserved", rule=RULE, values={"word": word})
        return cls(word & 0xFFF, COMBINE[comb], bool(word >> 15))

    def text(self, name: str | None = None) -> str:
        """``(P1)``, ``(!P1.any)``: 8_appendix_visa_assembly_syntax.md, "Predicate"."""
        n = name if name is not None else f"P{self.id}"
        return "(" + ("!" if self.inverse else "") + n + (f".{self.combine}" if self.combine else "") + ")"


def evaluate_chen(exec_size: int, mask: MaskControl, pred: PredControl, em: list[int],
                  pred_bits: list[int] | None) -> list[int]:
    """The channel-enable mask ChEn[0:32] of one instruction (spec path: ``EvaluateChEn()``).

    ``em`` is the 32-bit execution mask as a list of 0/1, ``pred_bits`` the predicate variable's
    elements (0/1) read from its element 0 (None when not predicated).
    """
    chen = [0] * 32
    off = mask.offset
    if mask.nomask:
        for n in range(exec_size):
            chen[n] = 1
    else:
        for n in range(exec_size):
            chen[n] = 1 if _bit(em, n + off) else 0
    if pred.active:
        pmask = [0] * 32
        for n in range(exec_size):
            pmask[n] = _bit(pred_bits, n + off)
        if pred.combine == "any":
            v = 1 if any(pmask[0:exec_size]) else 0
            for n in range(exec_size):
                pmask[n] = v
        elif pred.combine == "all":
            v = 1 if all(pmask[0:exec_size]) else 0
            for n in range(exec_size):
                pmask[n] = v
        if pred.inverse:
            pmask = [1 - p for p in pmask]
        for n in range(exec_size):
            chen[n] = chen[n] & pmask[n]
    for n in range(exec_size, 32):
        chen[n] = 0
    return chen


def _bit(bits, n: int) -> int:
    """Element ``n`` of a predicate/EM list; reading past its end is an error, not a silent 0."""
    if bits is None or n >= len(bits):
        raise IllegalInstruction("mask control reads past the end of the predicate or execution mask",
                                 rule="visa-operands.md: Predication (mask control offset)",
                                 values={"element": n, "length": 0 if bits is None else len(bits)})
    return 1 if bits[n] else 0


def mask_to_int(bits) -> int:
    """ChEn list -> 32-bit integer (channel n in bit n)."""
    return sum(1 << n for n, b in enumerate(bits) if b)


def evaluate_chen_bits(exec_size: int, mask: MaskControl, pred: PredControl, em: int, pred_value: int | None,
                       pred_len: int = 32) -> int:
    """Fast path of :func:`evaluate_chen` on integers (bit n = channel n); proven equal in tests."""
    if mask.offset + exec_size > 32 or (pred.active and mask.offset + exec_size > pred_len):
        # same failure as the spec path
        evaluate_chen(exec_size, mask, pred, [(em >> i) & 1 for i in range(32)],
                      None if pred_value is None else [(pred_value >> i) & 1 for i in range(pred_len)])
    full = (1 << exec_size) - 1
    off = mask.offset
    chen = full if mask.nomask else (em >> off) & full
    if pred.active:
        pm = (pred_value >> off) & full
        if pred.combine == "any":
            pm = full if pm else 0
        elif pred.combine == "all":
            pm = full if pm == full else 0
        if pred.inverse:
            pm = ~pm & full
        chen &= pm
    return chen
