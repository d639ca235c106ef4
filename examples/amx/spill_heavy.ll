; Spill-heavy tile program (traced from Python with systolic.amx.intrinsics, then printed): 12 tiles of
; 16 rows x 64 bytes are live across a loop, more than the 8 physical tiles, so the register allocator
; spills with TILESTORED and reloads with a same-shape TILELOADD at stride 64 (seed section 8).
; Run: systolic amx run examples/amx/spill_heavy.ll --function spill_heavy --arg 3

@A = global [4096 x i8] zeroinitializer, align 64
@B = global [4096 x i8] zeroinitializer, align 64
@C = global [4096 x i8] zeroinitializer, align 64

define void @spill_heavy(i32 %n) {
entry:
  %v1 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr @C, i64 64)
  %v2 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr @A, i64 256)
  %v3 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr @B, i64 64)
  %v4 = getelementptr inbounds i8, ptr @C, i64 1024
  %v5 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %v4, i64 64)
  %v6 = getelementptr inbounds i8, ptr @A, i64 64
  %v7 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %v6, i64 256)
  %v8 = getelementptr inbounds i8, ptr @B, i64 1024
  %v9 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %v8, i64 64)
  %v10 = getelementptr inbounds i8, ptr @C, i64 2048
  %v11 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %v10, i64 64)
  %v12 = getelementptr inbounds i8, ptr @A, i64 128
  %v13 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %v12, i64 256)
  %v14 = getelementptr inbounds i8, ptr @B, i64 2048
  %v15 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %v14, i64 64)
  %v16 = getelementptr inbounds i8, ptr @C, i64 3072
  %v17 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %v16, i64 64)
  %v18 = getelementptr inbounds i8, ptr @A, i64 192
  %v19 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %v18, i64 256)
  %v20 = getelementptr inbounds i8, ptr @B, i64 3072
  %v21 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %v20, i64 64)
  br label %loop.header22

loop.header22:  ; preds = %entry, %loop.body23
  %i25 = phi i32 [ 0, %entry ], [ %v51, %loop.body23 ]
  %v26 = phi x86_amx [ %v1, %entry ], [ %v44, %loop.body23 ]
  %v27 = phi x86_amx [ %v5, %entry ], [ %v46, %loop.body23 ]
  %v28 = phi x86_amx [ %v11, %entry ], [ %v43, %loop.body23 ]
  %v29 = phi x86_amx [ %v17, %entry ], [ %v45, %loop.body23 ]
  %v30 = phi x86_amx [ %v2, %entry ], [ %v50, %loop.body23 ]
  %v38 = icmp slt i32 %i25, %n
  br i1 %v38, label %loop.body23, label %loop.exit24

loop.body23:  ; preds = %loop.header22
  %v39 = call x86_amx @llvm.x86.tdpbssd.internal(i16 16, i16 64, i16 64, x86_amx %v26, x86_amx %v30, x86_amx %v9)
  %v40 = call x86_amx @llvm.x86.tdpbusd.internal(i16 16, i16 64, i16 64, x86_amx %v28, x86_amx %v19, x86_amx %v3)
  %v41 = call x86_amx @llvm.x86.tdpbssd.internal(i16 16, i16 64, i16 64, x86_amx %v27, x86_amx %v7, x86_amx %v15)
  %v42 = call x86_amx @llvm.x86.tdpbusd.internal(i16 16, i16 64, i16 64, x86_amx %v29, x86_amx %v30, x86_amx %v9)
  %v43 = call x86_amx @llvm.x86.tdpbssd.internal(i16 16, i16 64, i16 64, x86_amx %v40, x86_amx %v13, x86_amx %v21)
  %v44 = call x86_amx @llvm.x86.tdpbusd.internal(i16 16, i16 64, i16 64, x86_amx %v39, x86_amx %v7, x86_amx %v15)
  %v45 = call x86_amx @llvm.x86.tdpbssd.internal(i16 16, i16 64, i16 64, x86_amx %v42, x86_amx %v19, x86_amx %v3)
  %v46 = call x86_amx @llvm.x86.tdpbusd.internal(i16 16, i16 64, i16 64, x86_amx %v41, x86_amx %v13, x86_amx %v21)
  %v47 = mul i32 %i25, 64
  %v48 = sext i32 %v47 to i64
  %v49 = getelementptr inbounds i8, ptr @A, i64 %v48
  %v50 = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %v49, i64 256)
  %v51 = add nsw i32 %i25, 1
  br label %loop.header22

loop.exit24:  ; preds = %loop.header22
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, ptr @C, i64 64, x86_amx %v26)
  %v52 = getelementptr inbounds i8, ptr @C, i64 1024
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, ptr %v52, i64 64, x86_amx %v27)
  %v53 = getelementptr inbounds i8, ptr @C, i64 2048
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, ptr %v53, i64 64, x86_amx %v28)
  %v54 = getelementptr inbounds i8, ptr @C, i64 3072
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, ptr %v54, i64 64, x86_amx %v29)
  ret void
}

declare x86_amx @llvm.x86.tileloadd64.internal(i16 %0, i16 %1, ptr %2, i64 %3)

declare x86_amx @llvm.x86.tdpbssd.internal(i16 %0, i16 %1, i16 %2, x86_amx %3, x86_amx %4, x86_amx %5)

declare x86_amx @llvm.x86.tdpbusd.internal(i16 %0, i16 %1, i16 %2, x86_amx %3, x86_amx %4, x86_amx %5)

declare void @llvm.x86.tilestored64.internal(i16 %0, i16 %1, ptr %2, i64 %3, x86_amx %4)
