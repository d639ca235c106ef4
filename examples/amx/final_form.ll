; LLVM's final form of AMX code (llvm-project X86LowerAMXType.cpp): x86_amx values, the *.internal intrinsics with shape
; operands, opaque pointers, and the -O0 shapes of a front end: a <256 x i32> stack slot written through
; @llvm.x86.cast.tile.to.vector and read back with load + bitcast to x86_amx.
;
; C[m x n] (int32) += sum over i < steps of A[:, 64i .. 64i+k) (s8, row stride 256) . B_i (s8, VNNI, k/4 rows)
; With m=16, n=64, k=64 this is one 16x16 int32 tile of C accumulated over `steps` K-blocks.

@A = global [4096 x i8] zeroinitializer, align 64
@B = global [4096 x i8] zeroinitializer, align 64
@C = global [1024 x i8] zeroinitializer, align 64

define void @gemm(i16 %m, i16 %n, i16 %k, i32 %steps) {
entry:
  %c.slot = alloca <256 x i32>, align 64
  %bk = lshr i16 %k, 2
  %c0 = call x86_amx @llvm.x86.tileloadd64.internal(i16 %m, i16 %n, ptr @C, i64 64)
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi x86_amx [ %c0, %entry ], [ %d, %loop ]
  %aoff = mul nsw i32 %i, 64
  %aoff64 = sext i32 %aoff to i64
  %pa = getelementptr inbounds i8, ptr @A, i64 %aoff64
  %a = call x86_amx @llvm.x86.tileloadd64.internal(i16 %m, i16 %k, ptr %pa, i64 256)
  %boff = mul nsw i32 %i, 1024
  %boff64 = sext i32 %boff to i64
  %pb = getelementptr inbounds i8, ptr @B, i64 %boff64
  %b = call x86_amx @llvm.x86.tileloadd64.internal(i16 %bk, i16 %n, ptr %pb, i64 64)
  %d = call x86_amx @llvm.x86.tdpbssd.internal(i16 %m, i16 %n, i16 %k, x86_amx %acc, x86_amx %a, x86_amx %b)
  %i.next = add nuw nsw i32 %i, 1
  %done = icmp sge i32 %i.next, %steps
  br i1 %done, label %exit, label %loop

exit:
  %v = call <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx %d)
  store <256 x i32> %v, ptr %c.slot, align 64
  %w = load <256 x i32>, ptr %c.slot, align 64
  %t = bitcast <256 x i32> %w to x86_amx
  call void @llvm.x86.tilestored64.internal(i16 %m, i16 %n, ptr @C, i64 64, x86_amx %t)
  ret void
}

declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
declare <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx)
