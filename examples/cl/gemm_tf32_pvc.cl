// A tf32 GEMM on PVC: each sub-group of 16 computes an 8 x 16 tile of C = A x B with the _tf32 built-in.
// Work-item i holds rows 2j + i/8 of column i%8 of the A tile (the tf32 layout), one column of B per work-item.
// systolic-run: device pvc
// systolic-run: devices pvc bmg lnl
// systolic-run: kernel gemm_tf32
// systolic-run: global 32 4
// systolic-run: local 16 1
// systolic-run: buffer A:f32[1024] = random -16 16 7
// systolic-run: buffer B:f32[1024] = random -16 16 8
// systolic-run: buffer C:f32[1024] = zeros
// systolic-run: args C A B 32:int 32:int
// systolic-run: oracle C = matmul A B M=32 N=32 K=32

__attribute__((intel_reqd_sub_group_size(16))) __attribute__((reqd_work_group_size(16, 1, 1)))
kernel void gemm_tf32(global float* C, global float* A, global float* B, int N, int K)
{
    const int n0 = get_group_id(0) * 16;
    const int m0 = get_group_id(1) * 8;
    const int i = get_sub_group_local_id();
    float8 acc = 0;
    for (int k = 0; k < K; k += 8) {
        float4 a;
        for (int j = 0; j < 4; j++)
            a[j] = A[(m0 + 2 * j + i / 8) * K + k + i % 8];
        float8 b;
        for (int j = 0; j < 8; j++)
            b[j] = as_float(intel_sub_group_block_read((global uint*)(B + (k + j) * N + n0)));
        acc = intel_sub_group_tf32_tf32_matrix_mad_k8(a, b, acc);
    }
    for (int r = 0; r < 8; r++)
        C[(m0 + r) * N + n0 + i] = acc[r];
}
