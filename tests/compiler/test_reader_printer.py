"""LLVM IR reader and printer: the seed's example as written, LLVM's final form, round trips, fuzzing."""

import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from systolic.compiler.ir import I16, PtrType, V256I32, X86_AMX
from systolic.compiler.llvm_reader import parse, parse_type
from systolic.compiler.printer import print_module
from systolic.errors import AsmSyntaxError, IRVerifyError, UnmodelledConstruct

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
def test_api_example_keeps_every_instruction_of_the_seed_listing():
    """The listing is not valid LLVM 22 IR (the proposal's intrinsic signatures and typed pointers); api.ll keeps
    each listed instruction, in order and with its name, in the form LLVM accepts (its header says how)."""
    listing = seed_listing()
    assert len(listing) == 24 and listing[0].startswith("define dso_local void @api(")
    names = [m.group(1) for line in listing if (m := re.match(r"(%[-\w.]+) = ", line))]
    body = [l.strip() for l in example("api.ll").splitlines()
            if l.strip() and not l.startswith((";", "declare"))]
    got = [m.group(1) for line in body if (m := re.match(r"(%[-\w.]+) = ", line))]
    assert [n for n in got if n in names] == names
    # the same opcodes/intrinsics in the same order, each proposal intrinsic now its .internal form
    def calls(lines):
        return [re.search(r"@llvm\.x86\.(\w+)", l).group(1) for l in lines if "@llvm.x86.t" in l]
    assert [c for c in calls(body) if not c.startswith("cast")] == \
        [c + "" for c in calls(listing)] and all(".internal" in l for l in body if "@llvm.x86.t" in l)


def test_api_example_parses_to_the_seed_structure():
    m = parse(example("api.ll"))
    f = m.functions["api"]
    assert [b.name for b in f.blocks] == ["entry", "if.then", "if.else", "if.end"]
    assert [p.type for p in f.params][1:] == [I16, I16]
    calls = [i for i in f.instructions() if i.opcode == "call" and "cast" not in i.intrinsic]
    assert [c.intrinsic for c in calls] == ["llvm.x86.tileloadd64.internal"] * 6 + \
        ["llvm.x86.tdpbssd.internal", "llvm.x86.tilestored64.internal"]
    assert calls[0].type == X86_AMX
    # LLVM folds getelementptr inbounds ([1024 x i8], ptr @buf, i64 0, i64 0) to @buf itself
    assert calls[0].operands[2] is m.globals["buf"] and m.globals["buf"].type == PtrType()
    assert m.globals["buf"].value_type == parse_type("[1024 x i8]")
    phis = f.blocks[3].phis()
    assert [p.type for p in phis] == [V256I32] * 3
    assert [p.attrs["blocks"][0].name for p in phis] == ["if.else"] * 3


def test_final_form_types():
    m = parse(example("final_form.ll"))
    f = m.functions["gemm"]
    acc = next(i for i in f.instructions() if i.name == "acc")
    assert acc.type == X86_AMX and acc.opcode == "phi"
    assert m.functions["llvm.x86.tdpbssd.internal"].declaration


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
    ("define void @f() {\nentry:\n  %x = frob i32 1, 2\n  ret void\n}", 3, 8, "expected instruction opcode"),
    ("define void @f() {\nentry:\n  %x = add i32 %y, 1\n  ret void\n}", 3, 16, "undefined value"),
    ("define void @f(i32 %a) {\nentry:\n  %x = add i16 %a, 1\n  ret void\n}", 3, 16, "defined with type 'i32' but expected 'i16'"),
    ("define void @f() {\nentry:\n  call void @g()\n  ret void\n}", 3, 13, "use of undefined value '@g'"),
    # the error is on the empty line after the last "\n" (str.splitlines drops it: was an IndexError)
    ("define void @f() {\nentry:\n", 3, 1, "found end of file"),
    ("define void @f() {\n; a\x0bb\n", 3, 1, "found end of file"),   # \v in a comment is no line break
])
def test_llvm_parse_errors_have_line_and_column(text, line, col, what):
    """LLVM's parser is the front door: its message, line and column reach the user as AsmSyntaxError."""
    with pytest.raises(AsmSyntaxError) as ei:
        parse(text, source="t.ll")
    e = ei.value
    assert (e.line, e.column) == (line, col), str(e)
    assert what in str(e)
    assert str(e).startswith(f"t.ll:{line}:{col}:")


