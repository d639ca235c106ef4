"""Emission (b) and (c) are llvmlite.ir modules built with IRBuilder (issue 24 item 4): LLVM's parser and
verifier accept them (systolic.llvmir.module.parse), every instruction kind the compiler models reaches them,
and the physical form assembles to the allocated tile instructions."""

import re

import pytest
from llvmlite import ir as L

from systolic.compiler import compile_ir
from systolic.compiler.to_llvm import internal_module, physical_module
from systolic.llvmir.module import parse

from .helpers import EXAMPLES, example

EVERY_KIND = """
@buf = global [2048 x i8] zeroinitializer, align 64
@tab = constant [4 x i32] [i32 1, i32 2, i32 3, i32 4], align 4
define i32 @f(i16 %r, i32 %sel, ptr noundef %p) {
entry:
  %slot = alloca [16 x i8], align 16
  store i32 7, ptr %slot, align 4
  %z = call x86_amx @llvm.x86.tilezero.internal(i16 %r, i16 64)
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 64, ptr getelementptr inbounds (i8, ptr @buf, i64 1024), i64 64)
  %b = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr @buf, i64 64)
  %d = call x86_amx @llvm.x86.tdpbssd.internal(i16 %r, i16 64, i16 64, x86_amx %z, x86_amx %t, x86_amx %b)
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 64, ptr @buf, i64 64, x86_amx %d)
  %fr = freeze i32 %sel
  %w = zext nneg i16 %r to i32
  %n = trunc nuw i32 %w to i16
  %c = icmp ult i16 %n, 8
  %s = select i1 %c, i32 %fr, i32 3
  switch i32 %s, label %other [
    i32 0, label %zero
    i32 1, label %one
  ]
zero:
  br label %join
one:
  %q = getelementptr inbounds [4 x i32], ptr @tab, i64 0, i64 1
  %v = load i32, ptr %q, align 4
  br label %join
other:
  %m = mul nsw i32 %s, 3
  br label %join
join:
  %x = phi i32 [ 0, %zero ], [ %v, %one ], [ %m, %other ]
  %y = load i32, ptr %slot, align 4
  %sum = add i32 %x, %y
  ret i32 %sum
}
declare x86_amx @llvm.x86.tilezero.internal(i16, i16)
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
"""


def test_every_instruction_kind_is_built_and_verified():
    mod = compile_ir(EVERY_KIND)
    for m in (physical_module(mod.machine), internal_module(mod.final)):
        assert isinstance(m, L.Module)
        text = str(m)
        parse(text)                                       # LLVM's parser and verifier
        for word in ("freeze i32", "switch i32", r"select\s+i1", "zext nneg", "trunc nuw", r"alloca \[16 x i8\]",
                     r"phi\s+i32", "mul nsw", "icmp ult", "getelementptr inbounds i8"):
            assert re.search(word, text), word
    phys = str(physical_module(mod.machine))
    assert re.search(r'call void @"llvm\.x86\.tdpbssd"\(i8 \d, i8 \d, i8 \d\)', phys)
    assert "x86_amx" not in phys and "x86_amx" in str(internal_module(mod.final))
    asm = mod.emit("asm")
    assert re.search(r"^\s+tdpbssd\s+%tmm\d, %tmm\d, %tmm\d", asm, re.M) and "ldtilecfg" in asm
    for sel in (0, 1, 5):                                  # the emulated run of the same program still works
        assert mod.run("f", 4, sel, ("buf", 0)).value == {0: 7, 1: 9, 5: 22}[sel]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.ll")))
def test_the_examples_emit_verified_modules(name):
    mod = compile_ir(example(name))
    parse(mod.emit("llvm"))
    parse(mod.emit("llvm-internal"))


def test_external_globals_are_declared_for_the_jit():
    mod = compile_ir(EVERY_KIND)
    text = str(physical_module(mod.machine, external_globals=True, rename={"buf": "sym.buf", "tab": "sym.tab"}))
    parse(text)
    assert '@"sym.buf" = external global [2048 x i8], align 64' in text
    assert "@buf" not in text and '@"buf"' not in text
