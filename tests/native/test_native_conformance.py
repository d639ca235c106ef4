"""Conformance: random AMX programs run on the native backend (real AMX) and on the emulator must leave
bit-identical state (TILECFG, the 8 tiles, memory) and raise the same exceptions, step by step.

Runs only where the CPU has AMX and Linux grants tile data (marker ``native``); on CI the recorded
silicon vectors (test_silicon_replay.py) stand in for the silicon.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from systolic.amx import TileMachine
from systolic.errors import SystolicError

from .conftest import DATA, needs_native

import replay as R  # noqa: E402
import vectors as V  # noqa: E402

pytestmark = needs_native

EXAMPLES = int(os.environ.get("SYSTOLIC_NATIVE_EXAMPLES", "300"))
TMUL = ["tdpbssd", "tdpbsud", "tdpbusd", "tdpbuud", "tdpbf16ps", "tdpfp16ps"]  # fp16: #UD on SPR, both sides


@st.composite
def configs(draw):
    kind = draw(st.sampled_from(["shapes"] * 8 + ["random", "palette0", "bad"]))
    cfg = np.zeros(64, np.uint8)
    if kind == "palette0":
        cfg[1] = draw(st.integers(0, 255))
        return cfg
    cfg[0] = 1
    cfg[1] = draw(st.sampled_from([0] * 6 + [1, 3, 15, 16]))
    if kind == "shapes":
        m, k, n = (draw(st.integers(1, 16)) for _ in range(3))
        shapes = [(m, 4 * n), (m, 4 * k), (k, 4 * n), (0, 0)]
        for t in range(8):
            r, c = draw(st.sampled_from(shapes))
            cfg[48 + t], cfg[16 + 2 * t] = r, c
    else:
        for t in range(8):
            if draw(st.booleans()):
                cfg[48 + t] = draw(st.integers(1, 16))
                cfg[16 + 2 * t] = draw(st.integers(1, 64))
    if kind == "bad":
        which = draw(st.sampled_from(["reserved", "colsb", "rows", "half", "palette"]))
        if which == "reserved":
            cfg[draw(st.sampled_from([2, 15, 32, 47, 56, 63]))] = draw(st.integers(1, 255))
        elif which == "colsb":
            cfg[16] = 65
            cfg[48] = 1
        elif which == "rows":
            cfg[48] = 17
            cfg[16] = 4
        elif which == "half":
            cfg[48], cfg[16] = 3, 0
        else:
            cfg[0] = 2
    return cfg


tiles = st.integers(0, 7)
instr = st.one_of(
    st.tuples(st.just("ldtilecfg"), configs()),
    st.tuples(st.sampled_from(["tileloadd", "tileloaddt1"]), tiles, st.integers(-64, 4096),
              st.sampled_from([64, 64, 0, -64, 4, 100, 128, -4])),
    st.tuples(st.just("tilestored"), tiles, st.integers(-64, 4096), st.sampled_from([64, 64, 0, 32, -64, 128])),
    st.tuples(st.just("tilezero"), tiles),
    st.tuples(st.just("tilerelease")),
    st.tuples(st.just("sttilecfg"), st.integers(-8, 4090)),
    st.tuples(st.sampled_from(TMUL), tiles, tiles, tiles),
)


def _memory(kind: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "bytes":
        return rng.integers(0, 256, 4096, dtype=np.uint8)
    if kind == "bf16":
        v = rng.standard_normal(2048).astype(np.float32)
        v[rng.random(2048) < 0.05] = np.nan
        return (v.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    return rng.integers(-3, 4, 4096).astype(np.int8).view(np.uint8)


def _run(m, mem, step):
    name = step[0]
    try:
        if name == "ldtilecfg":
            m.ldtilecfg(step[1])
        elif name in ("tileloadd", "tileloaddt1"):
            getattr(m, name)(step[1], mem, step[2], step[3])
        elif name == "tilestored":
            m.tilestored(step[1], mem, step[2], step[3])
        elif name == "tilezero":
            m.tilezero(step[1])
        elif name == "tilerelease":
            m.tilerelease()
        elif name == "sttilecfg":
            m.sttilecfg(mem, step[1])
        else:
            getattr(m, name)(*step[1:])
    except SystolicError as e:
        return type(e).__name__
    return None


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(instr, min_size=1, max_size=25), st.sampled_from(["bytes", "bf16", "int"]), st.integers(0, 2**32))
def test_random_programs_native_equals_emulator(program, memkind, seed):
    emu, nat = TileMachine(backend="cpu"), TileMachine(backend="native")
    mem_e = _memory(memkind, seed)
    mem_n = mem_e.copy()
    executed = 0
    for j, step in enumerate(program):
        ee, en = _run(emu, mem_e, step), _run(nat, mem_n, step)
        assert ee == en, (j, step, ee, en)
        executed += ee is None and step[0].startswith("tdp")
        event(f"outcome {step[0]}: {ee or 'executed'}")
        assert emu.configured == nat.configured, (j, step)
        assert emu.config.to_bytes() == nat.config.to_bytes(), (j, step)
        assert np.array_equal(emu.tiles, nat.tiles), (j, step)
        assert np.array_equal(mem_e, mem_n), (j, step)
    event(f"TMULs executed natively: {min(executed, 3)}+" if executed >= 3 else f"TMULs executed: {executed}")


#: tile roles of the valid-program strategy: C (dst) tiles, A (src1) tiles, B (src2) tiles
C_TILES, A_TILES, B_TILES = (0, 3), (1, 4, 6), (2, 5, 7)


@st.composite
def valid_programs(draw):
    """Programs that mostly execute: shapes consistent by role, loads inside memory, TMULs on matching tiles."""
    steps = []
    for _ in range(draw(st.integers(1, 3))):
        m, k, n = (draw(st.integers(1, 16)) for _ in range(3))
        cfg = np.zeros(64, np.uint8)
        cfg[0] = 1
        for t in range(8):
            r, c = (m, 4 * n) if t in C_TILES else (m, 4 * k) if t in A_TILES else (k, 4 * n)
            cfg[48 + t], cfg[16 + 2 * t] = r, c
        steps.append(("ldtilecfg", cfg))
        for t in range(8):
            steps.append((draw(st.sampled_from(["tileloadd", "tileloaddt1"])), t, draw(st.integers(0, 3000)),
                          draw(st.sampled_from([64, 64, 4, 0, -4, 36]))))
        for _ in range(draw(st.integers(1, 8))):
            op = draw(st.sampled_from(["tmul"] * 4 + ["tilezero", "tilestored", "tileloadd"]))
            if op == "tmul":
                steps.append((draw(st.sampled_from(TMUL[:5])), draw(st.sampled_from(C_TILES)),
                              draw(st.sampled_from(A_TILES)), draw(st.sampled_from(B_TILES))))
            elif op == "tilezero":
                steps.append(("tilezero", draw(tiles)))
            else:
                steps.append((op, draw(tiles), draw(st.integers(0, 3000)), 64))
        steps.append(("tilestored", draw(st.sampled_from(C_TILES)), draw(st.integers(0, 3000)), 64))
    return steps


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(valid_programs(), st.sampled_from(["bytes", "bf16", "int"]), st.integers(0, 2**32))
def test_valid_programs_native_equals_emulator(program, memkind, seed):
    emu, nat = TileMachine(backend="cpu"), TileMachine(backend="native")
    mem_e = _memory(memkind, seed)
    mem_n = mem_e.copy()
    executed = 0
    for j, step in enumerate(program):
        ee, en = _run(emu, mem_e, step), _run(nat, mem_n, step)
        assert ee == en, (j, step, ee, en)
        executed += ee is None and step[0].startswith("tdp")
        assert emu.config.to_bytes() == nat.config.to_bytes(), (j, step)
        assert np.array_equal(emu.tiles, nat.tiles), (j, step)
        assert np.array_equal(mem_e, mem_n), (j, step)
    event(f"TMULs executed natively: {'>=4' if executed >= 4 else executed}")


def test_native_backend_reproduces_the_recorded_silicon():
    full = np.load(os.path.join(DATA, "full.npz"))
    for fam in V.FAMILIES:
        m = TileMachine(backend="native")
        for i, op, outs in R.full_ops(full, fam):
            got = R.replay(fam, op, m)
            for k in outs:
                assert np.array_equal(got[k], outs[k]), (fam, i, k)


def test_faulting_programs_never_reach_the_cpu():
    """#GP, #UD and memory faults are raised as exceptions by the machine (a SIGILL/SIGSEGV would kill pytest)."""
    from systolic.errors import GeneralProtection, InvalidOpcode, MemoryFault
    m = TileMachine(backend="native")
    bad = np.zeros(64, np.uint8)
    bad[0], bad[2] = 1, 1
    with pytest.raises(GeneralProtection):
        m.ldtilecfg(bad)
    with pytest.raises(InvalidOpcode):
        m.tdpbssd(0, 1, 2)
    cfg = np.zeros(64, np.uint8)
    cfg[0], cfg[16], cfg[48] = 1, 64, 16
    m.ldtilecfg(cfg)
    with pytest.raises(InvalidOpcode):
        m.tileloadd(1, np.zeros(4096, np.uint8), 0, 64)
    mem = np.arange(512, dtype=np.uint8)
    with pytest.raises(MemoryFault):
        m.tileloadd(0, mem, 0, 64)
    # the faulting load left rows 0..7 loaded and start_row at 8, like the emulator
    assert m.config.start_row == 8
    assert np.array_equal(m.tiles[0][:8].reshape(-1), mem)


def test_native_from_many_threads():
    """Each native call is self-contained (LDTILECFG ... TILERELEASE), so threads do not disturb each other."""
    from concurrent.futures import ThreadPoolExecutor
    full = np.load(os.path.join(DATA, "full.npz"))
    ops = list(R.full_ops(full, "dot:tdpbf16ps"))

    def work(chunk):
        m = TileMachine(backend="native")
        return all(all(np.array_equal(R.replay("dot:tdpbf16ps", op, m)[k], outs[k]) for k in outs)
                   for _, op, outs in chunk)
    with ThreadPoolExecutor(8) as ex:
        assert all(ex.map(work, [ops[i::8] for i in range(8)]))
