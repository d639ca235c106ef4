; ldtilecfg placement around calls (tests/compiler/test_passes_config.py). The shapes are constants, so the one
; configuration point is at the entry; tile state is caller-saved, so the configuration is loaded again after
; each call that tile instructions follow. @first_call calls before any tile instruction (no load at the entry:
; the load after the call is the first one), @last_call calls after the last one (no load after it), @loop
; calls at the top of a loop whose body uses tiles.
@buf = global [2048 x i8] zeroinitializer, align 64

define void @g() {
entry:
  ret void
}

declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)

define void @first_call() {
entry:
  call void @g()
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr @buf, i64 64)
  call void @llvm.x86.tilestored64.internal(i16 8, i16 32, ptr getelementptr inbounds ([2048 x i8], ptr @buf, i64 0, i64 1024), i64 64, x86_amx %t)
  ret void
}

define void @last_call() {
entry:
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr @buf, i64 64)
  call void @llvm.x86.tilestored64.internal(i16 8, i16 32, ptr getelementptr inbounds ([2048 x i8], ptr @buf, i64 0, i64 1024), i64 64, x86_amx %t)
  call void @g()
  ret void
}

define void @loop(i32 %n) {
entry:
  br label %head

head:
  %i = phi i32 [ 0, %entry ], [ %i1, %body ]
  call void @g()
  %c = icmp slt i32 %i, %n
  br i1 %c, label %body, label %exit

body:
  %off = mul i32 %i, 64
  %o = sext i32 %off to i64
  %p = getelementptr inbounds i8, ptr @buf, i64 %o
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr %p, i64 64)
  call void @g()
  call void @llvm.x86.tilestored64.internal(i16 4, i16 16, ptr getelementptr inbounds ([2048 x i8], ptr @buf, i64 0, i64 1024), i64 64, x86_amx %t)
  call void @g()
  %i1 = add i32 %i, 1
  br label %head

exit:
  ret void
}
