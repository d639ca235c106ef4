"""Integer DPAS against an independent int64 oracle: every precision mix, platform, RC, wraparound.

Operands are placed with systolic.packing (pack_a for Src2 = A row-major, vnni_pack for Src1 = B), not
with systolic.xmx.pack; the oracle is numpy int64 matmul reduced modulo 2**32 (SPV_INTEL_subgroup_matrix_
multiply_accumulate: "the low-order N bits of the correct result").
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic import packing
from systolic.errors import IllegalInstruction
from systolic.xmx import GRF, dpas
from systolic.xmx.kernels import dpas_fast

INTS = {"u2": (0, 3, 2), "s2": (-2, 1, 2), "u4": (0, 15, 4), "s4": (-8, 7, 4), "u8": (0, 255, 8),
        "s8": (-128, 127, 8)}


def _ops(p1, p2):
    sub = ("u2", "s2", "u4", "s4")
    return 8 if p1 in sub and p2 in sub else 4


def place(g, a, b, c, p1, p2, acc="int32"):
    """Write A, B, C into g with systolic.packing; return the operand offsets."""
    gb = g.grf_bytes
    src2, src1, src0, dst = 0, 16 * gb, 32 * gb, 64 * gb
    g.write(src2, packing.pack_a(a, INTS[p2][2]).astype("<u4"))
    g.write(src1, packing.vnni_pack(b, INTS[p1][2]).astype("<u4"))
    if c is not None:
        g.write(src0, (np.asarray(c, dtype=np.int64) & 0xFFFFFFFF).astype("<u4"))
    return dict(dst=dst, src0=None if c is None else src0, src1=src1, src2=src2)


def oracle(a, b, c):
    r = a.astype(np.int64) @ b.astype(np.int64)
    if c is not None:
        r = r + np.asarray(c, dtype=np.int64)
    return (r & 0xFFFFFFFF).astype(np.uint32)


def _random_case(rng, platform, p1, p2, rc, extreme=False):
    n = 8 if platform == "dg2" else 16
    k = 8 * _ops(p1, p2)
    lo2, hi2, _ = INTS[p2]
    lo1, hi1, _ = INTS[p1]
    if extreme:
        a = rng.choice([lo2, hi2], size=(rc, k))
        b = rng.choice([lo1, hi1], size=(k, n))
        c = rng.choice([-(2 ** 31), 2 ** 31 - 1, -1, 0], size=(rc, n))
    else:
        a = rng.integers(lo2, hi2 + 1, size=(rc, k))
        b = rng.integers(lo1, hi1 + 1, size=(k, n))
        c = rng.integers(-(2 ** 31), 2 ** 31, size=(rc, n))
    return a, b, c


@pytest.mark.parametrize("p1,p2", list(itertools.product(INTS, INTS)))
def test_every_int_mix_spec_path(p1, p2):
    rng = np.random.default_rng(hash((p1, p2)) & 0xFFFF)
    platform = "dg2" if (len(p1) + len(p2)) % 2 == 0 else "pvc"
    for rc, extreme in ((8, False), (3, True)):
        a, b, c = _random_case(rng, platform, p1, p2, rc, extreme)
        g = GRF(platform)
        off = place(g, a, b, c, p1, p2)
        dpas(g, **off, dst_type="d", src1_precision=p1, src2_precision=p2, rc=rc)
        n = g.platform.exec_size
        got = g.read(off["dst"], rc * n * 4).view("<u4").reshape(rc, n)
        np.testing.assert_array_equal(got, oracle(a, b, c))


@pytest.mark.parametrize("platform", ["dg2", "pvc", "bmg", "lnl"])
@pytest.mark.parametrize("p1,p2", [("s8", "s8"), ("u8", "u8"), ("u4", "s4"), ("s2", "s8"), ("u8", "u2")])
def test_fast_path_matches_oracle(platform, p1, p2):
    rng = np.random.default_rng(7)
    for rc in (1, 8):
        for extreme in (False, True):
            a, b, c = _random_case(rng, platform, p1, p2, rc, extreme)
            g = GRF(platform)
            off = place(g, a, b, c, p1, p2)
            dpas_fast(g, **off, dst_type="ud", src0_type="d", src1_precision=p1, src2_precision=p2, rc=rc)
            n = g.platform.exec_size
            got = g.read(off["dst"], rc * n * 4).view("<u4").reshape(rc, n)
            np.testing.assert_array_equal(got, oracle(a, b, c))


def test_wraparound_modulo_2_32():
    # C = 2**31 - 1 plus 32 products of (-128)*(-128) = 2**14 each wraps to a negative int32
    g = GRF("dg2")
    a = np.full((1, 32), -128)
    b = np.full((32, 8), -128)
    c = np.full((1, 8), 2 ** 31 - 1)
    off = place(g, a, b, c, "s8", "s8")
    dpas(g, **off, dst_type="d", src1_precision="s8", src2_precision="s8", rc=1)
    got = g.view(off["dst"], np.int32, 8)
    assert list(got) == [(2 ** 31 - 1 + 32 * 2 ** 14) - 2 ** 32] * 8


def test_null_src0_is_zero_and_other_rows_untouched():
    g = GRF("pvc")
    a = np.ones((2, 32), dtype=np.int64)
    b = np.arange(32 * 16).reshape(32, 16) % 5
    off = place(g, a, b, None, "u8", "u8")
    g.write(off["dst"] + 2 * 64, np.full(16, 0xDEADBEEF, dtype=np.uint32))
    dpas(g, **off, dst_type="d", src1_precision="u8", src2_precision="u8", rc=2)
    np.testing.assert_array_equal(g.view(off["dst"], np.uint32, 32).reshape(2, 16), oracle(a, b, None))
    assert all(g.view(off["dst"] + 128, np.uint32, 16) == 0xDEADBEEF)


def test_dst_may_alias_src0():
    # the accumulator read-modify-write of GEMM loops: dst == src0
    rng = np.random.default_rng(3)
    a, b, c = _random_case(rng, "dg2", "s8", "u8", 8)
    g = GRF("dg2")
    off = place(g, a, b, c, "s8", "u8")
    off["dst"] = off["src0"]
    dpas(g, **off, dst_type="d", src1_precision="s8", src2_precision="u8")
    np.testing.assert_array_equal(g.view(off["dst"], np.uint32, 64).reshape(8, 8), oracle(a, b, c))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(INTS)), st.sampled_from(sorted(INTS)), st.integers(1, 8),
       st.sampled_from(["dg2", "pvc"]), st.integers(0, 2 ** 32 - 1))
def test_hypothesis_spec_and_fast_equal_oracle(p1, p2, rc, platform, seed):
    rng = np.random.default_rng(seed)
    a, b, c = _random_case(rng, platform, p1, p2, rc, extreme=seed % 3 == 0)
    g = GRF(platform)
    off = place(g, a, b, c, p1, p2)
    h = g.copy()
    dpas(g, **off, dst_type="d", src1_precision=p1, src2_precision=p2, rc=rc)
    dpas_fast(h, **off, dst_type="d", src1_precision=p1, src2_precision=p2, rc=rc)
    assert np.array_equal(g.data, h.data)
    n = g.platform.exec_size
    np.testing.assert_array_equal(g.read(off["dst"], rc * n * 4).view("<u4").reshape(rc, n), oracle(a, b, c))


def test_large_grf_mode_and_numpy_offsets():
    # PVC with 256 GRFs: operands above r127 are legal; numpy integer offsets are accepted
    rng = np.random.default_rng(11)
    a, b, c = _random_case(rng, "pvc", "s8", "u8", 8)
    g = GRF("pvc", 256)
    base = 150 * 64
    g.write(base, packing.pack_a(a, 8).astype("<u4"))
    g.write(base + 16 * 64, packing.vnni_pack(b, 8).astype("<u4"))
    g.write(base + 32 * 64, (c & 0xFFFFFFFF).astype("<u4"))
    dpas(g, dst=np.int64(base + 64 * 64), src0=np.int32(base + 32 * 64), src1=base + 16 * 64, src2=np.uint16(base),
         dst_type="d", src1_precision="s8", src2_precision="u8")
    np.testing.assert_array_equal(g.view(base + 64 * 64, np.uint32, 128).reshape(8, 16), oracle(a, b, c))
    with pytest.raises(IllegalInstruction) as e:
        dpas(GRF("pvc"), dst=base + 64 * 64, src0=None, src1=base + 16 * 64, src2=base, dst_type="d",
             src1_precision="s8", src2_precision="u8")
    assert "register file" in str(e.value)
