; An int8 GEMM in the shape an optimising front end produces (written for systolic, modelled on what clang -O2
; emits for amxintrin.h code): pointer parameters, i64 address arithmetic, constant 16 x 64-byte tiles, a
; tile accumulator carried through loop phis, the K loop unrolled by two with an epilogue, and an `undef`
; tile flowing into a phi on the path that skips the unrolled loop (it becomes a tilezero).
;
;   C[M x N] (int32, row stride 4N bytes) += A[M x K] (s8, row stride K) . B (s8, VNNI: K/4 rows of 4N bytes)
;   for M, N multiples of 16 and K a multiple of 64.
; Run: systolic amx run examples/amx/gemm_o2.ll -f gemm --arg @A --arg @B --arg @C --arg 32 --arg 32 --arg 192

@A = global [16384 x i8] zeroinitializer, align 64
@B = global [16384 x i8] zeroinitializer, align 64
@C = global [16384 x i8] zeroinitializer, align 64

define void @gemm(ptr %A, ptr %B, ptr %C, i32 %M, i32 %N, i32 %K) local_unnamed_addr {
entry:
  %mt = sdiv i32 %M, 16
  %nt = sdiv i32 %N, 16
  %kt = sdiv i32 %K, 64
  %kstride = sext i32 %K to i64
  %n4 = shl nsw i32 %N, 2
  %nstride = sext i32 %n4 to i64
  %kpairs = lshr i32 %kt, 1
  %kodd = and i32 %kt, 1
  %has.m = icmp sgt i32 %mt, 0
  br i1 %has.m, label %i.loop, label %done

i.loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %j.done ]
  %i64 = sext i32 %i to i64
  %arow = mul nsw i64 %i64, 16
  %aoff = mul nsw i64 %arow, %kstride
  %a.base = getelementptr inbounds i8, ptr %A, i64 %aoff
  %coff = mul nsw i64 %arow, %nstride
  %c.base = getelementptr inbounds i8, ptr %C, i64 %coff
  br label %j.loop

j.loop:
  %j = phi i32 [ 0, %i.loop ], [ %j.next, %j.store ]
  %j64 = sext i32 %j to i64
  %jbytes = shl nsw i64 %j64, 6
  %c.ptr = getelementptr inbounds i8, ptr %c.base, i64 %jbytes
  %c.init = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %c.ptr, i64 %nstride)
  %b.col = getelementptr inbounds i8, ptr %B, i64 %jbytes
  %has.pairs = icmp sgt i32 %kpairs, 0
  br i1 %has.pairs, label %l.loop, label %l.tail.check

l.loop:
  %l = phi i32 [ 0, %j.loop ], [ %l.next, %l.loop ]
  %acc = phi x86_amx [ %c.init, %j.loop ], [ %acc2, %l.loop ]
  %l64 = sext i32 %l to i64
  %k0 = shl nsw i64 %l64, 7
  %pa0 = getelementptr inbounds i8, ptr %a.base, i64 %k0
  %ta0 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %pa0, i64 %kstride)
  %brow0 = lshr i64 %k0, 2
  %boff0 = mul nsw i64 %brow0, %nstride
  %pb0 = getelementptr inbounds i8, ptr %b.col, i64 %boff0
  %tb0 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %pb0, i64 %nstride)
  %acc1 = tail call x86_amx @llvm.x86.tdpbssd.internal(i16 16, i16 64, i16 64, x86_amx %acc, x86_amx %ta0, x86_amx %tb0)
  %k1 = or i64 %k0, 64
  %pa1 = getelementptr inbounds i8, ptr %a.base, i64 %k1
  %ta1 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr nonnull %pa1, i64 %kstride)
  %brow1 = lshr i64 %k1, 2
  %boff1 = mul nsw i64 %brow1, %nstride
  %pb1 = getelementptr inbounds i8, ptr %b.col, i64 %boff1
  %tb1 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr nonnull %pb1, i64 %nstride)
  %acc2 = tail call x86_amx @llvm.x86.tdpbssd.internal(i16 16, i16 64, i16 64, x86_amx %acc1, x86_amx %ta1, x86_amx %tb1)
  %l.next = add nuw nsw i32 %l, 1
  %l.more = icmp slt i32 %l.next, %kpairs
  br i1 %l.more, label %l.loop, label %l.tail.check

l.tail.check:
  %acc.pairs = phi x86_amx [ %c.init, %j.loop ], [ %acc2, %l.loop ]
  %ktail = phi i32 [ 0, %j.loop ], [ %l.next, %l.loop ]
  %no.tail = icmp eq i32 %kodd, 0
  br i1 %no.tail, label %j.store, label %l.tail

l.tail:
  %kt64 = sext i32 %ktail to i64
  %kk = shl nsw i64 %kt64, 7
  %pat = getelementptr inbounds i8, ptr %a.base, i64 %kk
  %tat = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %pat, i64 %kstride)
  %browt = lshr i64 %kk, 2
  %bofft = mul nsw i64 %browt, %nstride
  %pbt = getelementptr inbounds i8, ptr %b.col, i64 %bofft
  %tbt = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %pbt, i64 %nstride)
  %acct = tail call x86_amx @llvm.x86.tdpbssd.internal(i16 16, i16 64, i16 64, x86_amx %acc.pairs, x86_amx %tat, x86_amx %tbt)
  br label %j.store

j.store:
  %acc.final = phi x86_amx [ %acc.pairs, %l.tail.check ], [ %acct, %l.tail ]
  tail call void @llvm.x86.tilestored64.internal(i16 16, i16 64, ptr %c.ptr, i64 %nstride, x86_amx %acc.final)
  %j.next = add nuw nsw i32 %j, 1
  %j.more = icmp slt i32 %j.next, %nt
  br i1 %j.more, label %j.loop, label %j.done

j.done:
  %i.next = add nuw nsw i32 %i, 1
  %i.more = icmp slt i32 %i.next, %mt
  br i1 %i.more, label %i.loop, label %done

done:
  ret void
}

declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
