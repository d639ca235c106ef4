; Per-function refusal by a pass (tests/compiler/test_passes_pipeline.py): @by_value takes a tile as a
; <256 x i32> argument, @to_vector returns a tile value as a vector; systolic models neither, so shape
; analysis refuses those two functions and @fine still compiles and runs.
@buf = global [2048 x i8] zeroinitializer, align 64

declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)

define void @by_value(<256 x i32> %v) {
entry:
  %t = bitcast <256 x i32> %v to x86_amx
  call void @llvm.x86.tilestored64.internal(i16 4, i16 16, ptr @buf, i64 64, x86_amx %t)
  ret void
}

define <256 x i32> @to_vector() {
entry:
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr @buf, i64 64)
  %v = bitcast x86_amx %t to <256 x i32>
  ret <256 x i32> %v
}

define void @fine() {
entry:
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 4, i16 16, ptr @buf, i64 64)
  call void @llvm.x86.tilestored64.internal(i16 4, i16 16, ptr getelementptr inbounds ([2048 x i8], ptr @buf, i64 0, i64 1024), i64 64, x86_amx %t)
  ret void
}
