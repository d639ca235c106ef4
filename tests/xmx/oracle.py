"""An independent exact oracle for float DPAS on logical matrices (Fractions; written apart from models.py).

It works on logical A (M x K), B (K x N), C (M x N) bit patterns, decodes them with its own decoder, applies
the denormal rule it is told, and accumulates per the model's written definition (docs/xmx.md):
stage / sequential / exact / block(L, F). Rounding to fp32 uses systolic.numerics.rounding.round_fraction
(the lead's exact rounding, tested on its own).
"""

from __future__ import annotations

import math
from fractions import Fraction

from systolic.numerics.formats import BF8, BF16, E2M1, FP16, FP32, HF8, TF32
from systolic.numerics.rounding import round_fraction

FMT = {"bf16": BF16, "fp16": FP16, "tf32": TF32, "bf8": BF8, "hf8": HF8, "e2m1": E2M1, "fp32": FP32}
NAN = "nan"


def decode(bits: int, prec: str, flush: bool):
    """(value, negative) with value a Fraction, +-math.inf or NAN."""
    f = FMT[prec]
    if prec == "tf32":
        bits >>= 13
    neg = bool(bits >> (f.exp_bits + f.man_bits) & 1)
    e = (bits >> f.man_bits) & ((1 << f.exp_bits) - 1)
    m = bits & ((1 << f.man_bits) - 1)
    top = (1 << f.exp_bits) - 1
    if f.nan == "ieee" and e == top:
        return (NAN if m else (-math.inf if neg else math.inf)), neg
    if f.nan == "fn" and e == top and m == (1 << f.man_bits) - 1:
        return NAN, neg
    if e == 0:
        if flush:
            m = 0
        v = Fraction(m, 1) * Fraction(2) ** (1 - f.bias - f.man_bits)
    else:
        v = Fraction(m + (1 << f.man_bits)) * Fraction(2) ** (e - f.bias - f.man_bits)
    return (-v if neg else v), neg


def mul(x, y):
    (a, na), (b, nb) = x, y
    neg = na != nb
    if a is NAN or b is NAN:
        return NAN, False
    if isinstance(a, float) or isinstance(b, float):  # an infinity
        if a == 0 or b == 0:
            return NAN, False
        return (-math.inf if neg else math.inf), neg
    return a * b, neg


def add_round(terms):
    """Round the exact sum of (value, negative) terms to fp32 bits; NaN -> 0x7FC00000."""
    vals = [t[0] for t in terms]
    if any(v is NAN for v in vals):
        return 0x7FC00000
    infs = {v for v in vals if isinstance(v, float)}
    if len(infs) == 2:
        return 0x7FC00000
    if infs:
        return 0x7F800000 if infs.pop() > 0 else 0xFF800000
    s = sum(vals, Fraction(0))
    negzero = all(v == 0 and n for v, n in terms)
    return round_fraction(s, FP32, "rne", negative_zero=negzero)


def fp32(bits):
    return decode(bits, "fp32", False)


def trunc_terms(terms, F):
    finite = [v for v, _ in terms if v != 0]
    if not finite:
        return terms

    # exact floor(log2|v|) for Fractions
    def flog2(v):
        v = abs(v)
        e = v.numerator.bit_length() - v.denominator.bit_length()
        if Fraction(2) ** e > v:
            e -= 1
        return e
    emax = max(flog2(v) for v in finite)
    unit = Fraction(2) ** (emax - F)
    out = []
    for v, n in terms:
        q = abs(v) // unit * unit
        out.append((q if v >= 0 else -q, n))
    return out


def channel(a_row, b_col, c_bits, model, ops, k_instr):
    """fp32 bits of one output element. a_row/b_col: lists of decoded (value, neg); c_bits: fp32 bits."""
    prods = [mul(x, y) for x, y in zip(a_row, b_col)]
    acc = fp32(c_bits)
    name = model[0]
    if name == "exact":
        for k0 in range(0, len(prods), k_instr):
            acc = fp32(add_round([acc] + prods[k0:k0 + k_instr]))
    elif name == "stage":
        for k0 in range(0, len(prods), ops):
            acc = fp32(add_round([acc] + prods[k0:k0 + ops]))
    elif name == "sequential":
        for p in prods:
            acc = fp32(add_round([acc, p]))
    else:
        _, L, F = model
        for k0 in range(0, len(prods), k_instr):
            chunk = prods[k0:k0 + k_instr]
            for b0 in range(0, len(chunk), L):
                terms = [acc] + chunk[b0:b0 + L]
                if any(v is NAN or isinstance(v, float) for v, _ in terms):
                    acc = fp32(add_round(terms))
                    continue
                t = trunc_terms(terms, F)
                s = sum((v for v, _ in t), Fraction(0))
                negzero = all(v == 0 and n for v, n in terms)
                acc = fp32(round_fraction(s, FP32, "rne", negative_zero=negzero))
    v, n = acc
    if v is NAN:
        return 0x7FC00000
    if isinstance(v, float):
        return 0x7F800000 if v > 0 else 0xFF800000
    return round_fraction(v, FP32, "rne", negative_zero=n)


def matmul_bits(a_bits, b_bits, c_bits, prec, model, ops, k_instr, flush):
    """Oracle D (fp32 bits) for logical bit matrices (lists of lists)."""
    m, k, n = len(a_bits), len(a_bits[0]), len(b_bits[0])
    A = [[decode(int(a_bits[i][j]), prec, flush) for j in range(k)] for i in range(m)]
    B = [[decode(int(b_bits[j][i]), prec, flush) for j in range(k)] for i in range(n)]
    return [[channel(A[i], B[j], int(c_bits[i][j]), model, ops, k_instr) for j in range(n)] for i in range(m)]
