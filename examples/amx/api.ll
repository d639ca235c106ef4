; The seed proposal's example (specs/amx-llvm-programming-model.md, section 5 "LLVM IR", listing lines 12-38),
; exactly as written there: <256 x i32> tile values, @llvm.x86.tileloadd64 / @llvm.x86.tdpbssd /
; @llvm.x86.tilestored64 with shape operands, typed pointers and getelementptr constant expressions.
; The listing uses @buf and @buf2 without showing them; they are declared here as in the C code
; (1024-byte buffers). Attribute groups #2/#3 are referenced but not defined, as in the listing.
;
; C source (seed section 4):  void api(int cond, short row, short col)  -- three tiles {row, col} loaded from
; buf (cond != 0) or buf2 (cond == 0) with stride 32, then c += a * b (tdpbssd) and c stored to buf.

@buf = dso_local global [1024 x i8] zeroinitializer, align 64
@buf2 = dso_local global [1024 x i8] zeroinitializer, align 64

define dso_local void @api(i32 %cond, i16 signext %row, i16 signext %col) local_unnamed_addr #2 {
entry:
  %tobool = icmp eq i32 %cond, 0
  %sext = shl i16 %col, 8
  %conv.i31 = ashr exact i16 %sext, 8
  br i1 %tobool, label %if.else, label %if.then

if.then: ; preds = %entry
  %0 = tail call <256 x i32> @llvm.x86.tileloadd64(i16 %row, i16 %conv.i31, i8* getelementptr inbounds ([1024 x i8], [1024 x i8]* @buf, i64 0, i64 0), i64 32) #3
  %1 = tail call <256 x i32> @llvm.x86.tileloadd64(i16 %row, i16 %conv.i31, i8* getelementptr inbounds ([1024 x i8], [1024 x i8]* @buf, i64 0, i64 0), i64 32) #3
  %2 = tail call <256 x i32> @llvm.x86.tileloadd64(i16 %row, i16 %conv.i31, i8* getelementptr inbounds ([1024 x i8], [1024 x i8]* @buf, i64 0, i64 0), i64 32) #3
  br label %if.end

if.else: ; preds = %entry
  %3 = tail call <256 x i32> @llvm.x86.tileloadd64(i16 %row, i16 %conv.i31, i8* getelementptr inbounds ([1024 x i8], [1024 x i8]* @buf2, i64 0, i64 0), i64 32) #3
  %4 = tail call <256 x i32> @llvm.x86.tileloadd64(i16 %row, i16 %conv.i31, i8* getelementptr inbounds ([1024 x i8], [1024 x i8]* @buf2, i64 0, i64 0), i64 32) #3
  %5 = tail call <256 x i32> @llvm.x86.tileloadd64(i16 %row, i16 %conv.i31, i8* getelementptr inbounds ([1024 x i8], [1024 x i8]* @buf2, i64 0, i64 0), i64 32) #3
  br label %if.end

if.end: ; preds = %if.else, %if.then
  %a.sroa.1186.0 = phi <256 x i32> [ %3, %if.else ], [ %0, %if.then ]
  %b.sroa.1068.0 = phi <256 x i32> [ %4, %if.else ], [ %1, %if.then ]
  %c.sroa.1149.0 = phi <256 x i32> [ %5, %if.else ], [ %2, %if.then ]
  %6 = tail call <256 x i32> @llvm.x86.tdpbssd(i16 %row, i16 %conv.i31, i16 %conv.i31, <256 x i32> %c.sroa.1149.0, <256 x i32> %a.sroa.1186.0, <256 x i32> %b.sroa.1068.0) #3
  tail call void @llvm.x86.tilestored64(i16 %row, i16 %conv.i31, i8* getelementptr inbounds ([1024 x i8], [1024 x i8]* @buf, i64 0, i64 0), i64 32, <256 x i32> %6) #3
  ret void
}
