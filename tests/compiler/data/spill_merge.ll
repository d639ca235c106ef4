; A tile live across calls on both arms of a branch, and accumulators overwritten in place
; (tests/compiler/test_passes_regalloc.py; the pattern of LLVM's amx-spill-merge.ll test_api). Tiles are
; caller-saved, so %c, %d1 and %d2 go through spill slots; spill-everywhere code must not reload a slot into
; the register that still holds it, nor store into a slot that is stored again before it is read.
@buf = global [3072 x i8] zeroinitializer, align 64

define void @foo() {
entry:
  ret void
}

declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)

define void @merge(i16 %r, i16 %n, i1 %cond) {
entry:
  %c = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 %n, ptr getelementptr inbounds ([3072 x i8], ptr @buf, i64 0, i64 2048), i64 64)
  br i1 %cond, label %t, label %f

t:
  %a1 = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 8, ptr @buf, i64 64)
  %b1 = call x86_amx @llvm.x86.tileloadd64.internal(i16 2, i16 %n, ptr getelementptr inbounds ([3072 x i8], ptr @buf, i64 0, i64 1024), i64 64)
  %d1 = call x86_amx @llvm.x86.tdpbssd.internal(i16 %r, i16 %n, i16 8, x86_amx %c, x86_amx %a1, x86_amx %b1)
  call void @foo()
  br label %exit

f:
  %a2 = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 8, ptr @buf, i64 64)
  %b2 = call x86_amx @llvm.x86.tileloadd64.internal(i16 2, i16 %n, ptr getelementptr inbounds ([3072 x i8], ptr @buf, i64 0, i64 1024), i64 64)
  %d2 = call x86_amx @llvm.x86.tdpbssd.internal(i16 %r, i16 %n, i16 8, x86_amx %c, x86_amx %a2, x86_amx %b2)
  call void @foo()
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 %n, ptr getelementptr inbounds ([3072 x i8], ptr @buf, i64 0, i64 2048), i64 64, x86_amx %d2)
  br label %exit

exit:
  %d = phi x86_amx [ %d1, %t ], [ %d2, %f ]
  %a = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 8, ptr @buf, i64 64)
  %res = call x86_amx @llvm.x86.tdpbssd.internal(i16 %r, i16 %n, i16 8, x86_amx %c, x86_amx %d, x86_amx %a)
  call void @llvm.x86.tilestored64.internal(i16 %r, i16 %n, ptr getelementptr inbounds ([3072 x i8], ptr @buf, i64 0, i64 2048), i64 64, x86_amx %res)
  ret void
}
