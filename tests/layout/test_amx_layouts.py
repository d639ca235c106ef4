"""AMX tile layouts against the SDM's own indexing and the engine's spec TMUL (exact integer oracle)."""

import numpy as np
import pytest

from systolic import packing
from systolic.amx import isa
from systolic.amx.machine import TMUL_TYPES
from systolic.errors import InvalidValue
from systolic.layout import amx as LA
from systolic.layout import Layout


def test_sdm_indexing_bf16():
    # TDPBF16PS Operation: tsrc1.row[m].bf16[2*k+i] is A[m, 2k+i]; tsrc2.row[k].bf16[2*n+i] is B[2k+i, n]
    a, b, c = LA.tile_a(16, 32, "bf16", 16), LA.tile_b(32, 16, "bf16", 16), LA.tile_c(16, 16, "fp32", 32)
    for m in range(16):
        for kk in range(32):
            assert a.where(m, kk) == {"row": m, "col": kk, "tile_row": m, "byte": 2 * kk, "bits": (0, 15)}
    for kk in range(32):
        for n in range(16):
            w = b.where(kk, n)
            assert (w["row"], w["tile_row"], w["byte"]) == (kk, kk // 2, 2 * (2 * n + kk % 2))
    assert c.where(3, 5)["byte"] == 20 and c.where(3, 5)["tile_row"] == 3


def test_sdm_indexing_int8():
    # TDPB*D: DPBD(tsrc1.row[m].dword[k], tsrc2.row[k].dword[n]) multiplies byte i of each: A[m,4k+i] * B[4k+i,n]
    b = LA.tile_b(64, 16, "s8", 8)
    for kk in range(64):
        for n in range(16):
            w = b.where(kk, n)
            assert (w["row"], w["tile_row"], w["byte"]) == (kk, kk // 4, 4 * n + kk % 4)
    assert [d for d in b.what(0) if 4 <= d["byte"] < 8] == [b.where(k, 1) for k in range(4)]


@pytest.mark.parametrize("mn", ["tdpbssd", "tdpbsud", "tdpbusd", "tdpbuud"])
def test_layouts_drive_the_spec_tmul(mn):
    ta, tb, tc = TMUL_TYPES[mn]
    M, N, K = 13, 11, 48
    la, lb, lc = LA.tile_a(M, K, ta, 8), LA.tile_b(K, N, tb, 8), LA.tile_c(M, N, "int32", 32)
    rng = np.random.default_rng(5)

    def draw(t, shape):
        return rng.integers(-128, 128, size=shape) if t == "s8" else rng.integers(0, 256, size=shape)

    A, B = draw(ta, (M, K)), draw(tb, (K, N))
    C = rng.integers(-2**31, 2**31, size=(M, N))
    tiles = [L.scatter((X & 0xFFFFFFFF).astype(np.uint32), nbytes=1024).reshape(16, 64)
             for L, X in ((lc, C), (la, A), (lb, B))]
    isa.get(mn).spec(tiles[0], tiles[1], tiles[2], M, 4 * N, K)
    D = lc.gather(tiles[0].reshape(-1)).astype(np.int64)
    want = (C + A @ B) % 2**32
    np.testing.assert_array_equal(D, want)


def test_vnni_pack_is_the_b_layout():
    rng = np.random.default_rng(2)
    for bits, k in ((8, 64), (16, 32)):
        L = LA.tile_b(k, 16, "u8" if bits == 8 else "bf16", bits)
        raw = rng.integers(0, 1 << bits, size=(k, 16)).astype(np.uint32)
        img = packing.vnni_pack(raw, bits).astype("<u4").view(np.uint8).reshape(-1)
        np.testing.assert_array_equal(img, L.scatter(raw)[: img.size])


def test_tile_limits():
    with pytest.raises(InvalidValue):
        LA.tile_a(17, 4, "s8", 8)
    with pytest.raises(InvalidValue):
        LA.tile_b(31, 16, "bf16", 16)  # K must fill VNNI pairs
    with pytest.raises(InvalidValue):
        LA.tile_c(4, 17, "fp32", 32)


def test_core_overlaps_absolute_bits():
    idx = np.zeros((1, 2, 1), dtype=np.int64)
    idx[0, 1, 0] = 1
    L = Layout("t", "x", 1, 2, "bf16", 16, ("byte",), idx, np.zeros((1, 2), dtype=np.int64), 8)
    assert L.overlaps() == [((0, 0), (0, 1))]   # a 16-bit element at byte 0 covers byte 1
