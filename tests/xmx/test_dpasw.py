"""DPASW: Src2 shared by the fused EU pair (DPASW.md "Semantics")."""

import numpy as np
import pytest

from systolic.xmx import GRF, dpas, dpasw
from systolic.xmx.dpas import dpasw_split
from systolic.xmx.rules import check
from systolic.xmx.platform import get_platform


def _shape(p, rc):
    t = "f" if p[0] == "bf16" else "d"
    return check(get_platform("dg2"), opcode="dpasw", exec_size=8, sd=8, rc=rc, dst_type=t, src0_type=t,
                 src1_precision=p[0], src2_precision=p[1], dst=0, src0=0, src1=0, src2=0)


# NGrf = ceil(bits * OPS * RC / 32), EU0 takes the first ceil(NGrf / 2) GRFs (the DPASW.md pseudo-code), checked
# against rows of the DPASW.md table: (precisions, RC) -> (GRFs from EU0, GRFs from EU1)
@pytest.mark.parametrize("prec,rc,split", [
    (("s8", "s8"), 8, (4, 4)), (("s8", "s8"), 7, (4, 3)), (("s8", "s8"), 5, (3, 2)), (("s8", "s8"), 1, (1, 0)),
    (("s8", "s8"), 2, (1, 1)), (("s4", "s4"), 8, (4, 4)), (("s8", "s4"), 8, (2, 2)), (("s8", "s4"), 5, (2, 1)),
    (("s8", "s4"), 6, (2, 1)), (("s8", "s2"), 8, (1, 1)), (("s8", "s2"), 5, (1, 1)), (("s8", "s2"), 4, (1, 0)),
    (("s2", "s2"), 8, (2, 2))])
def test_split_matches_the_table(prec, rc, split):
    assert dpasw_split(_shape(prec, rc)) == split


@pytest.mark.parametrize("prec,dt", [(("s8", "s8"), "d"), (("bf16", "bf16"), "f"), (("s8", "s2"), "d")])
@pytest.mark.parametrize("rc", [1, 5, 8])
def test_dpasw_equals_dpas_on_the_assembled_src2(prec, dt, rc):
    rng = np.random.default_rng(rc)
    eu0, eu1 = GRF("dg2"), GRF("dg2")
    for g in (eu0, eu1):
        g.data[:] = rng.integers(0, 256, g.size, dtype=np.uint8)
        if dt == "f":  # keep bf16 values finite and moderate: exponent bits 0x3F.. / 0xBF..
            v = g.data.view("<u2")
            v[:] = (v & 0x807F) | 0x3F00
    kw = dict(dst=96 * 32, src0=64 * 32, src1=32 * 32, src2=0, dst_type=dt, src1_precision=prec[0],
              src2_precision=prec[1], rc=rc)
    s = _shape(prec, rc)
    n0, n1 = dpasw_split(s)
    # expected: each EU runs DPAS with Src2 = EU0's first n0 GRFs followed by EU1's first n1 GRFs
    want = []
    for g in (eu0, eu1):
        h = g.copy()
        h.write(120 * 32, np.concatenate([eu0.read(0, n0 * 32), eu1.read(0, n1 * 32)]))
        dpas(h, **{**kw, "src2": 120 * 32})
        want.append(h.read(kw["dst"], rc * 32))
    a0, a1 = eu0.copy(), eu1.copy()
    dpasw(a0, pair=a1, **kw)
    np.testing.assert_array_equal(a0.read(kw["dst"], rc * 32), want[0])
    np.testing.assert_array_equal(a1.read(kw["dst"], rc * 32), want[1])
    # the two EUs used different Src1/Src0, so their results differ
    assert not np.array_equal(want[0], want[1])
