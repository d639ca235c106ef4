"""systolic.amx.jit: AMX assembly from LLVM IR on any x86-64 machine (no AMX needed), and typed errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from systolic.amx import jit, native_gemm
from systolic.errors import AsmSyntaxError, InvalidValue, IRVerifyError

DATA_MOVES = ("ldtilecfg", "sttilecfg", "tilerelease", "tilezero", "tileloadd", "tileloaddt1", "tilestored")


def _program(mnemonic: str) -> str:
    p = jit.ptr_type()
    intr = jit.DOT_INTRINSICS[mnemonic][0]
    return jit.declarations([mnemonic]) + f"""
define void @f({p} %cfg, {p} %mem) {{
  call void @llvm.x86.ldtilecfg({p} %cfg)
  call void @llvm.x86.tileloadd64(i8 1, {p} %mem, i64 64)
  call void @llvm.x86.tileloaddt164(i8 2, {p} %mem, i64 128)
  call void @llvm.x86.tilezero(i8 0)
  call void @{intr}(i8 0, i8 1, i8 2)
  call void @llvm.x86.tilestored64(i8 0, {p} %mem, i64 64)
  call void @llvm.x86.sttilecfg({p} %cfg)
  call void @llvm.x86.tilerelease()
  ret void
}}
"""


def _usable():
    return [m for m, (_, feat) in jit.DOT_INTRINSICS.items() if feat in jit.supported_features()]


@pytest.mark.parametrize("mnemonic", sorted(jit.DOT_INTRINSICS))
def test_every_instruction_assembles_with_tile_operands(mnemonic):
    if mnemonic not in _usable():
        pytest.skip(f"LLVM {jit.llvm_version()} predates {jit.DOT_INTRINSICS[mnemonic][1]}")
    asm = jit.emit_asm(_program(mnemonic))
    # AT&T order: src2, src1, dst
    assert re.search(rf"\b{mnemonic}\s+%tmm2, %tmm1, %tmm0", asm), asm
    for op in DATA_MOVES:
        assert re.search(rf"^\s+{op}\b", asm, re.M), op
    assert re.search(r"tileloadd\s+\(%\w+,%\w+\), %tmm1", asm)
    assert re.search(r"tilestored\s+%tmm0, \(%\w+,%\w+\)", asm)


def test_asm_order_follows_the_ir():
    asm = jit.emit_asm(_program("tdpbf16ps"))
    seq = [m.group(1) for m in re.finditer(r"^\s+(ldtilecfg|tileloaddt?1?|tilezero|tdpbf16ps|tilestored|"
                                            r"sttilecfg|tilerelease)\b", asm, re.M)]
    assert seq == ["ldtilecfg", "tileloadd", "tileloaddt1", "tilezero", "tdpbf16ps", "tilestored", "sttilecfg",
                   "tilerelease"]


@pytest.mark.parametrize("mnemonic", ["tdpbf16ps", "tdpbssd", "tdpbsud", "tdpbusd", "tdpbuud"])
def test_gemm_micro_kernel_assembles(mnemonic):
    asm = jit.emit_asm(native_gemm.kernel_ir(mnemonic))
    # four accumulators tmm0-3, A in tmm4/5, B in tmm6/7
    for dst, a, b in ((0, 4, 6), (1, 4, 7), (2, 5, 6), (3, 5, 7)):
        assert re.search(rf"{mnemonic}\s+%tmm{b}, %tmm{a}, %tmm{dst}", asm), (dst, a, b)
    # C tiles stored twice each (into C after the last K block, into the partial-sum buffer after the others),
    # plus the A-packing copy (tile 4 -> stride-64 buffer)
    stores = re.findall(r"^\s+tilestored\s+%tmm(\d)", asm, re.M)
    assert sorted(stores) == ["0", "0", "1", "1", "2", "2", "3", "3", "4"]
    assert len(re.findall(r"^\s+tilezero\b", asm, re.M)) == 4
    # no software prefetch unless asked for; then 16 lines of each of the streamed operand's two tiles
    assert not re.search(r"^\s+prefetcht0\b", asm, re.M)
    asm = jit.emit_asm(native_gemm.kernel_ir(mnemonic, prefetch=2))
    assert len(re.findall(r"^\s+prefetcht0\b", asm, re.M)) == 32


def test_gemm_kernel_rejects_unknown_instruction():
    with pytest.raises(InvalidValue, match="no GEMM kernel"):
        native_gemm.kernel_ir("tdpfoo")


def test_generic_cpu_gets_the_amx_features():
    # LLVM aborts the process on AMX intrinsics for a target without AMX: emit_asm adds the features
    asm = jit.emit_asm(_program("tdpbssd"), cpu="x86-64", features="")
    assert re.search(r"tdpbssd\s+%tmm2, %tmm1, %tmm0", asm)


def test_bad_ir_is_a_typed_error_with_a_line():
    with pytest.raises(AsmSyntaxError) as e:
        jit.emit_asm("define void @f() {\n  ret i32 0\n}\n")
    assert e.value.line == 2
    assert "LLVM" in str(e.value)


def test_unknown_feature_is_named():
    with pytest.raises(InvalidValue, match="unknown AMX extension") as e:
        jit.feature_string(["AMX-TILE", "AMX-NOPE"])
    assert e.value.values["features"] == ["AMX-NOPE"]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_ir_text_never_crashes(text):
    try:
        jit.emit_asm(text)
    except AsmSyntaxError as e:   # IRVerifyError (a subclass) has line 0 where LLVM names no line
        # a parse error has LLVM's 1-based line; only the verifier may name none (line 0)
        assert (e.line >= 1 or isinstance(e, IRVerifyError)) and e.column >= 0, str(e)


@pytest.mark.parametrize("mnemonic", ["tdpbssd", "tdpbuud", "tdpbf16ps"])
def test_asm_demo_built_with_the_ir_builder(mnemonic):
    """``systolic amx asm``'s one-tile demo (an llvmlite.ir module): its IR verifies, and the assembly is the
    AMX sequence it was written as (ldtilecfg, C/A/B loads into tmm0/1/2, the dot, the store of tmm0, release)."""
    from click.testing import CliRunner

    from systolic.cli import cli
    from systolic.cli.amx_native import demo_module
    from systolic.llvmir.module import parse
    parse(str(demo_module(mnemonic)), name="amx_demo", verify=True)
    r = CliRunner().invoke(cli, ["amx", "asm", "--mnemonic", mnemonic])
    assert r.exit_code == 0, r.output
    seq = [ln.split() for ln in r.output.splitlines()
           if re.match(r"\s+(ldtilecfg|tileloadd|tilestored|tilerelease|tdp\w+)\b", ln)]
    assert [x[0] for x in seq] == ["ldtilecfg", "tileloadd", "tileloadd", "tileloadd", mnemonic, "tilestored",
                                   "tilerelease"], r.output
    assert [x[-1] for x in seq[1:4]] == ["%tmm0", "%tmm1", "%tmm2"]
    assert seq[4][1:] == ["%tmm2,", "%tmm1,", "%tmm0"] and seq[5][1] == "%tmm0,"
    r = CliRunner().invoke(cli, ["amx", "asm", "--mnemonic", mnemonic, "--ir"])
    assert r.exit_code == 0 and "define void @\"amx_demo\"" in r.output
