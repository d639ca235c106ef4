; A tile read as a <256 x i32> vector before its shape is known (tests/compiler/test_passes_shapes.py; the
; pattern of LLVM's amx-combine.ll test_tile_dpbssd, "the shape is loaded after tile"). The vector load keeps
; its place (it reads the bytes there), the tile is loaded from a copy of them where the shape is defined; the
; source is overwritten in between, which must not change the result.
@a = global [1024 x i8] zeroinitializer, align 64
@shape = global [4 x i8] zeroinitializer, align 64
@out = global [2048 x i8] zeroinitializer, align 64

declare x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32>)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)

define void @late_shape(ptr %out) {
entry:
  %v = load <256 x i32>, ptr @a, align 64
  store <256 x i32> zeroinitializer, ptr @a, align 64
  %rows = load i16, ptr @shape, align 2
  %cp = getelementptr inbounds i8, ptr @shape, i64 2
  %cols = load i16, ptr %cp, align 2
  %t = call x86_amx @llvm.x86.cast.vector.to.tile.v256i32(<256 x i32> %v)
  call void @llvm.x86.tilestored64.internal(i16 %rows, i16 %cols, ptr %out, i64 64, x86_amx %t)
  ret void
}
