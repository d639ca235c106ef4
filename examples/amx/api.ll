; The AMX programming-model proposal's example (llvm-dev, August 2020; section 5 "LLVM IR", lines 12-38) in
; the form LLVM 22 accepts. The proposal's listing is not valid LLVM IR any more: LLVM reserved the names
; @llvm.x86.tileloadd64 / @llvm.x86.tdpbssd / @llvm.x86.tilestored64 for the physical-register forms
; (i8 tile numbers) and realised the proposal's shaped forms as the *.internal intrinsics on x86_amx values,
; and typed pointers (i8*) are gone. So each listed instruction is kept, in order and with its name, and
; written the way clang 22 writes the same C code (examples/amx/api.c):
;   %k = tail call <256 x i32> @llvm.x86.tileloadd64(...)   ->  %k.t = ... x86_amx @llvm.x86.tileloadd64.internal(...)
;                                                                %k = <256 x i32> cast.tile.to.vector(%k.t)
;   i8* getelementptr inbounds ([1024 x i8], [1024 x i8]* @buf, ...)  ->  ptr getelementptr inbounds (..., ptr @buf, ...)
; The phis of <256 x i32> values stay as in the listing; tdpbssd and tilestored take them cast back to x86_amx.
; @buf and @buf2 (not shown in the listing) are 1024-byte buffers as in the C code.
;
; C source (seed section 4):  void api(int cond, short row, short col)  -- three tiles {row, col} loaded from
; buf (cond != 0) or buf2 (cond == 0) with stride 32, then c += a * b (tdpbssd) and c stored to buf.

@buf = dso_local global [1024 x i8] zeroinitializer, align 64
@buf2 = dso_local global [1024 x i8] zeroinitializer, align 64

define dso_local void @api(i32 %cond, i16 signext %row, i16 signext %col) local_unnamed_addr {
entry:
  %tobool = icmp eq i32 %cond, 0
  %sext = shl i16 %col, 8
  %conv.i31 = ashr exact i16 %sext, 8
  br i1 %tobool, label %if.else, label %if.then

if.then: ; preds = %entry
  %t0 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 %row, i16 %conv.i31, ptr getelementptr inbounds ([1024 x i8], ptr @buf, i64 0, i64 0), i64 32)
  %0 = tail call <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx %t0)
  %t1 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 %row, i16 %conv.i31, ptr getelementptr inbounds ([1024 x i8], ptr @buf, i64 0, i64 0), i64 32)
  %1 = tail call <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx %t1)
  %t2 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 %row, i16 %conv.i31, ptr getelementptr inbounds ([1024 x i8], ptr @buf, i64 0, i64 0), i64 32)
  %2 = tail call <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx %t2)
  br label %if.end

if.else: ; preds = %entry
  %t3 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 %row, i16 %conv.i31, ptr getelementptr inbounds ([1024 x i8], ptr @buf2, i64 0, i64 0), i64 32)
  %3 = tail call <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx %t3)
  %t4 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 %row, i16 %conv.i31, ptr getelementptr inbounds ([1024 x i8], ptr @buf2, i64 0, i64 0), i64 32)
  %4 = tail call <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx %t4)
  %t5 = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 %row, i16 %conv.i31, ptr getelementptr inbounds ([1024 x i8], ptr @buf2, i64 0, i64 0), i64 32)
  %5 = tail call <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx %t5)
  br label %if.end

if.end: ; preds = %if.else, %if.then
  %a.sroa.1186.0 = phi <256 x i32> [ %3, %if.else ], [ %0, %if.then ]
  %b.sroa.1068.0 = phi <256 x i32> [ %4, %if.else ], [ %1, %if.then ]
  %c.sroa.1149.0 = phi <256 x i32> [ %5, %if.else ], [ %2, %if.then ]
  %c.t = tail call x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32> %c.sroa.1149.0)
  %a.t = tail call x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32> %a.sroa.1186.0)
  %b.t = tail call x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32> %b.sroa.1068.0)
  %t6 = tail call x86_amx @llvm.x86.tdpbssd.internal(i16 %row, i16 %conv.i31, i16 %conv.i31, x86_amx %c.t, x86_amx %a.t, x86_amx %b.t)
  %6 = tail call <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx %t6)
  %d.t = tail call x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32> %6)
  tail call void @llvm.x86.tilestored64.internal(i16 %row, i16 %conv.i31, ptr getelementptr inbounds ([1024 x i8], ptr @buf, i64 0, i64 0), i64 32, x86_amx %d.t)
  ret void
}

declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
declare <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx)
declare x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32>)
