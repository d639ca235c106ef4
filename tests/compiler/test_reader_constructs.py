"""Ordinary IR that the hand-written grammar refused and LLVM accepts (issue 22: LLVM's AMX tests were refused for
these): each construct in a module of our own, read, compiled and run against a value worked out by hand."""

import numpy as np
import pytest

from systolic.compiler import compile_ir
from systolic.compiler.llvm_reader import parse
from systolic.compiler.printer import print_module

TILE_DECLS = """
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
"""


def _random_bytes(n, seed):
    """Random bytes, not np.arange: arange repeats every 256 bytes, so a copy to offset 512 or 1024 would already
    hold the source and a store that did nothing would pass."""
    return np.random.default_rng(seed).integers(0, 256, n).astype(np.uint8)


def _copy_rows_oracle(src, rows, cols, dst_off):
    out = src.copy()
    for r in range(rows):
        out[dst_off + 64 * r:dst_off + 64 * r + cols] = src[64 * r:64 * r + cols]
    return out


def test_function_defined_after_its_first_use():
    text = """
@buf = global [2048 x i8] zeroinitializer, align 64
define void @caller(i16 %r) {
entry:
  call void @callee(i16 %r, i16 32)
  ret void
}
define void @callee(i16 %r, i16 %c) {
entry:
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 %c, ptr @buf, i64 64)
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 %c, ptr getelementptr (i8, ptr @buf, i64 1024), i64 64, x86_amx %t)
  ret void
}
""" + TILE_DECLS
    buf = _random_bytes(2048, 1)
    want = _copy_rows_oracle(buf, 3, 32, 1024)
    assert not np.array_equal(buf, want)                # the copy must change the destination
    compile_ir(text).run("caller", 3, memory={"buf": buf})
    assert np.array_equal(buf, want)


def test_unnamed_entry_block_and_numbered_values():
    text = """
define i32 @f(i32 %0) {
  %2 = icmp sgt i32 %0, 5
  br i1 %2, label %3, label %5
3:
  %4 = mul nsw i32 %0, 3
  br label %5
5:
  %6 = phi i32 [ %4, %3 ], [ 7, %1 ]
  ret i32 %6
}
"""
    f = parse(text).functions["f"]
    assert [b.name for b in f.blocks] == ["1", "3", "5"]
    mod = compile_ir(text)
    assert mod.run("f", 10).value == 30 and mod.run("f", 2).value == 7


def test_typed_pointer_spelling_and_trunc_flags():
    """LLVM 22 still reads ``i8*`` (as ``ptr``) in a declaration; ``trunc nuw nsw`` is an ordinary trunc."""
    text = """
declare void @ext(i8*)
define i16 @f(i32 %x) {
entry:
  %t = trunc nuw nsw i32 %x to i16
  %n = zext nneg i16 %t to i32
  %s = trunc i32 %n to i16
  ret i16 %s
}
"""
    m = parse(text)
    assert str(m.functions["ext"].params[0].type) == "ptr"
    t = next(i for i in m.functions["f"].instructions() if i.name == "t")
    assert t.attrs["flags"] == ["nuw", "nsw"]
    assert "trunc nuw nsw i32 %x to i16" in print_module(m)
    assert compile_ir(text).run("f", 1234).value == 1234


def test_debug_records_and_metadata_with_flags():
    """``#dbg_value`` records, ``|`` in metadata (DIFlags), ``distinct`` nodes: carried by LLVM, no semantics."""
    text = """
@buf = global [2048 x i8] zeroinitializer, align 64
define void @f(i16 %r) !dbg !4 {
entry:
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 16, ptr @buf, i64 64), !dbg !8
    #dbg_value(i16 %r, !7, !DIExpression(), !8)
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 16, ptr getelementptr (i8, ptr @buf, i64 1024), i64 64, x86_amx %t), !dbg !8
  ret void, !dbg !8
}
""" + TILE_DECLS + """
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: FullDebug)
!1 = !DIFile(filename: "t.c", directory: "/tmp")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, type: !5, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition, unit: !0)
!5 = !DISubroutineType(types: !6)
!6 = !{null}
!7 = !DILocalVariable(name: "r", arg: 1, scope: !4, file: !1, line: 1, type: !9)
!8 = !DILocation(line: 2, column: 3, scope: !4)
!9 = !DIBasicType(name: "short", size: 16, encoding: DW_ATE_signed)
"""
    buf = _random_bytes(2048, 2)
    want = _copy_rows_oracle(buf, 5, 16, 1024)
    assert not np.array_equal(buf, want)
    mod = compile_ir(text)
    assert [i.opcode for i in mod.source.functions["f"].instructions()] == ["call", "call", "ret"]
    mod.run("f", 5, memory={"buf": buf})
    assert np.array_equal(buf, want)


