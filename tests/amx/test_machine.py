"""The tile machine's instructions and fault rules (SDM vol. 2 AMX pages; REFERENCE.md section 6)."""

from __future__ import annotations

import numpy as np
import pytest

from systolic.amx import TileConfig, TileMachine
from systolic.errors import InvalidOpcode, InvalidValue, MemoryFault

PATHS = ["fast", "spec"]


def machine(path="fast", cpu="sapphirerapids", start_row=0, **tiles):
    m = TileMachine(cpu, path=path)
    m.ldtilecfg(TileConfig(palette=1, start_row=start_row, tiles={int(k[1:]): v for k, v in tiles.items()}))
    return m


# ------------------------------------------------------------------ loads, stores, restart

@pytest.mark.parametrize("path", PATHS)
def test_load_writes_rows_and_zeroes_the_rest(path):
    m = machine(path, t3=(3, 8))
    m.tiles[3] = 0x55  # stale bytes must all disappear
    mem = np.arange(256, dtype=np.uint8)
    m.tileloadd(3, mem, 10, 20)
    for r in range(16):
        expect = np.zeros(64, np.uint8)
        if r < 3:
            expect[:8] = np.arange(10 + 20 * r, 18 + 20 * r)
        assert (m.tiles[3, r] == expect).all()


@pytest.mark.parametrize("path", PATHS)
def test_load_negative_and_zero_stride(path):
    m = machine(path, t0=(4, 4))
    mem = np.arange(64, dtype=np.uint8)
    m.tileloaddt1(0, mem, 40, -8)
    assert [list(m.tiles[0, r, :4]) for r in range(4)] == [[40 + i - 8 * r for i in range(4)] for r in range(4)]
    m.tileloadd(0, mem, 5, 0)
    assert all(list(m.tiles[0, r, :4]) == [5, 6, 7, 8] for r in range(4))


@pytest.mark.parametrize("path", PATHS)
def test_load_from_start_row_keeps_rows_before_and_resets_start_row(path):
    m = machine(path, t1=(6, 4))
    m.tileloadd(1, np.full(64, 9, np.uint8), 0, 4)
    m.ldtilecfg(TileConfig(palette=1, start_row=4, tiles={1: (6, 4)}))  # zeroes tiles; start_row 4
    m.tiles[1, :, :4] = 7
    m.tiles[1, 10, 60] = 1
    m.tileloadd(1, np.arange(64, dtype=np.uint8), 0, 4)
    assert m.config.start_row == 0
    assert (m.tiles[1, :4, :4] == 7).all()                                   # rows before start_row untouched
    assert list(m.tiles[1, 4, :4]) == [16, 17, 18, 19] and list(m.tiles[1, 5, :4]) == [20, 21, 22, 23]
    assert not m.tiles[1, 6:].any()                                          # rows from start_row up zeroed


@pytest.mark.parametrize("path", PATHS)
def test_faulting_load_leaves_start_row_at_the_faulting_row_and_resumes(path):
    m = machine(path, t2=(5, 8))
    mem = np.arange(30, dtype=np.uint8)
    with pytest.raises(MemoryFault) as e:
        m.tileloadd(2, mem, 2, 8)  # rows at 2, 10, 18, 26 (ends 34 > 30): row 3 faults
    assert e.value.row == 3 and e.value.address == 30 and m.config.start_row == 3
    assert list(m.tiles[2, 2, :8]) == list(range(18, 26)) and not m.tiles[2, 3:].any()
    big = np.arange(100, dtype=np.uint8)  # "the OS maps the page": re-execute, resumes at row 3
    m.tileloadd(2, big, 2, 8)
    assert m.config.start_row == 0
    assert list(m.tiles[2, 0, :8]) == list(range(2, 10))
    assert list(m.tiles[2, 4, :8]) == list(range(34, 42))


@pytest.mark.parametrize("path", PATHS)
def test_faulting_store_writes_rows_before_the_fault(path):
    m = machine(path, t0=(4, 4))
    m.tileloadd(0, np.arange(16, dtype=np.uint8) + 1, 0, 4)
    mem = np.zeros(10, np.uint8)
    with pytest.raises(MemoryFault) as e:
        m.tilestored(0, mem, 0, 4)
    assert e.value.row == 2 and m.config.start_row == 2
    assert list(mem) == [1, 2, 3, 4, 5, 6, 7, 8, 0, 0]
    mem2 = np.zeros(64, np.uint8)
    m.ldtilecfg(TileConfig(palette=1, start_row=0, tiles={0: (4, 4)}))
    with pytest.raises(MemoryFault) as e:
        m.tilestored(0, mem2, -4, 4)
    assert e.value.row == 0 and e.value.address == -4 and not mem2.any()


