; A TMUL accumulator whose shape operands are other SSA values than the TMUL's (m, n) (tests/compiler/
; test_passes_shapes.py). The TMUL writes C's register in place, so the result keeps the shape C was defined
; with, as LLVM configures it (amx-greedy-ra-spill-shape.ll): no tile copy. @acc: C loaded as (%r, 16), the TMUL
; says (4, %n). @loop: a fresh tilezero accumulator each iteration, shaped (4, %c), the TMUL's n is %c + 0 (the
; CHECK lines of LLVM's test show PTILEZEROV and PTDPBSSDV sharing one register, no COPY).
@a = global [1024 x i8] zeroinitializer, align 64
@b = global [1024 x i8] zeroinitializer, align 64
@c = global [4096 x i8] zeroinitializer, align 64

declare x86_amx @llvm.x86.tilezero.internal(i16, i16)
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)

define void @acc(i16 %r, i16 %n) {
entry:
  %C = call x86_amx @llvm.x86.tileloadd64.internal(i16 %r, i16 16, ptr @c, i64 64)
  %A = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr @a, i64 64)
  %B = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr @b, i64 64)
  %D = call x86_amx @llvm.x86.tdpbssd.internal(i16 4, i16 %n, i16 16, x86_amx %C, x86_amx %A, x86_amx %B)
  call void @llvm.x86.tilestored64.internal(i16 4, i16 %n, ptr @c, i64 64, x86_amx %D)
  ret void
}

define void @loop(i32 %iters, i16 %c) {
entry:
  %n = add i16 %c, 0
  br label %body

body:
  %i = phi i32 [ 0, %entry ], [ %i1, %body ]
  %Z = call x86_amx @llvm.x86.tilezero.internal(i16 4, i16 %c)
  %A = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr @a, i64 64)
  %B = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 %n, ptr @b, i64 64)
  %D = call x86_amx @llvm.x86.tdpbssd.internal(i16 4, i16 %n, i16 16, x86_amx %Z, x86_amx %A, x86_amx %B)
  %off = mul i32 %i, 1024
  %o = sext i32 %off to i64
  %p = getelementptr inbounds i8, ptr @c, i64 %o
  call void @llvm.x86.tilestored64.internal(i16 4, i16 %c, ptr %p, i64 64, x86_amx %D)
  %i1 = add i32 %i, 1
  %more = icmp slt i32 %i1, %iters
  br i1 %more, label %body, label %exit

exit:
  ret void
}
