// An int8 GEMM on PVC (sub-group 16) with block reads: each sub-group computes an 8 x 16 tile of C = A x B.
// A is M x K row-major int8 (two per work-item, read as ushort), B is K x N int8 in the VNNI form, C int32.
// systolic-run: device pvc
// systolic-run: devices pvc bmg lnl
// systolic-run: kernel gemm_s8
// systolic-run: global 64 8
// systolic-run: local 16 1
// systolic-run: buffer A:i8[4096] = random -128 127 3
// systolic-run: buffer B:i8[4096] = random -128 127 4
// systolic-run: buffer C:i32[4096] = zeros
// systolic-run: args C A B 64:int 64:int
// systolic-run: oracle C = matmul A B M=64 N=64 K=64 vnni=4

__attribute__((intel_reqd_sub_group_size(16))) __attribute__((reqd_work_group_size(16, 1, 1)))
kernel void gemm_s8(global int* C, global char* A, global uint* B, int N, int K)
{
    const int n0 = get_group_id(0) * 16;
    const int m0 = get_group_id(1) * 8;
    int8 acc = 0;
    for (int k = 0; k < K; k += 32) {
        short8 a;
        int8 b;
        for (int r = 0; r < 8; r++)        // row m0 + r: 2 int8 per work-item (columns 2i, 2i+1)
            a[r] = as_short(intel_sub_group_block_read_us((global ushort*)(A + (m0 + r) * K + k)));
        for (int j = 0; j < 8; j++)
            b[j] = as_int(intel_sub_group_block_read(B + (k / 4 + j) * N + n0));
        acc = intel_sub_group_i8_i8_matrix_mad_k32(a, b, acc);
    }
    for (int r = 0; r < 8; r++)
        intel_sub_group_block_write((global uint*)(C + (m0 + r) * N + n0), as_uint(acc[r]));
}