@pytest.mark.parametrize("path", PATHS)
def test_store_honours_start_row_and_overlapping_rows(path):
    m = machine(path, start_row=3, t0=(5, 8))
    m.tiles[0, :5, :8] = np.arange(5)[:, None] + 1
    mem = np.full(64, 0xEE, np.uint8)
    m.tilestored(0, mem, 0, 8)
    assert (mem[:24] == 0xEE).all() and (mem[24:32] == 4).all() and (mem[32:40] == 5).all()
    assert m.config.start_row == 0
    mem = np.zeros(16, np.uint8)
    m.tilestored(0, mem, 0, 2)  # rows overlap: the later row wins
    assert list(mem[:16]) == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5]


@pytest.mark.parametrize("path", PATHS)
def test_tilezero_and_tilerelease(path):
    m = machine(path, t0=(2, 6), t1=(2, 8))
    m.tiles[0] = 3
    m.tilezero(0)  # colsb % 4 != 0 is accepted by TILEZERO (silicon: quirks.json zero_colsb_not_mult4)
    assert not m.tiles[0].any()
    m.tiles[1] = 4
    m.tilerelease()
    assert not m.configured and not m.tiles.any() and m.config.palette == 0
    m.tilerelease()  # needs no configuration


# ------------------------------------------------------------------ #UD rules

@pytest.mark.parametrize("action, rule", [
    (lambda m: m.tileloadd(1, np.zeros(64, np.uint8), 0, 4), "TILES_CONFIGURED"),
    (lambda m: m.tilestored(1, np.zeros(64, np.uint8), 0, 4), "TILES_CONFIGURED"),
    (lambda m: m.tilezero(1), "TILES_CONFIGURED"),
    (lambda m: m.tdpbssd(0, 1, 2), "TILES_CONFIGURED"),
])
def test_not_configured_is_invalid_opcode(action, rule):
    m = TileMachine()
    with pytest.raises(InvalidOpcode) as e:
        action(m)
    assert rule in e.value.rule


def test_transfer_rules():
    m = machine(t0=(4, 6), t1=(4, 8))
    mem = np.zeros(256, np.uint8)
    with pytest.raises(InvalidOpcode, match="colsb"):
        m.tileloadd(0, mem, 0, 8)
    with pytest.raises(InvalidOpcode, match="valid"):
        m.tileloadd(2, mem, 0, 8)
    with pytest.raises(InvalidOpcode, match="valid"):
        m.tilezero(2)
    with pytest.raises(InvalidOpcode, match="does not exist"):
        m.tileloadd(8, mem, 0, 8)
    m2 = machine(start_row=4, t1=(4, 8))
    with pytest.raises(InvalidOpcode) as e:
        m2.tileloadd(1, mem, 0, 8)
    assert e.value.values == {"start_row": 4, "rows": 4, "tile": 1}
    with pytest.raises(InvalidValue):
        m.tileloadd(1, mem.astype(np.int16), 0, 8)
    with pytest.raises(InvalidValue):
        m.tileloadd(1, mem, 0.5, 8)


@pytest.mark.parametrize("tiles, ops, rule", [
    ({0: (2, 8), 1: (2, 8), 2: (2, 8)}, (0, 0, 2), "pairwise distinct"),
    ({0: (2, 8), 1: (2, 8), 2: (2, 8)}, (0, 1, 1), "pairwise distinct"),
    ({0: (2, 8), 1: (2, 8), 2: (2, 8)}, (2, 1, 2), "pairwise distinct"),
    ({0: (2, 8), 1: (2, 8)}, (0, 1, 2), "not a valid"),
    ({0: (2, 6), 1: (2, 8), 2: (2, 6)}, (0, 1, 2), "colsb % 4"),
    ({0: (2, 8), 1: (2, 8), 2: (2, 12)}, (0, 1, 2), "srcdest.colsb != src2.colsb"),
    ({0: (3, 8), 1: (2, 8), 2: (2, 8)}, (0, 1, 2), "srcdest.rows != src1.rows"),
    ({0: (2, 8), 1: (2, 12), 2: (2, 8)}, (0, 1, 2), "src1.colsb / 4 != src2.rows"),
])
def test_tmul_rules(tiles, ops, rule):
    m = TileMachine()
    m.ldtilecfg(TileConfig(tiles=tiles))
    with pytest.raises(InvalidOpcode) as e:
        m.tdpbf16ps(*ops)
    assert rule in str(e.value)


def test_tmul_runs_all_rows_with_start_row_and_resets_it():
    m = TileMachine()
    m.ldtilecfg(TileConfig(start_row=2, tiles={0: (3, 4), 1: (3, 4), 2: (1, 4)}))
    m.tiles[1, :3, :4] = 1
    m.tiles[2, 0, :4] = 2
    m.tdpbuud(0, 1, 2)
    assert m.config.start_row == 0 and (m.read_tile(0, np.int32) == 8).all()


