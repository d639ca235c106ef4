"""Binary floating-point formats as data (DESIGN principle 4).

A :class:`FloatFormat` says how many exponent and fraction bits a format has,
its bias, and how it spells infinity and NaN. Everything else (largest finite
value, smallest normal, bit masks) is derived. The formats are those of
REFERENCE.md section 1: fp64, fp32, tf32, bf16, fp16, bf8 (E5M2), hf8 (E4M3,
the OCP "fn" variant: no infinity, only S.1111.111 is NaN) and e2m1 (no
infinity, no NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

__all__ = ["FloatFormat", "FP64", "FP32", "TF32", "BF16", "FP16", "BF8", "HF8", "E2M1", "FORMATS"]


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: sign bit, ``exp_bits`` exponent bits, ``man_bits`` stored fraction bits.

    ``nan``: ``"ieee"`` (all-ones exponent: inf when the fraction is 0, NaN otherwise),
    ``"fn"`` (no infinity; only the all-ones exponent *and* fraction is NaN: OCP E4M3),
    ``"none"`` (every encoding is finite: OCP E2M1).
    ``storage_bits`` is the width of the container (tf32 lives in 32 bits with 19 used).
    """

    name: str
    exp_bits: int
    man_bits: int
    nan: str = "ieee"
    storage_bits: int | None = None

    @property
    def bits(self) -> int:
        """Bits that carry information (sign + exponent + fraction)."""
        return 1 + self.exp_bits + self.man_bits

    @property
    def container_bits(self) -> int:
        return self.storage_bits or self.bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite number."""
        top = (1 << self.exp_bits) - 1
        return (top - 1 if self.nan == "ieee" else top) - self.bias

    @property
    def has_inf(self) -> bool:
        return self.nan == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.nan != "none"

    @property
    def max_fraction(self) -> Fraction:
        """Largest finite value, exactly."""
        m = (1 << (self.man_bits + 1)) - 1  # 1.111...1
        if self.nan == "fn":
            m -= 1  # S.1111.111 is NaN, so the top significand is 1.11..10
        return Fraction(m, 1 << self.man_bits) * Fraction(2) ** self.emax

    @property
    def max(self) -> float:
        return float(self.max_fraction)

    @property
    def min_normal(self) -> float:
        return 2.0 ** self.emin

    @property
    def min_subnormal(self) -> float:
        return 2.0 ** (self.emin - self.man_bits)

    @property
    def exp_mask(self) -> int:
        return ((1 << self.exp_bits) - 1) << self.man_bits

    @property
    def man_mask(self) -> int:
        return (1 << self.man_bits) - 1

    @property
    def sign_bit(self) -> int:
        return 1 << (self.exp_bits + self.man_bits)

    @property
    def quiet_bit(self) -> int:
        """The fraction bit that marks a quiet NaN (the top one), for IEEE-style formats."""
        return 1 << (self.man_bits - 1)

    @property
    def default_nan(self) -> int:
        """Bits of the NaN a conversion produces from nothing (x86 'QNaN floating-point indefinite': negative)."""
        if self.nan == "ieee":
            return self.sign_bit | self.exp_mask | self.quiet_bit
        if self.nan == "fn":
            return self.sign_bit | self.exp_mask | self.man_mask
        raise ValueError(f"{self.name} has no NaN")

    def __repr__(self) -> str:
        return f"FloatFormat({self.name}: E{self.exp_bits}M{self.man_bits}, bias {self.bias}, nan={self.nan})"


FP64 = FloatFormat("fp64", 11, 52)
FP32 = FloatFormat("fp32", 8, 23)
TF32 = FloatFormat("tf32", 8, 10, storage_bits=32)
BF16 = FloatFormat("bf16", 8, 7)
FP16 = FloatFormat("fp16", 5, 10)
BF8 = FloatFormat("bf8", 5, 2)
HF8 = FloatFormat("hf8", 4, 3, nan="fn")
E2M1 = FloatFormat("e2m1", 2, 1, nan="none")

FORMATS = {f.name: f for f in (FP64, FP32, TF32, BF16, FP16, BF8, HF8, E2M1)}
