"""Packing into dwords and the VNNI layouts, against hand-written expectations and an index oracle."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from systolic import packing
from systolic.errors import InvalidValue


def test_lower_element_in_lower_bits():
    # visa-DPAS.md: elements packed with the lower-indexed element in the lower bits
    assert packing.pack(np.array([1, 2, 3, 4], dtype=np.uint8), 8).tolist() == [0x04030201]
    assert packing.pack(np.array([0xF, 0, 1, 8, 7, 2, 3, 4]), 4).tolist() == [0x43278100 | 0xF]
    assert packing.pack(np.array([-1, 0, 1, -8, 7, 2, 3, 4]), 4).tolist() == [0x4327810F]
    assert packing.pack(np.array([1, -2] + [0] * 14), 2).tolist() == [0b1001]
    assert packing.pack(np.array([1] + [0] * 30 + [1]), 1).tolist() == [0x80000001]
    assert packing.pack(np.array([0x1234, 0xABCD], dtype=np.uint16), 16).tolist() == [0xABCD1234]


def test_floats_pack_their_bit_patterns():
    bf = np.array([1.0, -2.0], dtype=ml_dtypes.bfloat16)
    assert packing.pack(bf, 16).tolist() == [0xC0003F80]
    f8 = np.array([1.0, -1.0, 0.5, 448.0], dtype=ml_dtypes.float8_e4m3fn)
    assert packing.pack(f8, 8).tolist() == [0x7E30B838]
    i4 = np.array([-1, 2, 3, 4, 5, 6, 7, -8], dtype=ml_dtypes.int4)
    assert packing.pack(i4, 4).tolist() == [0x8765432F]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16]), st.data())
def test_pack_unpack_roundtrip(bits, data):
    per = 32 // bits
    n = data.draw(st.integers(1, 6)) * per
    signed = data.draw(st.booleans())
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    vals = data.draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
    d = packing.pack(np.array(vals, dtype=np.int64), bits)
    assert d.dtype == np.uint32 and d.shape == (n // per,)
    # oracle: element i lives at dword i // per, bit offset (i % per) * bits
    for i, v in enumerate(vals):
        assert (int(d[i // per]) >> ((i % per) * bits)) & ((1 << bits) - 1) == v & ((1 << bits) - 1)
    assert packing.unpack(d, bits, signed=signed).tolist() == vals


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([2, 4, 8, 16]), st.integers(1, 4), st.integers(1, 9), st.data())
def test_vnni_against_index_oracle(bits, kblocks, n, data):
    per = 32 // bits
    k = kblocks * per
    b = np.array(data.draw(st.lists(st.integers(0, (1 << bits) - 1), min_size=k * n, max_size=k * n))).reshape(k, n)
    p = packing.vnni_pack(b, bits)
    assert p.shape == (kblocks, n)
    for kk in range(k):
        for nn in range(n):
            assert (int(p[kk // per, nn]) >> ((kk % per) * bits)) & ((1 << bits) - 1) == b[kk, nn]
    assert (packing.vnni_unpack(p, bits) == b).all()


def test_vnni_int8_example():
    # AMX B tile / SYCL ext_intel_packed: 8-bit -> groups of 4 rows interleaved
    b = np.arange(16, dtype=np.uint8).reshape(8, 2)  # K=8, N=2
    p = packing.vnni_pack(b, 8)
    assert p.tolist() == [[0x06040200, 0x07050301], [0x0E0C0A08, 0x0F0D0B09]]
    bf = np.arange(8).reshape(4, 2).astype(ml_dtypes.bfloat16)
    got = packing.vnni_pack(bf, 16)
    assert got.tolist() == [[0x40000000, 0x40403F80], [0x40C04080, 0x40E040A0]]


def test_pack_a_row_and_col_major():
    a = np.arange(12, dtype=np.int8).reshape(3, 4)
    row = packing.pack_a(a, 8)
    assert row.tolist() == [[0x03020100], [0x07060504], [0x0B0A0908]]
    assert (packing.pack_a(np.ascontiguousarray(a.T), 8, layout="col_major") == row).all()
    assert (packing.unpack_a(row, 8, signed=True) == a).all()


def test_errors():
    with pytest.raises(InvalidValue, match="multiple of 4"):
        packing.pack(np.zeros(6, dtype=np.uint8), 8)
    with pytest.raises(InvalidValue, match="element width"):
        packing.pack(np.zeros(6), 3)
    with pytest.raises(InvalidValue, match="not a multiple of 2"):
        packing.vnni_pack(np.zeros((3, 4), dtype=np.uint16), 16)
    assert packing.vnni_pack(np.ones((3, 2), dtype=np.uint16), 16, pad=True).tolist() == [[0x10001] * 2, [1, 1]]
    with pytest.raises(InvalidValue, match="2-D"):
        packing.vnni_pack(np.zeros(8, dtype=np.uint8), 8)
    with pytest.raises(InvalidValue, match="layout"):
        packing.pack_a(np.zeros((4, 4), dtype=np.uint8), 8, layout="diagonal")


def test_wide_floats_and_out_of_range_ints_are_refused():
    with pytest.raises(InvalidValue, match="64 bits wide, not 8"):
        packing.vnni_pack(np.ones((4, 2)), 8)
    with pytest.raises(InvalidValue, match="32 bits wide, not 1"):
        packing.pack(np.ones(32, dtype=np.float32), 1)
    with pytest.raises(InvalidValue, match="does not fit 8 bits"):
        packing.vnni_pack(np.full((4, 1), 300), 8)
    with pytest.raises(InvalidValue, match="bf16 elements are 16 bits wide"):
        packing.pack(np.ones(4, dtype=ml_dtypes.bfloat16), 8)
    # both signed and unsigned readings fit: -128..255 for 8 bits
    assert packing.pack(np.array([-128, 255, 0, 1]), 8).tolist() == [0x01_00_FF_80]
    # fp4 packs its 4-bit pattern: 1.0 = 0b0010, -1.0 = 0b1010
    f4 = np.array([1.0, -1.0] * 4, dtype=ml_dtypes.float4_e2m1fn)
    assert packing.pack(f4, 4).tolist() == [0xA2A2A2A2]


def test_unpack_edges():
    assert packing.unpack(np.uint32(0x0201), 8).tolist() == [1, 2, 0, 0]
    with pytest.raises(InvalidValue, match="count"):
        packing.unpack(np.array([1], dtype=np.uint32), 8, count=-1)