def test_llvm_verifier_errors_are_typed():
    text = ("define void @f(i1 %c) {\nentry:\n  br i1 %c, label %a, label %b\na:\n  br label %j\nb:\n"
            "  br label %j\nj:\n  %p = phi i32 [ 1, %a ]\n  ret void\n}")
    with pytest.raises(IRVerifyError, match="PHINode should have one entry for each predecessor"):
        parse(text)


_GOOD = """
define i32 @good(i32 %a) {
entry:
  %b = mul nsw i32 %a, 3
  ret i32 %b
}
"""


@pytest.mark.parametrize("body, construct", [
    ("  call void asm sideeffect \"nop\", \"\"()\n  ret void", "inline asm"),
    ("  %x = fadd float 1.0, 2.0\n  ret void", "instruction 'fadd'"),
    ("  %x = add <4 x i32> zeroinitializer, zeroinitializer\n  ret void", "add on <4 x i32>"),
    ("  %x = extractelement <4 x i32> zeroinitializer, i32 0\n  ret void", "instruction 'extractelement'"),
    ("  %x = atomicrmw add ptr %p, i32 1 seq_cst\n  ret void", "instruction 'atomicrmw'"),
    ("  call void %p()\n  ret void", "indirect call"),
    ("  %z = call x86_amx @llvm.x86.tilezero.internal(i16 1, i16 4)\n"
     "  %t = call x86_amx @llvm.x86.tmmultf32ps.internal(i16 1, i16 4, i16 4, x86_amx %z, x86_amx %z, x86_amx %z)\n"
     "  ret void", "AMX-TF32"),
    ("  call void @llvm.x86.tilerelease()\n  ret void", "llvm.x86.tilerelease"),
])
def test_unmodelled_constructs_refuse_their_function_only(body, construct):
    decls = ("declare x86_amx @llvm.x86.tmmultf32ps.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)\n"
             "declare void @llvm.x86.tilerelease()\n"
             "declare x86_amx @llvm.x86.tilezero.internal(i16, i16)\n")
    text = _GOOD + decls + f"define void @bad(ptr %p) {{\nentry:\n{body}\n}}\n"
    line = text.splitlines().index(body.splitlines()[-2]) + 1  # the refused instruction: the one before ret
    from systolic.compiler import compile_ir
    mod = compile_ir(text, source="t.ll")
    assert mod.run("good", 5).value == 15  # the module's other function still compiles and runs
    with pytest.raises(UnmodelledConstruct) as ei:
        mod.run("bad", ("x", 0))
    e = ei.value
    assert construct in e.values["construct"] or construct in str(e), str(e)
    assert e.values["function"] == "bad" and e.values["line"] == line
    assert f"line {line}" in str(e)


_TOKENS = ["%x", "%0", "@buf", "i32", "i16", "<256 x i32>", "x86_amx", "ptr", "i8*", ",", "(", ")", "[", "]",
           "{", "}", "=", "add", "call", "phi", "br", "label", "ret", "void", "0", "-1", "64", "\n", ":",
           "getelementptr", "inbounds", "store", "load", "!0", "#3", "\"q\"", "c\"ab\"", "...", "fadd", "float"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(EXAMPLES), data=st.data())
