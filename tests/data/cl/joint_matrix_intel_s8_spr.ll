; A joint_matrix int8 GEMM in the form DPC++ emits for the SPV_INTEL_joint_matrix path on an AMX CPU (written
; here in that form): target("spirv.JointMatrixINTEL", T, rows, cols, layout, scope, use) values, a byval
; accessor-offset struct argument, work-item ids from @__spirv_BuiltIn* loads, the accumulator kept in an alloca
; between iterations. Each sub-group of 16 computes a 12 x 12 tile of C = A x B with K steps of 48 (AMX tiles).
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64"
target triple = "spir64-unknown-unknown"

%"class.id" = type { %"class.array" }
%"class.array" = type { [2 x i64] }

@__spirv_BuiltInGlobalInvocationId = external local_unnamed_addr addrspace(1) constant <3 x i64>, align 32
@__spirv_BuiltInLocalInvocationId = external local_unnamed_addr addrspace(1) constant <3 x i64>, align 32

define spir_kernel void @mm_amx(ptr addrspace(1) %A, ptr addrspace(1) %B, ptr byval(%"class.id") align 8 %off, ptr addrspace(1) %C, i64 %N, i64 %K) {
entry:
  %acc.slot = alloca target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2), align 8
  %o0p = getelementptr inbounds %"class.id", ptr %off, i64 0, i32 0, i32 0, i64 0
  %o0 = load i64, ptr %o0p, align 8
  %gid = load <3 x i64>, ptr addrspace(1) @__spirv_BuiltInGlobalInvocationId, align 32
  %lid = load <3 x i64>, ptr addrspace(1) @__spirv_BuiltInLocalInvocationId, align 32
  %g1 = extractelement <3 x i64> %gid, i64 1
  %l1 = extractelement <3 x i64> %lid, i64 1
  %g0 = extractelement <3 x i64> %gid, i64 0
  %l0 = extractelement <3 x i64> %lid, i64 0
  %tile.m = sub i64 %g1, %l1
  %sgcol = sub i64 %g0, %l0
  %tile.n = lshr i64 %sgcol, 4
  %zero = call spir_func target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2) @_Z26__spirv_CompositeConstructi(i32 0)
  store target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2) %zero, ptr %acc.slot, align 8
  %row = mul i64 %tile.m, 12
  %arow = mul i64 %row, %K
  %Abase = getelementptr inbounds i8, ptr addrspace(1) %A, i64 %o0
  %bstride = mul i64 %N, 4
  %bcol = mul i64 %tile.n, 48
  %steps = udiv i64 %K, 48
  br label %cond

cond:
  %s = phi i64 [ 0, %entry ], [ %s.next, %body ]
  %more = icmp ult i64 %s, %steps
  br i1 %more, label %body, label %exit

body:
  %k = mul i64 %s, 48
  %aoff = add i64 %arow, %k
  %pa = getelementptr inbounds i8, ptr addrspace(1) %Abase, i64 %aoff
  %pa4 = addrspacecast ptr addrspace(1) %pa to ptr addrspace(4)
  %a = call spir_func target("spirv.JointMatrixINTEL", i8, 12, 48, 0, 3, 0) @_Z28__spirv_JointMatrixLoadINTEL_A(ptr addrspace(4) %pa4, i64 %K, i32 0, i32 3, i32 0)
  %krow = mul i64 %s, 12
  %boff0 = mul i64 %krow, %bstride
  %boff = add i64 %boff0, %bcol
  %pb = getelementptr inbounds i8, ptr addrspace(1) %B, i64 %boff
  %pb4 = addrspacecast ptr addrspace(1) %pb to ptr addrspace(4)
  %b = call spir_func target("spirv.JointMatrixINTEL", i8, 48, 12, 2, 3, 1) @_Z28__spirv_JointMatrixLoadINTEL_B(ptr addrspace(4) %pb4, i64 %bstride, i32 2, i32 3, i32 0)
  %acc = load target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2), ptr %acc.slot, align 8
  %d = call spir_func target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2) @_Z27__spirv_JointMatrixMadINTEL(target("spirv.JointMatrixINTEL", i8, 12, 48, 0, 3, 0) %a, target("spirv.JointMatrixINTEL", i8, 48, 12, 2, 3, 1) %b, target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2) %acc, i32 3)
  store target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2) %d, ptr %acc.slot, align 8
  %s.next = add i64 %s, 1
  br label %cond

exit:
  %crow = mul i64 %row, %N
  %ccol = mul i64 %tile.n, 12
  %coff = add i64 %crow, %ccol
  %pc = getelementptr inbounds i32, ptr addrspace(1) %C, i64 %coff
  %pc4 = addrspacecast ptr addrspace(1) %pc to ptr addrspace(4)
  %res = load target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2), ptr %acc.slot, align 8
  call spir_func void @_Z29__spirv_JointMatrixStoreINTEL(ptr addrspace(4) %pc4, target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2) %res, i64 %N, i32 0, i32 3, i32 0)
  ret void
}

declare spir_func target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2) @_Z26__spirv_CompositeConstructi(i32)
declare spir_func target("spirv.JointMatrixINTEL", i8, 12, 48, 0, 3, 0) @_Z28__spirv_JointMatrixLoadINTEL_A(ptr addrspace(4), i64, i32, i32, i32)
declare spir_func target("spirv.JointMatrixINTEL", i8, 48, 12, 2, 3, 1) @_Z28__spirv_JointMatrixLoadINTEL_B(ptr addrspace(4), i64, i32, i32, i32)
declare spir_func target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2) @_Z27__spirv_JointMatrixMadINTEL(target("spirv.JointMatrixINTEL", i8, 12, 48, 0, 3, 0), target("spirv.JointMatrixINTEL", i8, 48, 12, 2, 3, 1), target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2), i32)
declare spir_func void @_Z29__spirv_JointMatrixStoreINTEL(ptr addrspace(4), target("spirv.JointMatrixINTEL", i32, 12, 12, 3, 3, 2), i64, i32, i32, i32)
