; A joint_matrix int8 GEMM as DPC++ emits it for PVC (written here in that form: SPIR-V friendly calls on
; target("spirv.CooperativeMatrixKHR") values, work-group ids from @__spirv_BuiltInWorkgroupId): each sub-group
; (= work-group of 16) computes an 8 x 16 tile of C = A x B, A row-major int8, B packed (VNNI) int8, C int32.
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64"
target triple = "spir64-unknown-unknown"

@__spirv_BuiltInWorkgroupId = external local_unnamed_addr addrspace(1) constant <3 x i64>, align 32

define spir_kernel void @mm_s8(ptr addrspace(1) %A, ptr addrspace(1) %B, ptr addrspace(1) %C, i64 %N, i64 %K) !intel_reqd_sub_group_size !0 {
entry:
  %wg = load <3 x i64>, ptr addrspace(1) @__spirv_BuiltInWorkgroupId, align 32
  %gx = extractelement <3 x i64> %wg, i64 0
  %gy = extractelement <3 x i64> %wg, i64 1
  %row = mul i64 %gy, 8
  %col = mul i64 %gx, 16
  %zero = call spir_func target("spirv.CooperativeMatrixKHR", i32, 3, 8, 16, 2) @_Z26__spirv_CompositeConstructi(i32 0)
  %arow = mul i64 %row, %K
  %bstride = mul i64 %N, 4
  %bcol = mul i64 %col, 4
  br label %loop

loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %acc = phi target("spirv.CooperativeMatrixKHR", i32, 3, 8, 16, 2) [ %zero, %entry ], [ %d, %loop ]
  %aoff = add i64 %arow, %k
  %pa = getelementptr inbounds i8, ptr addrspace(1) %A, i64 %aoff
  %pa4 = addrspacecast ptr addrspace(1) %pa to ptr addrspace(4)
  %a = call spir_func target("spirv.CooperativeMatrixKHR", i8, 3, 8, 32, 0) @_Z32__spirv_CooperativeMatrixLoadKHR_A(ptr addrspace(4) %pa4, i32 0, i64 %K, i32 0)
  %krow = lshr i64 %k, 2
  %boff0 = mul i64 %krow, %bstride
  %boff = add i64 %boff0, %bcol
  %pb = getelementptr inbounds i8, ptr addrspace(1) %B, i64 %boff
  %pb4 = addrspacecast ptr addrspace(1) %pb to ptr addrspace(4)
  %b = call spir_func target("spirv.CooperativeMatrixKHR", i8, 3, 32, 16, 1) @_Z32__spirv_CooperativeMatrixLoadKHR_B(ptr addrspace(4) %pb4, i32 2, i64 %bstride, i32 0)
  %d = call spir_func target("spirv.CooperativeMatrixKHR", i32, 3, 8, 16, 2) @_Z34__spirv_CooperativeMatrixMulAddKHR(target("spirv.CooperativeMatrixKHR", i8, 3, 8, 32, 0) %a, target("spirv.CooperativeMatrixKHR", i8, 3, 32, 16, 1) %b, target("spirv.CooperativeMatrixKHR", i32, 3, 8, 16, 2) %acc, i32 3)
  %k.next = add i64 %k, 32
  %more = icmp ult i64 %k.next, %K
  br i1 %more, label %loop, label %exit

exit:
  %coff0 = mul i64 %row, %N
  %coff = add i64 %coff0, %col
  %pc = getelementptr inbounds i32, ptr addrspace(1) %C, i64 %coff
  %pc4 = addrspacecast ptr addrspace(1) %pc to ptr addrspace(4)
  call spir_func void @_Z33__spirv_CooperativeMatrixStoreKHR(ptr addrspace(4) %pc4, target("spirv.CooperativeMatrixKHR", i32, 3, 8, 16, 2) %d, i32 0, i64 %N, i32 0)
  ret void
}

declare spir_func target("spirv.CooperativeMatrixKHR", i32, 3, 8, 16, 2) @_Z26__spirv_CompositeConstructi(i32)
declare spir_func target("spirv.CooperativeMatrixKHR", i8, 3, 8, 32, 0) @_Z32__spirv_CooperativeMatrixLoadKHR_A(ptr addrspace(4), i32, i64, i32)
declare spir_func target("spirv.CooperativeMatrixKHR", i8, 3, 32, 16, 1) @_Z32__spirv_CooperativeMatrixLoadKHR_B(ptr addrspace(4), i32, i64, i32)
declare spir_func target("spirv.CooperativeMatrixKHR", i32, 3, 8, 16, 2) @_Z34__spirv_CooperativeMatrixMulAddKHR(target("spirv.CooperativeMatrixKHR", i8, 3, 8, 32, 0), target("spirv.CooperativeMatrixKHR", i8, 3, 32, 16, 1), target("spirv.CooperativeMatrixKHR", i32, 3, 8, 16, 2), i32)
declare spir_func void @_Z33__spirv_CooperativeMatrixStoreKHR(ptr addrspace(4), target("spirv.CooperativeMatrixKHR", i32, 3, 8, 16, 2), i32, i64, i32)

!0 = !{i32 16}
