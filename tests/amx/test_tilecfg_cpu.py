"""TILECFG image and LDTILECFG #GP rules; CPU models and their CPUID leaves (SDM vol. 2 LDTILECFG, CPUID)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic.amx import TileConfig, TileMachine, get_cpu, CPUS
from systolic.amx.tilecfg import check_ldtilecfg
from systolic.errors import GeneralProtection, InvalidOpcode, InvalidValue


def test_layout_of_the_image():
    cfg = TileConfig(palette=1, start_row=3, tiles={0: (16, 64), 5: (2, 0x0102)})
    b = cfg.to_bytes()
    assert len(b) == 64 and b[0] == 1 and b[1] == 3
    assert b[16:18] == bytes([64, 0]) and b[26:28] == bytes([0x02, 0x01])  # colsb[5] little endian
    assert b[48] == 16 and b[53] == 2
    assert sum(b) == 1 + 3 + 64 + 3 + 16 + 2


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=64, max_size=64))
def test_image_round_trip(b):
    assert TileConfig.from_bytes(b).to_bytes() == b
    assert TileConfig.from_bytes(np.frombuffer(b, np.uint8)).to_bytes() == b


def test_bad_images_are_typed_errors():
    with pytest.raises(InvalidValue):
        TileConfig.from_bytes(bytes(63))
    with pytest.raises(InvalidValue):
        TileConfig(tiles={8: (1, 4)})
    with pytest.raises(InvalidValue):
        TileConfig(tiles={0: (1, 70000)})


@pytest.mark.parametrize("mutate, rule", [
    (lambda b: b.__setitem__(0, 2), "palette"),
    (lambda b: b.__setitem__(2, 1), "reserved"),
    (lambda b: b.__setitem__(40, 1), "reserved"),
    (lambda b: b.__setitem__(63, 0x80), "reserved"),
    (lambda b: b.__setitem__(16, 65), "colsb"),
    (lambda b: b.__setitem__(48, 17), "rows"),
    (lambda b: b.__setitem__(49, 4), "xor"),     # rows without colsb
    (lambda b: b.__setitem__(18, 4), "xor"),     # colsb without rows
])
def test_ldtilecfg_general_protection(mutate, rule):
    b = bytearray(TileConfig(palette=1, tiles={0: (16, 64)}).to_bytes())
    mutate(b)
    m = TileMachine()
    with pytest.raises(GeneralProtection) as e:
        m.ldtilecfg(bytes(b))
    assert rule in e.value.rule and not m.configured


def test_ldtilecfg_accepts_what_silicon_accepts():
    m = TileMachine()
    m.ldtilecfg(TileConfig(palette=1, start_row=255, tiles={0: (4, 16)}))    # start_row is not checked
    assert m.configured and m.config.start_row == 255
    m.ldtilecfg(TileConfig(palette=1, tiles={0: (4, 6)}))                    # colsb % 4 is not checked here
    m.ldtilecfg(TileConfig(palette=1))                                       # palette 1, no tile
    assert m.configured
    b = bytearray(TileConfig(palette=0, start_row=5, tiles={0: (3, 8)}).to_bytes())
    b[63] = 1                                                                # palette 0: everything ignored
    m.ldtilecfg(bytes(b))
    assert not m.configured
    mem = np.full(64, 0xEE, np.uint8)
    m.sttilecfg(mem, 0)
    assert not mem.any()


def test_ldtilecfg_zeroes_tiles_and_sttilecfg_reads_back():
    m = TileMachine()
    cfg = TileConfig(palette=1, start_row=2, tiles={1: (5, 12)})
    m.ldtilecfg(cfg)
    m.tiles[3] = 7
    m.ldtilecfg(cfg)
    assert not m.tiles.any()
    mem = np.zeros(80, np.uint8)
    m.sttilecfg(mem, 8)
    assert mem[8:72].tobytes() == cfg.to_bytes() and not mem[:8].any() and not mem[72:].any()
    m2 = TileMachine()
    m2.ldtilecfg(mem, 8)  # LDTILECFG from memory
    assert m2.config == cfg


def test_cpu_models_and_cpuid():
    spr = get_cpu("sapphirerapids")
    assert get_cpu("SPR") is spr and get_cpu("emeraldrapids").features == spr.features
    # CPUID 1DH.1: 8192 total, 1024 per tile, 64 per row, 8 names, 16 rows
    assert spr.cpuid(0x1D, 0) == (1, 0, 0, 0)
    assert spr.cpuid(0x1D, 1) == (8192 | 1024 << 16, 64 | 8 << 16, 16, 0)
    # CPUID 1EH.0 EBX: tmul_maxk 16, tmul_maxn 64
    assert spr.cpuid(0x1E, 0)[1] == 16 | 64 << 8
    # CPUID 07H.0 EDX: AMX-BF16 bit 22, AMX-TILE bit 24, AMX-INT8 bit 25
    assert spr.cpuid(0x07, 0)[3] == (1 << 22) | (1 << 24) | (1 << 25)
    gnr = get_cpu("graniterapids")
    assert gnr.cpuid(0x07, 1)[0] == 1 << 21 and gnr.supports("tdpfp16ps") and not spr.supports("tdpfp16ps")
    assert get_cpu("graniterapids-d").supports("tcmmrlfp16ps")
    dmr = get_cpu("diamondrapids")
    assert dmr.supports("tdphf8ps") and dmr.cpuid(0x1E, 0)[0] == 1
    assert dmr.cpuid(0x1E, 1)[0] == 0b110011111  # INT8 BF16 COMPLEX FP16 FP8 AVX512 MOVRS
    assert set(CPUS) == {"sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d", "diamondrapids"}
    with pytest.raises(InvalidValue):
        get_cpu("pentium")


@pytest.mark.parametrize("cpu, mnemonic", [("sapphirerapids", "tdpfp16ps"), ("graniterapids", "tcmmimfp16ps"),
                                           ("graniterapids-d", "tdpbf8ps"), ("emeraldrapids", "tdphf8ps")])
def test_missing_feature_is_invalid_opcode(cpu, mnemonic):
    m = TileMachine(cpu)
    m.ldtilecfg(TileConfig(tiles={0: (2, 8), 1: (2, 8), 2: (2, 8)}))
    with pytest.raises(InvalidOpcode) as e:
        getattr(m, mnemonic)(0, 1, 2)
    assert e.value.values["cpu"] == cpu


def test_check_ldtilecfg_names_values():
    with pytest.raises(GeneralProtection) as e:
        check_ldtilecfg(TileConfig(palette=1, tiles={3: (17, 4)}), get_cpu("spr"))
    assert e.value.values == {"tile": 3, "rows": 17, "max_rows": 16}
