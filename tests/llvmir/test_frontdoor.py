"""systolic.llvmir: clang's diagnostics and output, LLVM's parser/verifier errors, and the facts read from text.

Oracles: IR written by hand here, where the predicate, type, flag, mask or metadata is known from the text we wrote;
clang's own diagnostics for a source with a known error at a known line and column.
"""

from __future__ import annotations

import pytest

from systolic.errors import AsmSyntaxError, ClangUnavailable, InvalidValue, IRVerifyError, SourceCompileError
from systolic.llvmir import clang, facts
from systolic.llvmir.module import parse

IR = r"""
%struct.S = type { i32, <4 x float> }

define spir_kernel void @k(ptr addrspace(1) %p, i32 %n, <4 x i32> %v) !reqd_work_group_size !0 !intel_reqd_sub_group_size !1 {
entry:
  %c = icmp slt i32 %n, -7
  %f = fcmp fast olt float 1.0, 2.0
  %g = getelementptr inbounds %struct.S, ptr addrspace(1) %p, i64 2, i32 1
  %a = alloca [4 x { i32, i8 }], align 4
  %x = add nsw nuw i32 %n, -7
  %s = shufflevector <4 x i32> %v, <4 x i32> poison, <4 x i32> <i32 3, i32 poison, i32 1, i32 0>
  %z = shufflevector <4 x i32> %v, <4 x i32> poison, <2 x i32> zeroinitializer
  switch i32 %n, label %d [
    i32 -1, label %t
    i32 5, label %d
  ]
t:
  ret void
d:
  ret void
}

!0 = !{i32 16, i32 2, i32 1}
!1 = !{i32 32}
"""


def _instrs(mod):
    fn = mod.get_function("k")
    return {i.name or i.opcode: i for b in fn.blocks for i in b.instructions}


def test_facts_read_from_text():
    mod = parse(IR, name="t.ll")
    ins = _instrs(mod)
    assert facts.predicate(ins["c"]) == "slt"
    assert facts.predicate(ins["f"]) == "olt"
    assert facts.gep_source_type(ins["g"]) == "%struct.S"
    assert facts.alloca_type(ins["a"]) == "[4 x { i32, i8 }]"
    assert facts.flags(ins["x"]) == {"nsw", "nuw"}
    assert "inbounds" in facts.flags(ins["g"])
    assert facts.shuffle_mask(ins["s"]) == [3, None, 1, 0]
    assert facts.shuffle_mask(ins["z"]) == [0, 0]
    assert facts.switch_cases(ins["switch"]) == [(-1, "t"), (5, "d")]
    const = list(ins["x"].operands)[1]
    assert facts.int_value(const) == -7 and facts.int_value(const, signed=False) == 2**32 - 7
    fn = mod.get_function("k")
    assert facts.address_space(list(fn.arguments)[0].type) == 1
    md = facts.function_metadata(mod, fn)
    assert md["reqd_work_group_size"] == [16, 2, 1] and md["intel_reqd_sub_group_size"] == [32]


def test_target_ext_type():
    t = facts.target_ext('target("spirv.CooperativeMatrixKHR", i8, 3, 8, 32, 0)')
    assert t.name == "spirv.CooperativeMatrixKHR" and t.types == ("i8",) and t.ints == (3, 8, 32, 0)
    with pytest.raises(InvalidValue):
        facts.target_ext("i32")


def test_facts_refuse_the_wrong_instruction():
    ins = _instrs(parse(IR))
    with pytest.raises(InvalidValue):
        facts.predicate(ins["x"])
    with pytest.raises(InvalidValue):
        facts.gep_source_type(ins["c"])


def test_parse_error_has_llvm_line_and_column():
    with pytest.raises(AsmSyntaxError) as e:
        parse("define void @f() {\n  ret i32 0 0\n}\n", name="bad.ll")
    assert e.value.line == 2 and e.value.column > 0 and e.value.source == "bad.ll"


def test_verifier_error_is_typed():
    text = "define i32 @f() {\nentry:\n  ret i32 %x\nb:\n  %x = add i32 1, 2\n  ret i32 %x\n}\n"
    with pytest.raises(IRVerifyError) as e:
        parse(text)
    assert "dominate" in str(e.value)
    parse(text, verify=False)       # it parses; only the verifier refuses it


