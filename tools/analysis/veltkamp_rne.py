"""Check that Veltkamp's splitting rounds to nearest-even (docs/xmx.md, "Why bf16 stage <= 4x is out of reach").

    python tools/analysis/veltkamp_rne.py

With c = RN(y * (2**s + 1)), hi = RN(c - RN(c - y)) in a binary format of p bits under round-to-nearest-even,
the claim is hi = RNE_{p-s}(y), ties included. Checked (1) exhaustively with exact rational arithmetic for every
p-bit significand, p = 6..14, s = 1..p-2, and (2) for binary64 with s = 29 (rounding to fp32's 24 bits) on random
values, exact ties and near-ties, against numpy's float64 -> float32 cast. Exits non-zero on any mismatch.
"""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np


def rne(v: Fraction, p: int) -> Fraction:
    """v rounded to p significant bits, ties to even (exact)."""
    if v == 0:
        return v
    sign, a, e = (-1 if v < 0 else 1), abs(Fraction(v)), 0
    while a >= 2 ** p:
        a, e = a / 2, e + 1
    while a < 2 ** (p - 1):
        a, e = a * 2, e - 1
    n = int(a)
    r = a - n
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2):
        n += 1
    return sign * Fraction(n) * Fraction(2) ** e


def small_precisions() -> tuple[int, int]:
    bad = total = 0
    for p in range(6, 15):
        for s in range(1, p - 1):
            for m in range(2 ** (p - 1), 2 ** p):
                c = rne(Fraction((2 ** s + 1) * m), p)
                hi = rne(c - rne(c - m, p), p)
                total += 1
                bad += hi != rne(Fraction(m), p - s)
    return bad, total


def binary64(n: int = 10_000_000, seed: int = 1) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2 ** 63, n, dtype=np.uint64)
    exp = rng.integers(1023 - 120, 1023 + 120, n).astype(np.uint64)  # results in fp32's normal range
    bits = (bits & ~np.uint64(0x7FF0000000000000)) | (exp << np.uint64(52))
    ties = (bits & ~np.uint64(0x1FFFFFFF)) | np.uint64(0x10000000)
    near = ties + rng.integers(-3, 4, n).astype(np.uint64)
    bad = 0
    for b in (bits, ties, near):
        y = b.view(np.float64)
        c = y * (2.0 ** 29 + 1)
        hi = c - (c - y)
        bad += int(np.count_nonzero(hi != y.astype(np.float32).astype(np.float64)))
    return bad, 3 * n


if __name__ == "__main__":
    b1, t1 = small_precisions()
    print(f"exact, p = 6..14: {b1} mismatches in {t1}")
    b2, t2 = binary64()
    print(f"binary64, s = 29: {b2} mismatches in {t2}")
    sys.exit(1 if b1 or b2 else 0)
