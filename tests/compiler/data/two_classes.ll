; Two shape classes under pressure (tests/compiler/test_passes_regalloc.py): six 4x16 tiles used once each and
; five 8x32 tiles used by a chain of TMULs. Splitting the 8 tiles by the pressure gap alone gives the 4x16
; class 5 and spills two of the much-used 8x32 tiles; regalloc.best_split tries the splits and spills less.
@buf = global [16384 x i8] zeroinitializer, align 64

declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)

define void @two_classes() {
entry:
  %a1 = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 256), i64 64)
  %a2 = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 512), i64 64)
  %a3 = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 768), i64 64)
  %a4 = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 1024), i64 64)
  %a5 = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 1280), i64 64)
  %a6 = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 1536), i64 64)
  %b1 = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 2560), i64 64)
  %b2 = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 3072), i64 64)
  %b3 = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 3584), i64 64)
  %b4 = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 4096), i64 64)
  %b5 = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 32, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 4608), i64 64)
  %d1 = call x86_amx @llvm.x86.tdpbssd.internal(i16 4, i16 16, i16 16, x86_amx %a1, x86_amx %a2, x86_amx %a3)
  %d2 = call x86_amx @llvm.x86.tdpbssd.internal(i16 4, i16 16, i16 16, x86_amx %a4, x86_amx %a5, x86_amx %a6)
  call void @llvm.x86.tilestored64.internal(i16 4, i16 16, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 8192), i64 64, x86_amx %d1)
  call void @llvm.x86.tilestored64.internal(i16 4, i16 16, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 9216), i64 64, x86_amx %d2)
  %e1 = call x86_amx @llvm.x86.tdpbssd.internal(i16 8, i16 32, i16 32, x86_amx %b1, x86_amx %b2, x86_amx %b3)
  %e2 = call x86_amx @llvm.x86.tdpbssd.internal(i16 8, i16 32, i16 32, x86_amx %e1, x86_amx %b4, x86_amx %b5)
  %e3 = call x86_amx @llvm.x86.tdpbssd.internal(i16 8, i16 32, i16 32, x86_amx %e2, x86_amx %b2, x86_amx %b3)
  %e4 = call x86_amx @llvm.x86.tdpbssd.internal(i16 8, i16 32, i16 32, x86_amx %e3, x86_amx %b4, x86_amx %b5)
  %e5 = call x86_amx @llvm.x86.tdpbssd.internal(i16 8, i16 32, i16 32, x86_amx %e4, x86_amx %b2, x86_amx %b3)
  %e6 = call x86_amx @llvm.x86.tdpbssd.internal(i16 8, i16 32, i16 32, x86_amx %e5, x86_amx %b4, x86_amx %b5)
  call void @llvm.x86.tilestored64.internal(i16 8, i16 32, ptr getelementptr inbounds ([16384 x i8], ptr @buf, i64 0, i64 10240), i64 64, x86_amx %e6)
  ret void
}
