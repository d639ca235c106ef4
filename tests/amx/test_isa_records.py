"""Issue 26 item 1: one record per AMX instruction (systolic.amx.isa), and every table reads it.

Each reader is asked, for every record, whether it knows the instruction with the record's own facts; a reader
that kept its own list would miss a new record here. The oracles are the records and LLVM (the intrinsic names
assemble to the mnemonic), never the readers' own tables.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from systolic.amx import cpu, intrinsics, isa, jit
from systolic.amx.machine import TMUL_TYPES, TileMachine
from systolic.compiler import amx_table, lower, shapes, to_llvm, to_machine

RECORDS = list(isa.INSTRUCTIONS.values())
TILE_OPS = [r for r in RECORDS if r.kind != "config"]


@pytest.mark.parametrize("rec", RECORDS, ids=lambda r: r.mnemonic)
def test_the_engine_reads_every_record(rec):
    assert rec.feature in cpu.FEATURES
    assert cpu.INSTRUCTION_FEATURE[rec.mnemonic] == rec.feature
    method = getattr(TileMachine, rec.mnemonic)
    assert method.__name__ == rec.mnemonic
    if rec.kind == "dot":
        assert TMUL_TYPES[rec.mnemonic] == rec.types
        assert callable(rec.spec) and callable(rec.fast)
        assert jit.DOT_INTRINSICS[rec.mnemonic] == (rec.intrinsic, rec.feature.upper())
    # the CPU models that have the feature list the instruction, the others do not
    for model in cpu.CPUS.values():
        assert (rec.mnemonic in model.as_dict()["instructions"]) == (rec.feature in model.features)


@pytest.mark.parametrize("rec", [r for r in RECORDS if r.kind in ("load", "dot")], ids=lambda r: r.mnemonic)
def test_the_intrinsics_have_one_function_per_load_and_tmul(rec):
    f = getattr(intrinsics, rec.api)
    assert f.__name__ == rec.api and rec.api in intrinsics.__all__
    assert rec.doc in f.__doc__


@pytest.mark.parametrize("rec", TILE_OPS, ids=lambda r: r.mnemonic)
def test_the_compiler_reads_every_record(rec):
    kind, family, modelled = amx_table.FAMILIES[rec.mnemonic]
    assert (kind, family, modelled) == (rec.kind, rec.feature.upper(), True)
    assert amx_table.SHAPED[rec.intrinsic_internal].mnemonic == rec.mnemonic
    assert amx_table.PHYSICAL[rec.intrinsic].mnemonic == rec.mnemonic
    assert amx_table.internal_name(rec.mnemonic) == rec.intrinsic_internal
    assert lower.pseudo_name(rec.mnemonic) in lower.PSEUDO                   # lowering
    assert rec.mnemonic.upper() in to_machine.MACHINE_OPS                   # register allocation, runner
    assert to_llvm._PHYS[rec.mnemonic.upper()] == rec.intrinsic             # emission
    if rec.kind == "dot":
        assert rec.mnemonic in shapes.DOT_MNEMONICS                         # shape analysis
    if rec.kind == "load":
        assert rec.mnemonic in shapes.LOAD_MNEMONICS


def test_no_reader_models_an_instruction_without_a_record():
    modelled = {m for m, (_k, _f, ok) in amx_table.FAMILIES.items() if ok}
    assert modelled == {r.mnemonic for r in TILE_OPS}
    assert set(TMUL_TYPES) == set(jit.DOT_INTRINSICS) == {r.mnemonic for r in isa.TMULS}
    assert set(shapes.LOAD_MNEMONICS) == {r.mnemonic for r in isa.LOADS}


def test_the_jit_keeps_no_instruction_table():
    # the JIT (layer 0) takes the record's intrinsic from its callers
    from systolic.jit import x86amx
    assert not hasattr(x86amx, "DOT_INTRINSICS")


@pytest.mark.parametrize("rec", [r for r in TILE_OPS if r.feature.upper() in jit.supported_features()],
                         ids=lambda r: r.mnemonic)
def test_every_intrinsic_assembles_to_its_mnemonic(rec):
    """LLVM is the oracle for the records' intrinsic names: each one, called in an llvmlite.ir module, becomes
    the record's instruction (any x86-64 host can emit AMX assembly)."""
    from llvmlite import ir

    from systolic.jit.build import I64, PTR, VOID, define
    from systolic.jit.engine import amx_feature_string
    # LLVM aborts the process on an intrinsic whose feature the target lacks: fail here instead
    assert f"+{rec.feature}" in amx_feature_string().split(","), "the JIT does not enable " + rec.feature
    from systolic.jit.x86amx import Amx
    m = ir.Module(name="records")
    _, b, (cfg, mem) = define(m, "f", VOID, [PTR, PTR])
    amx = Amx(m)
    amx.ldtilecfg(b, cfg)
    t = ir.Constant(ir.IntType(8), 0)
    if rec.kind == "dot":
        amx.dot(b, rec.intrinsic, 0, 1, 2)
    elif rec.kind in ("load", "store"):
        fn = amx._fn(rec.intrinsic, [ir.IntType(8), PTR, I64])
        b.call(fn, [t, mem, ir.Constant(I64, 64)])
    else:
        b.call(amx._fn(rec.intrinsic, [ir.IntType(8)]), [t])
    amx.tilerelease(b)
    b.ret_void()
    asm = jit.emit_asm(m, cpu="diamondrapids" if jit.llvm_version()[0] >= 20 else "sapphirerapids")
    assert re.search(rf"^\s+{rec.mnemonic}\b", asm, re.M), asm


def test_gemm_picks_its_tmul_from_the_records_types():
    from systolic import types as T
    from systolic.amx.gemm import mnemonic_for
    for r in isa.TMULS:
        if r.feature in ("amx-int8", "amx-bf16", "amx-fp16") and not r.mnemonic.startswith("tcmm"):
            a, b = (np.dtype(T.get(n).dtype) for n in r.types[:2])
            assert mnemonic_for(a, b) == r.mnemonic


def test_every_gemm_path_reads_the_gemm_family_from_the_records():
    """amx.matmul's dtype table, the native GEMM's kernels and the native switch's list are derived from
    isa.GEMM_TMULS: each names exactly those records (TDPB*D, TDPBF16PS, TDPFP16PS: the complex TCMM*FP16PS
    read fp16 too but are not plain dot products)."""
    from systolic import types as T
    from systolic.amx import gemm, native_gemm, native_matmul
    family = [r.mnemonic for r in isa.GEMM_TMULS]
    assert family == ["tdpbssd", "tdpbsud", "tdpbusd", "tdpbuud", "tdpbf16ps", "tdpfp16ps"]
    assert sorted(gemm._gemm_tmuls().values()) == sorted(family)
    assert sorted(m for m, _, _ in native_gemm.KERNELS.values()) == sorted(family)
    assert sorted(native_matmul._NATIVE) == sorted(family)
    for r in isa.GEMM_TMULS:
        ta, tb = (np.dtype(T.get(t).dtype) for t in r.types[:2])
        assert gemm.mnemonic_for(ta, tb) == r.mnemonic