# ------------------------------------------------------------------ integer dot products, exact oracle

def _oracle_int8(c, a, b, s1, s2):
    """Plain Python integers: sum of byte products, wrapped to int32 once (addition mod 2^32 is associative)."""
    M, K4 = len(a), len(a[0]) // 4
    N = len(b[0]) // 4
    ext = (lambda v: v - 256 if v > 127 else v)
    out = []
    for i in range(M):
        row = []
        for j in range(N):
            t = c[i][j]
            for k in range(K4):
                for q in range(4):
                    x, y = a[i][4 * k + q], b[k][4 * j + q]
                    t += (ext(x) if s1 else x) * (ext(y) if s2 else y)
            t &= 0xFFFFFFFF
            row.append(t - (1 << 32) if t >> 31 else t)
        out.append(row)
    return out


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mnemonic, s1, s2", [("tdpbssd", 1, 1), ("tdpbsud", 1, 0), ("tdpbusd", 0, 1),
                                               ("tdpbuud", 0, 0)])
def test_int8_dot_products_wrap(path, mnemonic, s1, s2):
    rng = np.random.default_rng(7)
    M, K4, N = 5, 3, 4
    m = machine(path, t0=(M, 4 * N), t1=(M, 4 * K4), t2=(K4, 4 * N))
    a = rng.choice([0, 1, 0x7F, 0x80, 0x81, 0xFF], (M, 4 * K4)).astype(np.uint8)
    b = rng.choice([0, 1, 0x7F, 0x80, 0x81, 0xFF], (K4, 4 * N)).astype(np.uint8)
    c = rng.choice([0x7FFFFFFF, -0x80000000, 0x7FFF0000, -1, 0], (M, N)).astype(np.int32)
    m.write_tile(0, c), m.write_tile(1, a), m.write_tile(2, b)
    getattr(m, mnemonic)(0, 1, 2)
    expect = _oracle_int8(c.tolist(), a.tolist(), b.tolist(), s1, s2)
    assert m.read_tile(0, np.int32).tolist() == expect
    assert not m.tiles[0, M:].any() and not m.tiles[0, :, 4 * N:].any()


# ------------------------------------------------------------------ bf16 worked examples (hand-computed)

def _f32(x):
    return int(np.float32(x).view(np.uint32))


@pytest.mark.parametrize("path", PATHS)
def test_tdpbf16ps_two_chains_order(path):
    """One output, K = 2 dwords: even chain 2^24 + 1 (rounds to 2^24) ... the order is visible.

    a = [2^12, 1, 2^12, 1] (bf16), b column = [2^12, 1, 1, 1]: even chain 0 + 2^24 = 2^24, then
    2^24 + 2^12 * 1 = 2^24 + 4096 (exact); odd chain 1 + 1 = 2; t = 2^24 + 4098 -> RNE to fp32 (ulp 2)
    = 2^24 + 4098; dst = 1 + t = 2^24 + 4099 -> ties to even -> 2^24 + 4100.
    """
    m = machine(path, t0=(1, 4), t1=(1, 8), t2=(2, 4))
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    m.write_tile(1, np.array([[2.0 ** 12, 1, 2.0 ** 12, 1]], dtype=bf))
    m.write_tile(2, np.array([[2.0 ** 12, 1], [1, 1]], dtype=bf))
    m.write_tile(0, np.array([[1.0]], dtype=np.float32))
    m.tdpbf16ps(0, 1, 2)
    assert m.read_tile(0, np.float32)[0, 0] == np.float32(2.0 ** 24 + 4100)


@pytest.mark.parametrize("path", PATHS)
def test_tdpbf16ps_special_values(path):
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    m = machine(path, t0=(1, 16), t1=(1, 4), t2=(1, 16))
    a = np.array([[np.inf, 1.0]], dtype=bf)
    # n0: inf*0 -> default NaN; n1: inf*1 = inf; n2: NaN operand wins (payload kept, quieted); n3: denormal b -> 0
    b = np.zeros((1, 8), np.uint16)
    b[0] = [0x0000, 0x3F80, 0x3F80, 0x3F80, 0x3F80, 0x7F81, 0x0001, 0x0001]
    m.write_tile(1, a)
    m.write_tile(2, b)
    m.write_tile(0, np.array([[_f32(5.0), _f32(5.0), 0xFFA00001, 0x00000001]], dtype=np.uint32))
    m.tdpbf16ps(0, 1, 2)
    out = m.read_tile(0, np.uint32)[0]
    assert out[0] == 0xFFC00000                     # inf * 0 = default NaN
    assert out[1] == 0x7F800000                     # inf
    # n2: even chain inf*1 = inf; odd chain 1 * sNaN(0x7F81 -> 0x7F810000) -> quiet 0x7FC10000;
    # t = inf + NaN -> the NaN; dst NaN 0xFFA00001 is the first operand of dst + t -> quieted dst
    assert out[2] == 0xFFE00001
    # n3: a0 = inf times denormal (DAZ: +0) -> default NaN; dst denormal -> DAZ
    assert out[3] == 0xFFC00000


