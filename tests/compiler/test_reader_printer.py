"""LLVM IR reader and printer: the seed's example as written, LLVM's final form, round trips, fuzzing."""

import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from systolic.compiler.ir import I16, PtrType, V256I32, X86_AMX
from systolic.compiler.llvm_reader import parse, parse_type
from systolic.compiler.printer import print_module
from systolic.errors import AsmSyntaxError

from .helpers import SEED, example

EXAMPLES = ["api.ll", "final_form.ll", "spill_heavy.ll", "gemm_o2.ll"]


def seed_listing() -> list[str]:
    """Lines 12-38 of the seed's section 5 listing, without the listing's line numbers."""
    lines = SEED.read_text().splitlines()
    out, on = [], False
    for line in lines:
        m = re.match(r"^(\d+) ?(.*)$", line)
        if m and m.group(1) == "12" and "define" in m.group(2):
            on = True
        if on and m:
            if m.group(2).strip():
                out.append(m.group(2).strip())
            if m.group(1) == "38":
                break
    return out


@pytest.mark.skipif(not SEED.exists(), reason="seed spec not found")
def test_api_example_is_the_seed_listing_verbatim():
    listing = seed_listing()
    assert len(listing) == 24 and listing[0].startswith("define dso_local void @api(")
    body = [l.strip() for l in example("api.ll").splitlines()
            if l.strip() and not l.startswith(";") and not l.startswith("@")]
    assert body == listing


def test_api_example_parses_to_the_seed_structure():
    m = parse(example("api.ll"))
    f = m.functions["api"]
    assert [b.name for b in f.blocks] == ["entry", "if.then", "if.else", "if.end"]
    assert [p.type for p in f.params][1:] == [I16, I16]
    calls = [i for i in f.instructions() if i.opcode == "call"]
    assert [c.intrinsic for c in calls] == ["llvm.x86.tileloadd64"] * 6 + ["llvm.x86.tdpbssd",
                                                                           "llvm.x86.tilestored64"]
    assert calls[0].type == V256I32
    gep = calls[0].operands[2]
    assert gep.type == PtrType(parse_type("i8")) and gep.base.name == "buf"
    phis = f.blocks[3].phis()
    assert [p.attrs["blocks"][0].name for p in phis] == ["if.else"] * 3
    assert m.functions["llvm.x86.tileloadd64"].implicit  # used without a declare, as in the listing


def test_final_form_types():
    m = parse(example("final_form.ll"))
    f = m.functions["gemm"]
    acc = next(i for i in f.instructions() if i.name == "acc")
    assert acc.type == X86_AMX and acc.opcode == "phi"
    assert not m.functions["llvm.x86.tdpbssd.internal"].implicit


@pytest.mark.parametrize("name", EXAMPLES)
def test_round_trip(name):
    m1 = parse(example(name))
    t1 = print_module(m1)
    m2 = parse(t1)
    t2 = print_module(m2)
    assert t1 == t2
    assert [i.opcode for i in m1.functions[next(iter(k for k, f in m1.functions.items() if not f.declaration))]
            .instructions()] == [i.opcode for i in m2.functions[next(iter(k for k, f in m2.functions.items()
                                                                          if not f.declaration))].instructions()]


@pytest.mark.parametrize("text, line, col, what", [
    ("define void @f() {\nentry:\n  %x = add i32 1\n  ret void\n}", 4, 3, "expected ','"),
    ("define void @f() {\nentry:\n  ret void\n", 4, 1, "unterminated"),
    ("define void @f() {\nentry:\n  %x = frob i32 1, 2\n  ret void\n}", 3, 8, "unsupported instruction"),
    ("define void @f() {\nentry:\n  br label %nowhere\n}", 3, 12, "undefined label"),
    ("define void @f() {\nentry:\n  %x = add i32 %y, 1\n  ret void\n}", 3, 16, "undefined value"),
    ("define void @f(i32 %a) {\nentry:\n  %x = add i16 %a, 1\n  ret void\n}", 3, 16, "has type i32"),
    ("@g = global i32 0\ndefine void @f() {\nentry:\n  %x = load i32, ptr @h\n  ret void\n}", 4, 22,
     "undefined global"),
    ("define void @f() {\nentry:\n  %x = add i8 1, 300\n  ret void\n}", 3, 18, "does not fit"),
    ("define void @f() {\nentry:\n  ret void\n  ret void\n}", 4, 3, "after a terminator"),
    ("define void @f() {\nentry:\n  %t = load x86_amx, ptr null\n  ret void\n}", 3, 8, "x86_amx"),
    ("define void @f() {\nentry:\n  call void @g()\n  ret void\n}", 3, 13, "undeclared"),
    ("define void @f() {\nentry:\n  %x = add i32 1, 2\n  %x = add i32 1, 2\n  ret void\n}", 4, 3,
     "redefinition"),
    ("define void @f() {\nentry:\n  ret void\n}\n\u00e9", 5, 1, "unexpected character"),
])
def test_errors_have_line_and_column(text, line, col, what):
    with pytest.raises(AsmSyntaxError) as ei:
        parse(text, source="t.ll")
    e = ei.value
    assert (e.line, e.column) == (line, col), str(e)
    assert what in str(e)
    assert str(e).startswith(f"t.ll:{line}:{col}:")


