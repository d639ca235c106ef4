"""Numerics: float formats as data, exact and vectorised rounding (DESIGN layer "numerics")."""

from .formats import BF8, BF16, E2M1, FORMATS, FP16, FP32, FP64, HF8, TF32, FloatFormat
from .rounding import (MODES, decode, decode_fraction, fp32_bits, fp32_from_bits, from_bits, quantize,
                       round_fraction, to_bits)

__all__ = ["FloatFormat", "FORMATS", "FP64", "FP32", "TF32", "BF16", "FP16", "BF8", "HF8", "E2M1", "MODES",
           "round_fraction", "decode_fraction", "decode", "to_bits", "from_bits", "quantize", "fp32_bits",
           "fp32_from_bits"]