# ------------------------------------------------------------------ AMX-FP8 worked examples (model: exact sums)

@pytest.mark.parametrize("path", PATHS)
def test_fp8_exact_accumulation_then_one_rounding(path):
    """bf8: 2^15 * 2^15 + 1 * 2^-16 + (-2^15) * 2^15 = 2^-16 exactly (chained fp32 rounding would lose it)."""
    m = machine(path, cpu="diamondrapids", t0=(1, 8), t1=(1, 4), t2=(1, 8))
    m.write_tile(1, np.array([[0x78, 0x3C, 0xF8, 0x00]], np.uint8))             # 2^15, 1, -2^15, 0
    m.write_tile(2, np.array([[0x78, 0x01, 0x78, 0x00,                          # column 0: 2^15, 2^-16, 2^15, 0
                               0x3E, 0x38, 0x00, 0x00]], np.uint8))             # column 1: 1.5, 0.5, 0, 0
    m.write_tile(0, np.array([[0.0, 1.0]], np.float32))
    m.tdpbf8ps(0, 1, 2)
    out = m.read_tile(0, np.uint32)[0]
    assert out[0] == 0x37800000                       # 2^-16
    assert out[1] == np.float32(1.0 + 2.0 ** 15 * 1.5 + 0.5).view(np.uint32)  # 1 + 49152.5 = 49153.5


@pytest.mark.parametrize("path", PATHS)
def test_fp8_nan_and_inf_rules(path):
    m = machine(path, cpu="diamondrapids", t0=(1, 12), t1=(1, 4), t2=(1, 12))
    # hf8 x hf8: hf8 has no infinity; 0x7F is its NaN
    m.write_tile(1, np.array([[0x38, 0x38, 0x00, 0x00]], np.uint8))             # 1, 1, 0, 0
    m.write_tile(2, np.array([[0x7F, 0x38, 0, 0, 0x38, 0x38, 0, 0, 0x38, 0x40, 0, 0]], np.uint8))
    m.write_tile(0, np.array([[0x00000000, 0x7FC12345, 0x3F800000]], np.uint32))
    m.tdphf8ps(0, 1, 2)
    out = m.read_tile(0, np.uint32)[0]
    assert out[0] == 0xFFC00000                       # a NaN input: the default NaN, not its payload
    assert out[1] == 0xFFC00000                       # a NaN accumulator: the default NaN too
    assert out[2] == np.float32(1.0 + 1.0 + 2.0).view(np.uint32)
    # bf8: +inf and -inf in the same dword cancel to a NaN; inf * 0 is a NaN
    m2 = machine(path, cpu="diamondrapids", t0=(1, 8), t1=(1, 4), t2=(1, 8))
    m2.write_tile(1, np.array([[0x7C, 0xFC, 0x3C, 0x00]], np.uint8))           # +inf, -inf, 1, 0
    m2.write_tile(2, np.array([[0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x00, 0x3C, 0x00]], np.uint8))
    m2.tdpbf8ps(0, 1, 2)
    out2 = m2.read_tile(0, np.uint32)[0]
    assert out2[0] == 0xFFC00000 and out2[1] == 0xFFC00000


@pytest.mark.parametrize("path", PATHS)
def test_fp8_largest_products_do_not_overflow(path):
    """64 products of the largest bf8 (57344 = 7 * 2^13): exactly 64 * 49 * 2^26 = 49 * 2^32."""
    m = machine(path, cpu="diamondrapids", t0=(1, 4), t1=(1, 64), t2=(16, 4))
    m.write_tile(1, np.full((1, 64), 0x7B, np.uint8))
    m.write_tile(2, np.full((16, 4), 0x7B, np.uint8))
    m.tdpbf8ps(0, 1, 2)
    assert m.read_tile(0, np.float32)[0, 0] == np.float32(49 * 2.0 ** 32)


def test_read_only_memory_is_a_typed_error():
    m = machine(t0=(1, 4))
    mem = np.zeros(64, np.uint8)
    mem.flags.writeable = False
    with pytest.raises(InvalidValue):
        m.tilestored(0, mem, 0, 4)
    with pytest.raises(InvalidValue):
        m.sttilecfg(mem, 0)
    m.tileloadd(0, mem, 0, 4)  # reading is fine
