"""TDPBF16PS in the FTZ window below 2^-126, as recorded on silicon (tools/silicon/ftz_window.py).

A chain FMA result in [2^-126 - 2^-150, 2^-126 - 2^-151) rounds to 2^-126 on fp32's subnormal grid but is
tiny after rounding to 24 bits with an unbounded exponent (x86's rule, SDM vol. 1 4.9.1.5), so FTZ flushes it.
The recorded silicon shows the flush, and shows that a tiny product entering an empty chain is flushed
before 2^-126 is added (the chain order of the SDM).
"""

from __future__ import annotations

import json
import os
import sys
from fractions import Fraction

import pytest

from systolic.numerics import FP32, round_fraction

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "amx_silicon", "ftz_window.json")
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "silicon"))

REC = json.load(open(DATA))


@pytest.mark.parametrize("backend", ["emulator", "spec"])
@pytest.mark.parametrize("prog", REC["programs"], ids=lambda p: p["name"])
def test_emulator_equals_silicon(prog, backend):
    from ftz_window import run
    assert run(backend, prog["a"], prog["b0"], prog["b1"]) == prog["silicon"]


def test_recording_discriminates_the_two_ftz_readings():
    """Silicon agrees with tininess-after-rounding and disagrees with flushing on the subnormal grid."""
    prog = REC["programs"][0]
    after, grid = [], []
    for a0, a2, b0, b1 in ((prog["a"][0], prog["a"][2], x, y) for x, y in zip(prog["b0"], prog["b1"])):
        exact = Fraction(a0) * Fraction(b0) + Fraction(a2) * Fraction(b1)
        after.append(round_fraction(exact, FP32, ftz=True))
        g = round_fraction(exact, FP32)
        grid.append(g if (g & 0x7F800000) else g & 0x80000000)  # flush only what is subnormal after rounding
    sil = [s & 0xFFFFFFFF for s in prog["silicon"]]
    # +0 and -0 differ only through the final adds to the +0 odd chain and C = 0: compare magnitudes
    assert [s & 0x7FFFFFFF for s in sil] == [v & 0x7FFFFFFF for v in after]
    assert sum((s & 0x7FFFFFFF) != (v & 0x7FFFFFFF) for s, v in zip(sil, grid)) >= 4