def test_debug_line_resolves_file():
    text = ('define void @f() !dbg !4 {\n  ret void, !dbg !7\n}\n!llvm.module.flags = !{!0}\n'
            '!llvm.dbg.cu = !{!1}\n!0 = !{i32 2, !"Debug Info Version", i32 3}\n'
            '!1 = distinct !DICompileUnit(language: DW_LANG_C11, file: !2, emissionKind: FullDebug)\n'
            '!2 = !DIFile(filename: "k.c", directory: "/tmp")\n'
            '!4 = distinct !DISubprogram(name: "f", scope: !2, file: !2, line: 3, type: !5, unit: !1, '
            'spFlags: DISPFlagDefinition)\n!5 = !DISubroutineType(types: !6)\n!6 = !{null}\n'
            '!7 = !DILocation(line: 4, column: 9, scope: !4)\n')
    mod = parse(text)
    ret = next(iter(next(iter(mod.get_function("f").blocks)).instructions))
    assert facts.debug_line(mod, ret) == ("k.c", 4, 9)


def _have_clang() -> bool:
    try:
        clang.find_clang()
        return True
    except ClangUnavailable:
        return False


needs_clang = pytest.mark.skipif(not _have_clang(), reason="no clang (pip install 'systolic[clang]')")


@needs_clang
def test_clang_compiles_opencl_to_spir64_ir():
    src = "__kernel void add(__global int* a, __global const int* b) { int i = get_global_id(0); a[i] += b[i]; }"
    ir = clang.compile_source(src, language="cl", filename="add.cl")
    mod = parse(ir)
    assert 'target triple = "spir64-unknown-unknown"' in ir
    assert not mod.get_function("add").is_declaration


@needs_clang
def test_clang_diagnostic_names_file_line_column():
    src = "__kernel void k(__global int* a) {\n  a[0] = 1\n}\n"
    with pytest.raises(SourceCompileError) as e:
        clang.compile_source(src, language="cl", filename="mine.cl")
    d = [d for d in e.value.diagnostics if d.severity == "error"][0]
    assert (d.file, d.line) == ("mine.cl", 2) and d.column == 11
    assert "expected ';'" in d.message and e.value.location == "mine.cl:2:11"


@needs_clang
def test_clang_c_with_amx_header_at_O0_and_g():
    src = ("#include <immintrin.h>\nvoid f(char *buf, int *out) { __tile1024i a = {16, 64}; __tile1024i c = {16, 64};"
           " __tile_loadd(&a, buf, 64); __tile_zero(&c); __tile_dpbssd(&c, a, a); __tile_stored(out, 64, c); }\n")
    ir = clang.compile_source(src, language="c", opt="-O0", debug=True)
    assert "__tile1024i_str" in ir and "llvm.x86.tdpbssd.internal" in ir
    parse(ir)


def test_bad_arguments_are_typed():
    with pytest.raises(InvalidValue):
        clang.compile_source("x", language="fortran")
    with pytest.raises(InvalidValue):
        clang.compile_source(b"x", language="c")          # type: ignore[arg-type]
    with pytest.raises(InvalidValue):
        parse(b"define void @f() { ret void }")             # type: ignore[arg-type]


def test_missing_clang_names_both_ways(monkeypatch):
    monkeypatch.setenv("SYSTOLIC_CLANG", "/nonexistent/clang-99")
    with pytest.raises(ClangUnavailable) as e:
        clang.find_clang()
    assert "systolic[clang]" in str(e.value) and "PATH" in str(e.value)


def test_bad_inputs_to_the_facts_are_typed(monkeypatch):
    # no clang at all: bad arguments are InvalidValue before clang is looked for (not ClangUnavailable)
    monkeypatch.setenv("SYSTOLIC_CLANG", "/nonexistent/clang-99")
    with pytest.raises(InvalidValue):
        facts.int_value(None)
    with pytest.raises(InvalidValue):
        facts.address_space("ptr addrspace(x)")
    with pytest.raises(InvalidValue):
        facts.target_ext('target("x", i8, q)')
    with pytest.raises(InvalidValue):
        facts.target_ext('target("x", 3, i8)')          # a type after an integer
    assert facts.target_ext('target("spirv.Image", void, 1, 0)').types == ("void",)
    with pytest.raises(InvalidValue):
        parse("define void @f() {\n  ret void\n}\n", name=5)   # type: ignore[arg-type]
    with pytest.raises(InvalidValue):
        clang.compile_source("x", language="cl", defines=["A"])  # type: ignore[arg-type]