def test_phi_must_match_predecessors():
    text = ("define void @f(i1 %c) {\nentry:\n  br i1 %c, label %a, label %b\na:\n  br label %j\nb:\n"
            "  br label %j\nj:\n  %p = phi i32 [ 1, %a ]\n  ret void\n}")
    with pytest.raises(AsmSyntaxError, match="predecessors") as ei:
        parse(text)
    assert ei.value.line == 9


_TOKENS = ["%x", "%0", "@buf", "i32", "i16", "<256 x i32>", "x86_amx", "ptr", "i8*", ",", "(", ")", "[", "]",
           "{", "}", "=", "add", "call", "phi", "br", "label", "ret", "void", "0", "-1", "64", "\n", ":",
           "getelementptr", "inbounds", "store", "load", "!0", "#3", "\"q\"", "c\"ab\"", "..."]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(EXAMPLES), data=st.data())
def test_fuzz_mutated_examples_raise_only_asm_syntax_errors(name, data):
    text = example(name)
    ops = data.draw(st.lists(st.tuples(st.integers(0, len(text)), st.integers(0, 12),
                                       st.sampled_from(_TOKENS + [""])), min_size=1, max_size=4))
    for pos, cut, tok in ops:
        pos = min(pos, len(text))
        text = text[:pos] + tok + text[pos + cut:]
    try:
        m = parse(text)
    except AsmSyntaxError as e:
        assert e.line >= 1 and e.column >= 1
        return
    t = print_module(m)
    assert print_module(parse(t)) == t


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=" x\t%@\";:=,(){}[]<>*!#.0123456789-iptrvd\n\u00e9", max_size=60)
       | st.lists(st.sampled_from(_TOKENS), max_size=40).map(" ".join))
def test_fuzz_token_soup(text):
    try:
        parse(text)
    except AsmSyntaxError as e:
        assert e.line >= 1 and e.column >= 1


def test_debug_intrinsics_and_metadata_are_dropped():
    text = """
@buf = dso_local global [3072 x i8] zeroinitializer, align 16

define dso_local void @f(i16 signext %0, i16 signext %1) nounwind {
  %3 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 %0, i16 8, ptr @buf, i64 32)
  call void @llvm.dbg.value(metadata x86_amx %3, metadata !DILocalVariable(name: "1", scope: !2), metadata !DIExpression()), !dbg !3
  tail call void @llvm.x86.tilestored64.internal(i16 %0, i16 8, ptr getelementptr inbounds ([3072 x i8], ptr @buf, i64 0, i64 2048), i64 32, x86_amx %3)
  br i1 undef, label %a, label %b
a:
  ret void
b:
  ret void
}

declare void @llvm.dbg.value(metadata, metadata, metadata)
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)

!llvm.dbg.cu = !{!0}
!0 = distinct !DICompileUnit(language: DW_LANG_C, file: !DIFile(filename: "1", directory: "1"))
!3 = !DILocation(line: 1, column: 1, scope: !2)
"""
    m = parse(text)
    f = m.functions["f"]
    assert [b.name for b in f.blocks] == ["entry", "a", "b"]
    assert [i.opcode for i in f.entry.instrs] == ["call", "call", "br"]
    assert "llvm.dbg.value" not in m.functions
    from systolic.compiler import compile_ir
    import numpy as np
    buf = np.arange(3072, dtype=np.int64).astype(np.uint8)
    want = buf.copy()
    compile_ir(text).run("f", 4, 0, memory={"buf": buf})
    for r in range(4):
        want[2048 + 32 * r:2048 + 32 * r + 8] = want[32 * r:32 * r + 8]
    assert np.array_equal(buf, want)