def test_fuzz_mutated_examples_raise_only_typed_errors(name, data):
    text = example(name)
    ops = data.draw(st.lists(st.tuples(st.integers(0, len(text)), st.integers(0, 12),
                                       st.sampled_from(_TOKENS + [""])), min_size=1, max_size=4))
    for pos, cut, tok in ops:
        pos = min(pos, len(text))
        text = text[:pos] + tok + text[pos + cut:]
    try:
        m = parse(text)
    except AsmSyntaxError as e:  # IRVerifyError is one too
        # a parse error has LLVM's 1-based line; only the verifier may name none (line 0)
        assert (e.line >= 1 or isinstance(e, IRVerifyError)) and e.column >= 0, str(e)
        return
    t = print_module(m)
    assert print_module(parse(t)) == t


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=" x\t%@\";:=,(){}[]<>*!#.0123456789-iptrvd\n\u00e9", max_size=60)
       | st.lists(st.sampled_from(_TOKENS), max_size=40).map(" ".join))
def test_fuzz_token_soup(text):
    try:
        parse(text)
    except AsmSyntaxError as e:
        # a parse error has LLVM's 1-based line; only the verifier may name none (line 0)
        assert (e.line >= 1 or isinstance(e, IRVerifyError)) and e.column >= 0, str(e)


def test_debug_records_and_metadata_are_dropped():
    """clang -g: #dbg_value records (and the metadata they name) carry no semantics; the function reads and runs
    as without -g."""
    from systolic.llvmir.clang import compile_source
    from systolic.errors import ClangUnavailable
    src = ("#include <immintrin.h>\nchar buf[3072];\nvoid f(short r) {\n  __tile1024i t = {r, 8};\n"
           "  __tile_loadd(&t, buf, 32);\n  __tile_stored(buf + 2048, 32, t);\n}\n")
    try:
        texts = {g: compile_source(src, language="c", opt="-O2", debug=g, flags=["-mamx-tile", "-mamx-int8"])
                 for g in (False, True)}
    except ClangUnavailable as exc:
        pytest.skip(str(exc))
    assert "#dbg_" in texts[True] and "#dbg_" not in texts[False]
    ops = {g: [i.opcode for i in parse(t).functions["f"].instructions()] for g, t in texts.items()}
    assert ops[True] == ops[False]
    from systolic.compiler import compile_ir
    import numpy as np
    for seed, t in enumerate(texts.values()):
        # random bytes, not arange: arange repeats every 256 bytes, so offset 2048 would already hold the source
        buf = np.random.default_rng(seed).integers(0, 256, 3072).astype(np.uint8)
        want = buf.copy()
        for r in range(4):
            want[2048 + 32 * r:2048 + 32 * r + 8] = want[32 * r:32 * r + 8]
        assert not np.array_equal(buf, want)
        compile_ir(t).run("f", 4, memory={"buf": buf})
        assert np.array_equal(buf, want)


def test_broken_module_with_debug_info_is_an_error_not_an_abort():
    """LLVM's parser upgrades debug info by running the verifier and aborts the process when the module is
    broken (report_fatal_error); the front door checks such modules in a child process first."""
    text = """define void @f(ptr %q, i16 %c) !dbg !4 {
  call void @llvm.x86.tilestored64.internal(i16 %c, i16 %c, ptr %q, i64 64, i16 %c), !dbg !8
  ret void
}
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: FullDebug)
!1 = !DIFile(filename: "t.c", directory: "/tmp")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, spFlags: DISPFlagDefinition, unit: !0)
!8 = !DILocation(line: 2, column: 3, scope: !4)
"""
    with pytest.raises(IRVerifyError, match="Intrinsic called with incompatible signature"):
        parse(text)


def test_refused_functions_round_trip_as_declarations():
    text = ("define i32 @ok(i32 %a) {\nentry:\n  ret i32 %a\n}\n"
            "define float @bad(float %x) {\nentry:\n  %y = fadd float %x, 1.0\n  ret float %y\n}\n")
    m = parse(text)
    assert set(m.refused) == {"bad"} and m.functions["bad"].declaration
    t = print_module(m)
    assert "declare float @bad(float %x)" in t and print_module(parse(t)) == t
