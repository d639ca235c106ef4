"""Random programs: the emulator and spec backends agree on every state and every fault; nothing but a
typed SystolicError ever escapes (DESIGN principle 5)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck

from systolic.amx import TileConfig, TileMachine
from systolic.amx.machine import TMUL_MNEMONICS
from systolic.errors import SystolicError

tile_no = st.integers(0, 7) | st.sampled_from([-1, 8, 255])
shape = st.tuples(st.integers(0, 17), st.sampled_from([0, 4, 8, 16, 32, 64, 6, 65]))


@st.composite
def configs(draw):
    tiles = draw(st.dictionaries(st.integers(0, 7), shape, max_size=8))
    img = bytearray(64)
    img[0] = draw(st.sampled_from([1, 1, 1, 0, 2]))
    img[1] = draw(st.sampled_from([0, 0, 0, 1, 3, 15, 16]))
    for t, (r, c) in tiles.items():
        img[48 + t] = r
        img[16 + 2 * t:18 + 2 * t] = c.to_bytes(2, "little")
    if draw(st.integers(0, 9)) == 0:
        img[draw(st.sampled_from([2, 15, 40, 63]))] = 1
    return bytes(img)


instr = st.one_of(
    st.tuples(st.just("ldtilecfg"), configs()),
    st.tuples(st.just("tileloadd"), tile_no, st.integers(-80, 600), st.integers(-70, 70)),
    st.tuples(st.just("tileloaddt1"), tile_no, st.integers(-80, 600), st.integers(-70, 70)),
    st.tuples(st.just("tilestored"), tile_no, st.integers(-80, 600), st.integers(-70, 70)),
    st.tuples(st.just("tilezero"), tile_no),
    st.tuples(st.just("tilerelease")),
    st.tuples(st.just("sttilecfg"), st.integers(-10, 1100)),
    st.tuples(st.sampled_from(TMUL_MNEMONICS), tile_no, tile_no, tile_no),
)


def _run(path, program, seed):
    m = TileMachine("diamondrapids", path=path)
    mem = np.random.default_rng(seed).integers(0, 256, 1024, dtype=np.uint8)
    trace = []
    for ins in program:
        name, args = ins[0], list(ins[1:])
        if name in ("tileloadd", "tileloaddt1", "tilestored"):
            args = [args[0], mem, args[1], args[2]]
        elif name == "sttilecfg":
            args = [mem, args[0]]
        try:
            m.execute(name, *args)
            trace.append(None)
        except SystolicError as e:
            trace.append((type(e).__name__, e.rule, str(e)))
        trace.append((m.configured, m.config.to_bytes(), m.tiles.tobytes(), mem.tobytes()))
    return trace


USEFUL = [TileConfig(tiles={t: (16, 64) for t in range(8)}).to_bytes(),
          TileConfig(start_row=1, tiles={0: (3, 8), 1: (3, 12), 2: (3, 8), 3: (2, 8), 4: (3, 4)}).to_bytes(),
          TileConfig(tiles={0: (2, 4), 1: (2, 4), 2: (1, 4), 5: (16, 6)}).to_bytes()]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(USEFUL), st.lists(instr, min_size=1, max_size=12), st.integers(0, 1000))
def test_backends_agree_on_random_programs(cfg, program, seed):
    program = [("ldtilecfg", cfg), ("tileloadd", 1, 0, 64), ("tileloadd", 2, 64, 3)] + program
    a, b = _run("fast", program, seed), _run("spec", program, seed)
    assert a == b
    assert a[0] is None and a[2] is None  # the prologue's configuration and first load executed


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=80) | st.lists(st.integers(-5, 300), max_size=70))
def test_ldtilecfg_fuzz_only_typed_errors(data):
    m = TileMachine()
    try:
        m.ldtilecfg(data)
    except SystolicError:
        assert not m.configured
    else:
        assert len(data) == 64 and m.configured == (data[0] == 1)
        assert m.config.to_bytes() == bytes(data) or data[0] == 0
