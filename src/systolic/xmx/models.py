"""Named numerics models for float DPAS (DESIGN principle 3: a named, documented choice).

The vISA text fixes *what* DPAS adds and in which stage order (visa-DPAS.md
"Semantics": C enters the first systolic stage, stage ``d`` adds one
dot2/dot4/dot8, the last stage writes Dst) but not how a stage rounds. XMX's
internal rounding is not public (REFERENCE.md section 2; the SPIR-V extension
says "precision and the order of operations are implementation-defined"), so
the rounding is a model, chosen by name:

``"stage"`` (default)
    the accumulator starts at C; each systolic stage adds its exact
    dot-OPS_PER_CHAN to the fp32 accumulator with one round-to-nearest-even.
``"sequential"``
    one rounded fp32 add per product, in K order (the removed ESIMD host
    emulator, ``__esimd_dpas_inner``).
``"exact"``
    C plus all the instruction's products exactly, rounded once.
``"block"`` with ``L`` and ``F``
    the family of Fasi et al. (2021), Khattak & Mikaitis (2025), MMA-Sim (2025):
    the running sum and the next ``L`` products are aligned to the largest
    exponent among them, each truncated (toward zero) to ``F`` fraction bits
    below that exponent, summed exactly and rounded once (RNE) to fp32.

Shared by every model (all are data of :class:`NumericsModel`):

* products are exact (every input format has at most 11 significand bits, so
  a product has at most 22 and is exact in binary64; exponents stay in range);
* input denormals of bf16/tf32 (and any precision listed) are flushed to a
  zero of the same sign when the platform's or model's rule says ``"flush"``
  (REFERENCE.md section 2: before Xe2 flushed, Xe2+ retained by default);
* fp32 Src0 and results keep their denormals (``ftz_result=False``);
* special values follow IEEE 754: a NaN input, ``inf * 0`` or ``inf - inf``
  gives NaN, written as the default NaN ``nan_bits`` (0x7FC00000; the GPU's
  NaN payload rule is not public); infinities propagate with their sign;
  overflow rounds to infinity (RNE);
* an exactly zero sum is -0 only when every term is a zero with negative sign
  (IEEE 754 section 6.3), else +0;
* bf16/fp16 destinations get the fp32 result rounded to nearest even.

The scalar functions here are the *spec path* (exact Fractions, one element at
a time); :mod:`systolic.xmx.kernels` holds the vectorised fast paths, proven
equal by property tests.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Sequence

from ..errors import InvalidValue
from ..numerics.formats import FP32
from ..numerics.rounding import decode, round_fraction
from ..registry import Registry

__all__ = ["NumericsModel", "MODEL_NAMES", "get_model", "block", "stage", "sequential", "exact",
           "exact_product", "round_sum_fp32", "accumulate", "DEFAULT_NAN"]

MODEL_NAMES = ("stage", "sequential", "exact", "block")

#: the model names as a registry (exact spelling: a model name is case-sensitive)
_NAMES: Registry[str] = Registry("numerics model", rule="models", key="model", normalize=str)
for _n in MODEL_NAMES:
    _NAMES.add(_n, _n)
DEFAULT_NAN = 0x7FC00000
#: the largest F the fast path supports exactly (aligned integers stay below 2**53 with L <= 64)
MAX_FRACTION_BITS = 44
MAX_BLOCK = 64


@dataclass(frozen=True)
class NumericsModel:
    """One float-DPAS numerics model.

    ``name``: one of :data:`MODEL_NAMES`; ``block_size`` (L) and ``fraction_bits``
    (F) for ``"block"``; ``denormals``: ``None`` (the platform's rule),
    ``"flush"`` or ``"keep"`` for bf16/tf32 inputs (fp16/fp8/e2m1 inputs keep
    their denormals unless ``"flush-all"``); ``ftz_result`` flushes fp32
    denormal results; ``nan_bits`` is the NaN written for any NaN result.
    """

    name: str = "stage"
    block_size: int | None = None
    fraction_bits: int | None = None
    denormals: str | None = None
    ftz_result: bool = False
    nan_bits: int = DEFAULT_NAN

    def __post_init__(self) -> None:
        _NAMES.get(self.name)                        # an unknown name: "unknown numerics model ... (did you mean)"
        if self.name == "block":
            L, F = self.block_size, self.fraction_bits
            if not isinstance(L, int) or not 1 <= L <= MAX_BLOCK:
                raise InvalidValue("block model needs 1 <= L <= 64", rule="block(L, F)", values={"L": L})
            if not isinstance(F, int) or not 0 <= F <= MAX_FRACTION_BITS:
                raise InvalidValue(f"block model needs 0 <= F <= {MAX_FRACTION_BITS}", rule="block(L, F)",
                                   values={"F": F})
        elif self.block_size is not None or self.fraction_bits is not None:
            raise InvalidValue("only the block model takes L and F", values={"model": self.name})
        if self.denormals not in (None, "flush", "keep", "flush-all"):
            raise InvalidValue("denormals must be None, 'flush', 'keep' or 'flush-all'",
                               values={"denormals": self.denormals})

    @property
    def label(self) -> str:
        s = f"block(L={self.block_size},F={self.fraction_bits})" if self.name == "block" else self.name
        if self.denormals:
            s += f",denormals={self.denormals}"
        return s

    def flushes(self, precision: str, platform) -> bool:
        """Whether inputs of ``precision`` have their denormals flushed on ``platform``."""
        if self.denormals == "flush-all":
            return True
        if precision in ("bf16", "tf32") and self.denormals in ("flush", "keep"):
            return self.denormals == "flush"
        return platform.denormals.get(precision, "keep") == "flush"

    def as_dict(self) -> dict:
        return {"name": self.name, "L": self.block_size, "F": self.fraction_bits, "denormals": self.denormals,
                "ftz_result": self.ftz_result, "nan_bits": hex(self.nan_bits), "label": self.label}


stage = NumericsModel("stage")
sequential = NumericsModel("sequential")
exact = NumericsModel("exact")


def block(L: int, F: int, **kw) -> NumericsModel:
    """The block-FMA model with block size ``L`` and ``F`` fraction bits kept after alignment."""
    return NumericsModel("block", block_size=L, fraction_bits=F, **kw)


_BLOCK_RE = re.compile(r"^block\s*[\(:]\s*(?:L\s*=\s*)?(\d+)\s*[,:]\s*(?:F\s*=\s*)?(\d+)\s*\)?$", re.I)


def get_model(spec: str | NumericsModel | None = None, device=None, **renamed_keywords) -> NumericsModel:
    """A model from a name (``"stage"``, ``"block(16,24)"``, ``"block:16:24"``) or a model; None = the default
    of ``device`` (a :class:`~systolic.xmx.platform.Platform` or its name; ``platform=`` is its older keyword,
    DeprecationWarning), else stage."""
    if renamed_keywords:                 # platform=: the older name of device= (systolic.vocabulary)
        from ..vocabulary import renamed
        device = renamed(renamed_keywords, {"platform": "device"}, "xmx.get_model", device=device)["device"]
    if isinstance(spec, NumericsModel):
        return spec
    if spec is None:
        if device is None:
            return NumericsModel("stage")
        from .platform import get_platform
        return NumericsModel(get_platform(device).default_model)
    s = str(spec).strip()
    m = _BLOCK_RE.match(s)
    if m:
        return block(int(m.group(1)), int(m.group(2)))
    if s == "block":
        raise InvalidValue("the block model needs parameters: block(L, F)", rule="block(L, F)", values={"model": s})
    return NumericsModel(s)


# ------------------------------------------------------------ scalar spec path

def _fp32_value(bits: int) -> float:
    return decode(bits & 0xFFFFFFFF, FP32)


def exact_product(x: float, y: float) -> float:
    """x * y exactly, IEEE special rules (NaN, inf * 0 = NaN, signed zeros). Inputs are exact binary64 values."""
    if math.isnan(x) or math.isnan(y):
        return math.nan
    if math.isinf(x) or math.isinf(y):
        if x == 0 or y == 0:
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    if x == 0 or y == 0:
        return math.copysign(0.0, math.copysign(1.0, x) * math.copysign(1.0, y))
    p = Fraction(x) * Fraction(y)
    f = float(p)
    if Fraction(f) != p:  # cannot happen for DPAS formats (<= 11-bit significands); guard the claim
        raise AssertionError(f"product {x}*{y} not exact in binary64")
    return f


def _special(terms: Sequence[float]) -> float | None:
    """NaN / infinity of a sum per IEEE 754, or None when every term is finite."""
    if any(math.isnan(t) for t in terms):
        return math.nan
    pos = any(t == math.inf for t in terms)
    neg = any(t == -math.inf for t in terms)
    if pos and neg:
        return math.nan
    if pos:
        return math.inf
    if neg:
        return -math.inf
    return None


def _negative_zero_sum(terms: Sequence[float]) -> bool:
    return all(t == 0 and math.copysign(1.0, t) < 0 for t in terms)


def round_sum_fp32(terms: Sequence[float], model: NumericsModel = stage) -> int:
    """fp32 bits of the exact sum of ``terms`` rounded once to nearest even (with the model's NaN/FTZ rules)."""
    sp = _special(terms)
    if sp is not None:
        if math.isnan(sp):
            return model.nan_bits
        return 0x7F800000 if sp > 0 else 0xFF800000
    q = sum((Fraction(t) for t in terms), Fraction(0))
    return round_fraction(q, FP32, "rne", negative_zero=_negative_zero_sum(terms), ftz=model.ftz_result)


def _truncate(t: float, scale_exp: int) -> Fraction:
    """t truncated toward zero to a multiple of 2**scale_exp."""
    q = Fraction(t)
    unit = Fraction(2) ** scale_exp
    n = abs(q) // unit
    return (n if q >= 0 else -n) * unit


def _block_sum_fp32(terms: Sequence[float], model: NumericsModel) -> int:
    """One block step: align to the largest exponent, truncate to F fraction bits, sum exactly, round once."""
    sp = _special(terms)
    if sp is not None:
        return round_sum_fp32(terms, model)
    nonzero = [t for t in terms if t != 0]
    if not nonzero:
        return round_sum_fp32(terms, model)
    e_max = max(math.frexp(t)[1] - 1 for t in nonzero)  # floor(log2 |t|)
    unit_exp = e_max - model.fraction_bits
    q = sum((_truncate(t, unit_exp) for t in terms), Fraction(0))
    return round_fraction(q, FP32, "rne", negative_zero=_negative_zero_sum(terms), ftz=model.ftz_result)


def accumulate(model: NumericsModel, c: float, stages: Sequence[Sequence[float]], trace: list | None = None) -> int:
    """fp32 bits of one DPAS channel: C (an exact value) plus the exact products of each systolic stage.

    ``stages[d]`` holds the OPS_PER_CHAN exact products of stage ``d`` in K order. ``trace`` (the explorer's
    ``explain`` hook): each rounded sum is appended as ``{"step", "terms", "bits"}`` in the order it happens.
    """
    def rec(step, terms, bits):
        if trace is not None:
            trace.append({"step": step, "terms": list(terms), "bits": bits})
        return bits

    if model.name == "stage":
        acc = c
        for d, st in enumerate(stages):
            acc = _fp32_value(rec(f"stage {d}: acc + dot{len(st)}, one RNE", [acc, *st],
                                  round_sum_fp32([acc, *st], model)))
        return round_sum_fp32([acc], model)
    if model.name == "sequential":
        acc = c
        for d, st in enumerate(stages):
            for j, p in enumerate(st):
                acc = _fp32_value(rec(f"stage {d} product {j}: acc + p, one RNE", [acc, p],
                                      round_sum_fp32([acc, p], model)))
        return round_sum_fp32([acc], model)
    products = [p for st in stages for p in st]
    if model.name == "exact":
        return rec("C + all products exactly, one RNE", [c, *products], round_sum_fp32([c, *products], model))
    # block
    acc = c
    L = model.block_size
    for start in range(0, len(products), L):
        terms = [acc, *products[start:start + L]]
        acc = _fp32_value(rec(f"block of products {start}..{start + len(terms) - 2}: align to the largest "
                              f"exponent, truncate to F={model.fraction_bits} bits, one RNE", terms,
                              _block_sum_fp32(terms, model)))
    return round_sum_fp32([acc], model)


def flatten(stages: Iterable[Iterable[float]]) -> list[float]:
    return [p for st in stages for p in st]
