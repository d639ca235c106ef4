; One 16 x 16 int32 tile of C += A x B over a K loop (written for systolic): A signed int8, B unsigned int8,
; so each step is TDPBSUD (src1 = A signed, src2 = B unsigned). The accumulator tile is carried through the loop
; phi; the tile compiler places the ldtilecfg, allocates the tiles and the emulated AMX runs it.
;
;   C[16 x 16] (int32, row stride 64 bytes) += A[16 x K] (s8, row stride K bytes) x B (u8, VNNI-packed: K/4 rows
;   of 64 bytes, byte 4n + j of row r holding B[4r + j][n]), K = 64 * %ktiles.
;
; The header below makes `systolic run examples/amx/tile_gemm_s8u8.ll` run it on random bytes and check C against
; exact integer arithmetic (docs/run.md, "IR and vISA headers").
; systolic-run: device sapphirerapids
; systolic-run: devices sapphirerapids emeraldrapids graniterapids graniterapids-d diamondrapids
; systolic-run: function gemm16
; systolic-run: args @A @B @C 4
; systolic-run: fill @A = random 1
; systolic-run: fill @B = random 2
; systolic-run: fill @C = random 3
; systolic-run: oracle @C = gemm-int8 A=@A:s8 B=@B:u8 M=16 N=16 K=256

@A = global [4096 x i8] zeroinitializer, align 64
@B = global [4096 x i8] zeroinitializer, align 64
@C = global [1024 x i8] zeroinitializer, align 64

define void @gemm16(ptr %A, ptr %B, ptr %C, i32 %ktiles) local_unnamed_addr {
entry:
  %k = shl nsw i32 %ktiles, 6
  %kstride = sext i32 %k to i64
  %c.init = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %C, i64 64)
  %any = icmp sgt i32 %ktiles, 0
  br i1 %any, label %loop, label %store

loop:
  %t = phi i32 [ 0, %entry ], [ %t.next, %loop ]
  %acc = phi x86_amx [ %c.init, %entry ], [ %acc.next, %loop ]
  %t64 = sext i32 %t to i64
  %aoff = shl nsw i64 %t64, 6
  %pa = getelementptr inbounds i8, ptr %A, i64 %aoff
  %ta = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %pa, i64 %kstride)
  %boff = shl nsw i64 %t64, 10
  %pb = getelementptr inbounds i8, ptr %B, i64 %boff
  %tb = tail call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64, ptr %pb, i64 64)
  %acc.next = tail call x86_amx @llvm.x86.tdpbsud.internal(i16 16, i16 64, i16 64, x86_amx %acc, x86_amx %ta, x86_amx %tb)
  %t.next = add nuw nsw i32 %t, 1
  %more = icmp slt i32 %t.next, %ktiles
  br i1 %more, label %loop, label %store

store:
  %acc.final = phi x86_amx [ %c.init, %entry ], [ %acc.next, %loop ]
  tail call void @llvm.x86.tilestored64.internal(i16 16, i16 64, ptr %C, i64 64, x86_amx %acc.final)
  ret void
}

declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare x86_amx @llvm.x86.tdpbsud.internal(i16, i16, i16, x86_amx, x86_amx, x86_amx)
declare void @llvm.x86.tilestored64.internal(i16, i16, ptr, i64, x86_amx)
