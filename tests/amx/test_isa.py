"""The AMX instruction records (systolic.amx.isa) are what the machine, the CPU table and the backends read."""

from __future__ import annotations

import numpy as np

from systolic.amx import TileConfig, TileMachine, isa
from systolic.amx.cpu import INSTRUCTION_FEATURE, get_cpu
from systolic.amx.machine import TMUL_TYPES


def test_every_tmul_record_is_a_machine_method():
    for r in isa.TMULS:
        method = getattr(TileMachine, r.mnemonic)
        assert method.__doc__ == r.doc and TMUL_TYPES[r.mnemonic] == r.types
        assert INSTRUCTION_FEATURE[r.mnemonic] == r.feature
    assert set(INSTRUCTION_FEATURE) == set(isa.INSTRUCTIONS)


def test_intrinsic_names_agree_with_the_compiler_table():
    # the compiler's LLVM table is written independently (compiler/amx_table.py): the names must agree
    from systolic.compiler.amx_table import PHYSICAL, SHAPED
    for r in isa.INSTRUCTIONS.values():
        if r.kind != "config":
            assert PHYSICAL[r.intrinsic].mnemonic == r.mnemonic
            assert SHAPED[r.intrinsic_internal].mnemonic == r.mnemonic


def test_spec_and_emulator_backends_run_the_records_bodies():
    # one TDPBSSD on both backends, against an int64 reference of the same bytes
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (2, 8), dtype=np.int8)
    b = rng.integers(-128, 128, (2, 16), dtype=np.int8)              # K/4 = 2 rows of VNNI dwords, N = 4
    want = a.astype(np.int64) @ b.reshape(2, 4, 4).transpose(0, 2, 1).reshape(8, 4).astype(np.int64)
    for path in ("spec", "fast"):
        m = TileMachine(get_cpu("spr"), path=path)
        m.ldtilecfg(TileConfig(palette=1, tiles={0: (2, 16), 1: (2, 8), 2: (2, 16)}))
        m.write_tile(1, a)
        m.write_tile(2, b)
        m.execute("tdpbssd", 0, 1, 2)
        assert np.array_equal(m.read_tile(0, np.int32), want.astype(np.int32)), path
