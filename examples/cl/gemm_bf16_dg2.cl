// A bf16 GEMM on DG2 (sub-group 8) with block reads: each sub-group computes an 8 x 8 tile of C = A x B.
// A is M x K row-major bf16 (two per work-item, read as uint), B is K x N bf16 in the VNNI form, C float.
// systolic-run: device dg2
// systolic-run: kernel gemm_bf16
// systolic-run: global 64 8
// systolic-run: local 8 1
// systolic-run: buffer A:bf16[4096] = random -8 8 5
// systolic-run: buffer B:bf16[4096] = random -8 8 6
// systolic-run: buffer C:f32[4096] = zeros
// systolic-run: args C A B 64:int 64:int
// systolic-run: oracle C = matmul A B M=64 N=64 K=64 vnni=2

__attribute__((intel_reqd_sub_group_size(8))) __attribute__((reqd_work_group_size(8, 1, 1)))
kernel void gemm_bf16(global float* C, global ushort* A, global uint* B, int N, int K)
{
    const int n0 = get_group_id(0) * 8;
    const int m0 = get_group_id(1) * 8;
    float8 acc = 0;
    for (int k = 0; k < K; k += 16) {
        int8 a, b;
        for (int r = 0; r < 8; r++)
            a[r] = as_int(intel_sub_group_block_read((global uint*)(A + (m0 + r) * K + k)));
        for (int j = 0; j < 8; j++)
            b[j] = as_int(intel_sub_group_block_read(B + (k / 2 + j) * N + n0));
        acc = intel_sub_group_bf16_bf16_matrix_mad_k16(a, b, acc);
    }
    for (int r = 0; r < 8; r++)
        intel_sub_group_block_write((global uint*)(C + (m0 + r) * N + n0), as_uint(acc[r]));
}
