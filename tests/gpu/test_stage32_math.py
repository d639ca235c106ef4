"""The arithmetic xmx_stage32 relies on, checked without a GPU against exact Fractions.

The kernel (systolic.gpu.xmx_source) proves each bf16 "stage" x + p0 + p1 (x fp32, p0 = a0 b0, p1 = a1 b1
exact in binary32) by ``rl = RN(x + RD(p0 + p1)) == rh = RN(x + RU(p0 + p1))`` and recomputes the stages where
rl != rh with ``sum3_rn`` (Boldo-Melquiond: TwoSum(p0, p1), TwoSum(x, uh), round to odd from RD / RU / RZ of
tl + ul, RN(th + v)). Here both are replayed operation by operation, every binary32 operation rounded exactly
by systolic.numerics.rounding in the mode the PTX instruction names, and compared with RN(x + p0 + p1)
computed from Fractions. The kernel itself is compared with the CPU path on the GPU (tests/gpu/test_xmx_cuda.py).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from systolic.numerics.formats import FP32
from systolic.numerics.rounding import decode_fraction, round_fraction


def f32(q, mode="rne"):
    """The binary32 value of the exact q rounded in ``mode`` (as a Fraction; +-inf as float)."""
    v = decode_fraction(round_fraction(q, FP32, mode), FP32)
    return v


def add(a, b, mode="rne"):
    if isinstance(a, float) or isinstance(b, float):      # an infinity: IEEE addition of an inf and a finite value
        return a + b
    return f32(Fraction(a) + Fraction(b), mode)


def sub(a, b, mode="rne"):
    return add(a, -b, mode)


def two_sum(a, b):
    """Knuth's TwoSum in binary32 RN: s + e == a + b exactly."""
    s = add(a, b)
    bb = sub(s, a)
    e = add(sub(a, sub(s, bb)), sub(b, bb))
    return s, e


def sum3_rn(x, p0, p1):
    uh, ul = two_sum(p0, p1)
    th, tl = two_sum(x, uh)
    lo, hi, z = add(tl, ul, "rdn"), add(tl, ul, "rup"), add(tl, ul, "rtz")
    if lo == hi:
        v = z
    else:                                                  # RZ with its last bit set: the odd neighbour
        bits = round_fraction(Fraction(z), FP32, "rtz") | 1
        v = decode_fraction(bits, FP32)
    return add(th, v)


def bf16_values(rng, n, spread):
    """bf16 values (8 significant bits) of random sign, exponents spread by +-``spread``."""
    m = rng.integers(128, 256, n)                          # 8-bit significands with the leading bit
    e = rng.integers(-spread, spread + 1, n) - 7
    s = np.where(rng.random(n) < 0.5, -1, 1)
    return [Fraction(int(si * mi)) * Fraction(2) ** int(ei) for si, mi, ei in zip(s, m, e)]


@pytest.mark.parametrize("spread", [2, 8, 20])
def test_certificate_and_redo_give_the_stage_result(spread):
    rng = np.random.default_rng(spread)
    n = 1500
    a0, a1, b0, b1 = (bf16_values(rng, n, spread) for _ in range(4))
    xs = [f32(Fraction(float(v))) for v in rng.standard_normal(n) * 4.0 ** spread]
    certified = redone = 0
    for x, u0, u1, v0, v1 in zip(xs, a0, a1, b0, b1):
        p0, p1 = u0 * v0, u1 * v1                          # exact; each fits binary32 (16 significant bits)
        assert f32(p0) == p0 and f32(p1) == p1
        want = f32(x + p0 + p1)                            # the stage: one RNE rounding of the exact sum
        tl, th = f32(p0 + p1, "rdn"), f32(p0 + p1, "rup")  # fma.rm / fma.rp of (a1, b1, p0)
        rl, rh = add(x, tl), add(x, th)
        if rl == rh:
            certified += 1
            assert rl == want
        else:
            redone += 1
        assert sum3_rn(x, p0, p1) == want                  # the redo, on every case (not only the rare ones)
    assert certified > 0
    if spread >= 8:
        assert redone > 0                                  # wide spreads exercise the uncertified branch
