// A bf16 GEMM on PVC with block reads: each sub-group of 16 computes an 8 x 16 tile of C = A x B.
// A is M x K row-major bf16 (ushort), B is K x N in the VNNI form (K/2 rows of N ushort2), C is M x N float.
// systolic-run: device pvc
// systolic-run: devices pvc bmg lnl
// systolic-run: kernel gemm_bf16
// systolic-run: global 64 8
// systolic-run: local 16 1
// systolic-run: buffer A:bf16[4096] = random -8 8 1
// systolic-run: buffer B:bf16[4096] = random -8 8 2
// systolic-run: buffer C:f32[4096] = zeros
// systolic-run: args C A B 64:int 64:int
// systolic-run: oracle C = matmul A B M=64 N=64 K=64 vnni=2

__attribute__((intel_reqd_sub_group_size(16))) __attribute__((reqd_work_group_size(16, 1, 1)))
kernel void gemm_bf16(global float* C, global ushort* A, global uint* B, int N, int K)
{
    const int n0 = get_group_id(0) * 16;
    const int m0 = get_group_id(1) * 8;
    float8 acc = 0;
    for (int k = 0; k < K; k += 16) {
        short8 a;
        for (int r = 0; r < 8; r++)                       // row m0 + r: one bf16 per work-item
            a[r] = as_short(intel_sub_group_block_read_us(A + (m0 + r) * K + k));
        int8 b;
        for (int j = 0; j < 8; j++)                       // VNNI row k/2 + j: rows k+2j, k+2j+1 of column n
            b[j] = as_int(intel_sub_group_block_read(B + (k / 2 + j) * N + n0));
        acc = intel_sub_group_bf16_bf16_matrix_mad_k16(a, b, acc);
    }
    for (int r = 0; r < 8; r++)
        intel_sub_group_block_write((global uint*)(C + (m0 + r) * N + n0), as_uint(acc[r]));
}
