; A tilezero tile live across a call (tests/compiler/test_passes_regalloc.py): tile registers are caller-saved,
; so it cannot stay in its register; it is made again after the call instead of being stored and reloaded
; (LLVM's amx-lower-tile-copy.ll test2: a second tilezero after the call, no spill).
@buf = global [2048 x i8] zeroinitializer, align 64

define void @g() {
entry:
  ret void
}

declare x86_amx @llvm.x86.tilezero.internal(i16, i16)
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)

define void @zero_across_call(i32 %n) {
entry:
  %z = call x86_amx @llvm.x86.tilezero.internal(i16 8, i16 32)
  br label %head

head:
  %i = phi i32 [ 0, %entry ], [ %i1, %head ]
  call void @g()
  %a = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr @buf, i64 64)
  %b = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr @buf, i64 64)
  %d = call x86_amx @llvm.x86.tdpbssd.internal(i16 8, i16 32, i16 32, x86_amx %z, x86_amx %a, x86_amx %b)
  call void @llvm.x86.tilestored64.internal(i16 8, i16 32, ptr getelementptr inbounds ([2048 x i8], ptr @buf, i64 0, i64 1024), i64 64, x86_amx %d)
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, %n
  br i1 %c, label %head, label %exit

exit:
  ret void
}
