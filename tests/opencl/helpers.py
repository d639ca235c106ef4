"""Random operands and independent oracles for the built-in tests.

Integer oracle: int64 numpy, wrapped to 32 bits (SPV_INTEL_subgroup_matrix_multiply_accumulate: "the low-order
N bits of the correct result"). Float oracle: Python Fractions through tests/xmx/oracle.py (written apart from
the engine), with A and B decoded in their own precisions, the platform's documented denormal rule, the model's
written definition, and BF/HF results rounded from the fp32 result to nearest even (docs/xmx.md).
"""

from __future__ import annotations

import numpy as np

from systolic import types as T
from systolic.numerics.formats import BF16, FP16
from systolic.numerics.rounding import round_fraction
from systolic.xmx import get_platform

from xmx import oracle as XO  # tests/xmx (tests/ is on sys.path as the packages' base)

INT = ("s8", "u8", "s4", "u4", "s2", "u2")
EXP = {"bf16": (8, 7), "fp16": (5, 10), "tf32": (8, 10), "bf8": (5, 2), "hf8": (4, 3), "e2m1": (2, 1)}


def random_bits(prec: str, shape, rng) -> np.ndarray:
    """Random element bit patterns with no NaN/inf (signs, zeros, denormals and normals)."""
    if prec in INT:
        raise ValueError(prec)
    e, m = EXP[prec]
    sign = rng.integers(0, 2, shape)
    top = (1 << e) - 1
    # keep exponents in a band that rarely overflows fp32 sums; include exponent 0 (zeros / denormals)
    lo = max(0, (top >> 1) - 6) if e > 4 else 0
    hi = min(top - 1, (top >> 1) + 6) if e > 4 else top
    exp = rng.integers(lo, hi + 1, shape)
    exp = np.where(rng.random(shape) < 0.05, 0, exp)
    man = rng.integers(0, 1 << m, shape)
    bits = (sign << (e + m)) | (exp << m) | man
    if prec == "hf8":  # e4m3fn: S.1111.111 is NaN
        bits = np.where((bits & 0x7F) == 0x7F, bits & 0xF8, bits)
    if prec == "e2m1":
        pass
    if prec == "tf32":
        bits = bits << 13
    return bits.astype(np.uint32)


def values_from_bits(bits, prec: str) -> np.ndarray:
    """Element bits -> a numpy array of the precision's dtype (tf32: float32)."""
    b = np.asarray(bits, dtype=np.uint32)
    if prec == "tf32":
        return b.view(np.float32)
    t = T.get(prec)
    width = {16: np.uint16, 8: np.uint8, 4: np.uint8}[t.storage_bits]
    return b.astype(width).view(t.dtype)


def random_logical(rec, rng):
    """(A, B, C) logical matrices for one overload, and their bit patterns (A_bits, B_bits, C as stored)."""
    m, k, n = rec.m, rec.k, rec.n
    out = []
    for prec, shape in ((rec.a_precision, (m, k)), (rec.b_precision, (k, n))):
        if prec in INT:
            t = T.get(prec)
            v = rng.integers(t.min, t.max + 1, shape)
            out.append((v, None))
        else:
            bits = random_bits(prec, shape, rng)
            out.append((values_from_bits(bits, prec), bits))
    acc = rec.acc_precision
    if acc == "int32":
        c = rng.integers(-2 ** 31, 2 ** 31, (m, n)).astype(np.int32)
    elif acc == "fp32":
        c = (rng.standard_normal((m, n)) * 4).astype(np.float32)
    else:
        c = values_from_bits(random_bits(acc, (m, n), rng), acc)
    return out[0], out[1], c


def int_oracle(A, B, C) -> np.ndarray:
    return ((np.asarray(A, np.int64) @ np.asarray(B, np.int64) + np.asarray(C, np.int64)) & 0xFFFFFFFF) \
        .astype(np.uint32).view(np.int32)


def _round_to(bits32: int, t: str) -> int:
    if t == "fp32":
        return bits32
    fmt = {"bf16": BF16, "fp16": FP16}[t]
    v, neg = XO.decode(bits32, "fp32", False)
    if v is XO.NAN:
        return fmt.exp_mask | (1 << (fmt.man_bits - 1))
    if isinstance(v, float):
        return (fmt.sign_bit if v < 0 else 0) | fmt.exp_mask
    return round_fraction(v, fmt, "rne", negative_zero=neg)


def float_oracle(rec, a_bits, b_bits, C, platform: str, model: str = "exact") -> np.ndarray:
    """Result bits (uint32 for fp32, uint16 for bf16/fp16) of one built-in call under ``model``."""
    P = get_platform(platform)
    fa = P.denormals.get(rec.a_precision) == "flush"
    fb = P.denormals.get(rec.b_precision) == "flush"
    c32 = np.asarray(C).astype(np.float32).view(np.uint32)  # bf16/fp16 -> fp32 is exact
    m, k, n = rec.m, rec.k, rec.n
    A = [[XO.decode(int(a_bits[i][j]), rec.a_precision, fa) for j in range(k)] for i in range(m)]
    B = [[XO.decode(int(b_bits[j][i]), rec.b_precision, fb) for j in range(k)] for i in range(n)]
    ops = {"tf32": 1, "bf16": 2, "fp16": 2, "bf8": 4, "hf8": 4, "e2m1": 8}[rec.a_precision]
    mdl = (model,)
    out = [[_round_to(XO.channel(A[i], B[j], int(c32[i, j]), mdl, ops, k), rec.result_precision)
            for j in range(n)] for i in range(m)]
    return np.array(out, dtype=np.uint32 if rec.result_precision == "fp32" else np.uint16)


def result_bits(D) -> np.ndarray:
    D = np.asarray(D)
    return D.view(np.uint32) if D.dtype.itemsize == 4 else D.view(np.uint16)
