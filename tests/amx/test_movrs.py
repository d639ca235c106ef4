"""TILELOADDRS / TILELOADDRST1 (ISE, AMX-MOVRS): TILELOADD's operation with a read-shared hint. Every outcome -
the loaded tile, a #UD, a restartable memory fault and its start_row - equals TILELOADD's on a CPU with the
feature; a CPU without it raises #UD naming AMX-MOVRS."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from systolic.amx import TileConfig, TileMachine
from systolic.amx import intrinsics as I
from systolic.errors import InvalidOpcode, SystolicError


def _outcome(mnemonic, rows, colsb, base, stride, start, mem):
    m = TileMachine("dmr")
    m.ldtilecfg(TileConfig(palette=1, tiles={0: (rows, colsb)}, start_row=start))
    try:
        getattr(m, mnemonic)(0, mem, base, stride)
        err = None
    except SystolicError as e:
        err = (type(e).__name__, e.values.get("row"))
    return err, m.tiles.copy(), m.config.start_row


@settings(max_examples=60, deadline=None)
@given(mn=st.sampled_from(["tileloaddrs", "tileloaddrst1"]), rows=st.integers(1, 16),
       colsb=st.sampled_from([4, 8, 20, 64]), base=st.integers(-8, 300), stride=st.integers(-70, 130),
       start=st.integers(0, 15), seed=st.integers(0, 2 ** 16))
def test_movrs_loads_are_tileloadd(mn, rows, colsb, base, stride, start, seed):
    mem = np.random.default_rng(seed).integers(0, 256, 512, dtype=np.uint8)
    got, ref = _outcome(mn, rows, colsb, base, stride, start, mem), _outcome("tileloadd", rows, colsb, base,
                                                                             stride, start, mem)
    assert got[0] == ref[0] and got[2] == ref[2] and np.array_equal(got[1], ref[1])


@pytest.mark.parametrize("cpu", ["spr", "emr", "gnr", "gnr-d"])
@pytest.mark.parametrize("mn", ["tileloaddrs", "tileloaddrst1"])
def test_cpus_without_movrs_raise_ud(cpu, mn):
    m = TileMachine(cpu)
    m.ldtilecfg(TileConfig(palette=1, tiles={0: (1, 64)}))
    with pytest.raises(InvalidOpcode, match=f"{mn.upper()} needs AMX-MOVRS"):
        getattr(m, mn)(0, np.zeros(64, np.uint8), 0, 64)


def test_the_intrinsics_load_alike():
    buf = np.arange(1024, dtype=np.int64).astype(np.uint8)
    with I.use_machine(TileMachine("dmr")):
        a, b, c = I.Tile(5, 32), I.Tile(5, 32), I.Tile(5, 32)
        I.tile_loadd(a, I.Ptr(buf), 40)
        I.tile_loaddrs(b, I.Ptr(buf), 40)
        I.tile_stream_loaddrs(c, I.Ptr(buf), 40)
    assert np.array_equal(a.numpy(), b.numpy()) and np.array_equal(a.numpy(), c.numpy())
    assert np.array_equal(a.numpy(), buf[np.arange(5)[:, None] * 40 + np.arange(32)])
    with pytest.raises(InvalidOpcode, match="AMX-MOVRS"):
        I.tile_loaddrs(I.Tile(1, 4), I.Ptr(buf), 4)       # the default machine is Sapphire Rapids