def test_named_struct_types_allocas_and_memory_intrinsics():
    """clang -O0's shape: a named packed struct alloca, memset, field GEPs, memcpy between structs."""
    text = """
%struct.T = type <{ i16, i16, [60 x i8], <256 x i32> }>
%struct.P = type { i8, i32, i64 }
@out = global [16 x i8] zeroinitializer
define i64 @f(i16 %r, i16 %c) {
entry:
  %a = alloca %struct.T, align 64
  %b = alloca %struct.T, align 64
  call void @llvm.memset.p0.i64(ptr align 64 %a, i8 0, i64 1088, i1 false)
  %pr = getelementptr inbounds nuw %struct.T, ptr %a, i32 0, i32 0
  store i16 %r, ptr %pr, align 64
  %pc = getelementptr inbounds nuw %struct.T, ptr %a, i32 0, i32 1
  store i16 %c, ptr %pc, align 2
  call void @llvm.memcpy.p0.p0.i64(ptr align 64 %b, ptr align 64 %a, i64 1088, i1 false)
  %qc = getelementptr inbounds nuw %struct.T, ptr %b, i32 0, i32 1
  %cc = load i16, ptr %qc, align 2
  %pp = alloca %struct.P, align 8
  %f2 = getelementptr inbounds %struct.P, ptr %pp, i32 0, i32 2
  store i64 99, ptr %f2, align 8
  %o = getelementptr inbounds i8, ptr %pp, i64 8
  %v = load i64, ptr %o, align 8
  %w = zext i16 %cc to i64
  %sum = add i64 %v, %w
  store i64 %sum, ptr @out, align 8
  ret i64 %sum
}
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1 immarg)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1 immarg)
"""
    m = parse(text)
    from systolic.compiler.ir import field_offsets, size_of
    t = m.functions["f"].entry.instrs[0].attrs["alloc_type"]
    assert size_of(t) == 1088 and field_offsets(t) == [0, 2, 4, 64]
    p = next(i for i in m.functions["f"].instructions() if i.name == "pp").attrs["alloc_type"]
    assert field_offsets(p) == [0, 4, 8] and size_of(p) == 16
    r = compile_ir(text).run("f", 3, 40)
    assert r.value == 99 + 40 and r.memory["out"][:8].view("<i8")[0] == 139


def test_switch_select_freeze():
    text = """
define i32 @f(i32 %x) {
entry:
  %y = freeze i32 %x
  switch i32 %y, label %other [
    i32 1, label %one
    i32 -2, label %two
    i32 7, label %one
  ]
one:
  ret i32 100
two:
  %s = icmp slt i32 %y, 0
  %v = select i1 %s, i32 200, i32 300
  ret i32 %v
other:
  ret i32 0
}
"""
    mod = compile_ir(text)
    assert [mod.run("f", x).value for x in (1, 7, -2, 5)] == [100, 100, 200, 0]
    t = print_module(parse(text))
    assert print_module(parse(t)) == t


def test_memcpy_of_overlapping_bytes_is_refused_not_guessed():
    from systolic.errors import InvalidValue
    text = """
@g = global [16 x i8] zeroinitializer
define void @f() {
entry:
  %p = getelementptr i8, ptr @g, i64 2
  call void @llvm.memcpy.p0.p0.i64(ptr @g, ptr %p, i64 8, i1 false)
  ret void
}
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1 immarg)
"""
    with pytest.raises(InvalidValue, match="overlapping"):
        compile_ir(text).run("f")
