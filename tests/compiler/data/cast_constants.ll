; Constant vectors cast to tiles (tests/compiler/test_passes_shapes.py): a zeroinitializer or undef
; <256 x i32> cast with @llvm.x86.cast.vector.to.tile is a tilezero of the shape its use gives it (the pattern
; of LLVM's amx-tile-basic.ll PR90954 and pr209512.ll). The runner reads undef vectors as zeros.
@buf = global [2048 x i8] zeroinitializer, align 64

declare x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32>)
declare <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx)
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbssd.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)

define void @zero_acc(i1 %c) {
entry:
  %a = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr @buf, i64 64)
  %b = call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr getelementptr inbounds ([2048 x i8], ptr @buf, i64 0, i64 1024), i64 64)
  br i1 %c, label %mul, label %join

mul:
  %z = call x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32> zeroinitializer)
  %d = call x86_amx @llvm.x86.tdpbssd.internal(i16 16, i16 64, i16 64, x86_amx %z, x86_amx %a, x86_amx %b)
  %dv = call <256 x i32> @llvm.x86.cast.tile.to.vector.v256i32(x86_amx %d)
  br label %join

join:
  %v = phi <256 x i32> [ undef, %entry ], [ %dv, %mul ]
  %t = call x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32> %v)
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, ptr @buf, i64 64, x86_amx %t)
  ret void
}

; one zero tile as C, A and B (pr209512.ll's pattern): the TMUL needs three distinct registers, so the tile is
; copied twice; copies of a tile only tilezero defines are tilezeros, not a round trip through memory
define void @zero_all() {
entry:
  %z = call x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32> zeroinitializer)
  %d = call x86_amx @llvm.x86.tdpbssd.internal(i16 16, i16 64, i16 64, x86_amx %z, x86_amx %z, x86_amx %z)
  call void @llvm.x86.tilestored64.internal(i16 16, i16 64, ptr @buf, i64 64, x86_amx %d)
  ret void
}
