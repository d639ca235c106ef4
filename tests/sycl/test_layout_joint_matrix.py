"""IGC's per-work-item coordinates (``systolic.layout.joint_matrix``) against statements made independently of
that code: IGC's own worked example, the OpenCL/SPIR-V work-item mappings (REFERENCE.md section 4), and IGC's
large-shape slice order read off ``DEFINE_MAD_LARGE_SLICE`` (block ``b`` = row tile ``b % 4``, column tile
``b // 4``), all encoded here as data."""

from __future__ import annotations

import numpy as np
import pytest

from systolic.errors import InvalidValue, UnsupportedCombination
from systolic.layout import Layout
from systolic.layout.joint_matrix import get_coord, slice_layout
from systolic.sycl import matrix as jm
from systolic.sycl.matrix_core import tf32


def test_igc_worked_example():
    # IBiF_matrix.cl comment: 8 x 32 slice, pack 2, sg 16, VF 1: work-item 0, index 3 -> row 1, col 1
    assert get_coord(0, 3, sg_size=16, elem_bits=8, contrib_bits=16, rows=8, cols=32, vnni=1) == (1, 1)


def _holder(lay: Layout, r: int, c: int) -> tuple[int, int]:
    return tuple(int(v) for v in lay.index[r, c])


@pytest.mark.parametrize("dev,sg", [("pvc", 16), ("dg2", 8)])
def test_b_and_accumulator_are_columns(dev, sg):
    # SPV_INTEL_subgroup_matrix_multiply_accumulate: b and acc hold one column per work-item, component = row/K
    b = jm.layout(dev, np.int8, jm.use.b, 32, sg)
    c = jm.layout(dev, np.int32, jm.use.accumulator, 8, sg)
    for r in range(32):
        for n in range(sg):
            assert _holder(b, r, n) == (n, r)
    for r in range(8):
        for n in range(sg):
            assert _holder(c, r, n) == (n, r)


def test_a_sub_group_16_one_16_bit_column_per_row():
    # sub-group 16: a is 16 bits per row per work-item: bf16 -> column i, int8 -> columns 2i, 2i+1
    a = jm.layout("pvc", jm.precision.tf32 if False else np.float16, jm.use.a, 8, 16)
    for r in range(8):
        for k in range(16):
            assert _holder(a, r, k) == (k, r)
    a8 = jm.layout("pvc", np.int8, jm.use.a, 8, 32)
    for r in range(8):
        for k in range(32):
            assert _holder(a8, r, k) == (k // 2, 2 * r + k % 2)


def test_a_sub_group_8_one_dword_per_row():
    a = jm.layout("dg2", np.float16, jm.use.a, 8, 16)
    for r in range(8):
        for k in range(16):
            assert _holder(a, r, k) == (k // 2, 2 * r + k % 2)


def test_tf32_a_even_and_odd_rows():
    # tf32 companion: work-items 0-7 hold the even rows, 8-15 the odd rows
    a = jm.layout("pvc", tf32, jm.use.a, 8, 8)
    for r in range(8):
        for k in range(8):
            wi, idx = _holder(a, r, k)
            assert wi == k + 8 * (r % 2) and idx == r // 2


@pytest.mark.parametrize("dev,shape,tile_cols", [("pvc", (32, 64), 16), ("dg2", (32, 32), 8),
                                                  ("pvc", (16, 16), 16), ("pvc", (1, 64), 16)])
def test_large_accumulator_block_order(dev, shape, tile_cols):
    # DEFINE_MAD_LARGE_SLICE: the slice is 8-row x N-column blocks (1-row for M = 1), row blocks fastest
    R, C = shape
    lay = jm.layout(dev, np.float32, jm.use.accumulator, R, C)
    tr = min(R, 8)
    for r in range(R):
        for c in range(C):
            blk = (r // tr) + (R // tr) * (c // tile_cols)
            assert _holder(lay, r, c) == (c % tile_cols, blk * tr + r % tr)


def test_large_b_32x64_k_halves():
    # 32x64x32: b[2j] = column tile j, K 0..15; b[2j+1] = K 16..31 (16 elements per work-item each)
    lay = jm.layout("pvc", np.float16, jm.use.b, 32, 64)
    for k in range(32):
        for n in range(64):
            blk = (k // 16) + 2 * (n // 16)
            assert _holder(lay, k, n) == (n % 16, 16 * blk + k % 16)


@pytest.mark.parametrize("dev,T,use,R,C", [
    ("pvc", np.int8, "a", 8, 32), ("pvc", np.int8, "b", 32, 16), ("pvc", np.float16, "a", 32, 32),
    ("pvc", np.float32, "accumulator", 32, 64), ("dg2", np.int8, "a", 8, 32), ("dg2", "bf16", "b", 16, 32),
    ("pvc", tf32, "a", 3, 8), ("pvc", tf32, "a", 1, 8), ("pvc", np.float16, "a", 1, 32), ("spr", np.int8, "b", 64, 16)])
def test_bijection(dev, T, use, R, C):
    lay = jm.layout(dev, T, getattr(jm.use, use), R, C)
    assert lay.holder == ("work_item", "index")
    assert lay.held().all()
    assert lay.overlaps() == []
    sg = lay.params["sg_size"]
    assert lay.extent()["work_item"] <= sg
    assert lay.extent()["index"] <= lay.params["slice_length"]


def test_amx_sub_group_of_one_is_row_major():
    lay = jm.layout("spr", np.int8, jm.use.a, 16, 64)
    r, c = 5, 7
    assert _holder(lay, r, c) == (0, 5 * 64 + 7)


def test_layout_is_cached_same_object():
    assert jm.layout("pvc", np.float16, jm.use.b, 16, 16) is jm.layout("pvc", np.float16, jm.use.b, 16, 16)


def test_bad_parameters():
    with pytest.raises(InvalidValue):
        slice_layout(8, 16, sg_size=16, elem_bits=16, contrib_bits=16, tile_rows=3)
    with pytest.raises(InvalidValue):
        jm.layout("pvc", np.float16, jm.use.a, 0, 16)
    with pytest.raises(UnsupportedCombination):
        jm.layout("pvc", np.float16, jm.use.a, 12, 16)   # not a whole number of 8-row tiles
