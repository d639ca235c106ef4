// A split int8 GEMM on DG2: the two sub-groups of a work-group each load half of an 8 x 32 A tile and run the
// split built-in (one DPASW per pair), each computing its own 8 x 8 tile of C = A x B.
// systolic-run: device dg2
// systolic-run: kernel gemm_split
// systolic-run: global 32 4
// systolic-run: local 16 1
// systolic-run: buffer A:i8[1024] = random -128 127 9
// systolic-run: buffer B:i8[1024] = random -128 127 10
// systolic-run: buffer C:i32[1024] = zeros
// systolic-run: args C A B 32:int 32:int
// systolic-run: oracle C = matmul A B M=32 N=32 K=32 vnni=4

__attribute__((intel_reqd_sub_group_size(8))) __attribute__((reqd_work_group_size(16, 1, 1)))
kernel void gemm_split(global int* C, global char* A, global uint* B, int N, int K)
{
    const int sg = get_sub_group_id();
    const int n0 = get_group_id(0) * 16 + sg * 8;
    const int m0 = get_group_id(1) * 8;
    int8 acc = 0;
    for (int k = 0; k < K; k += 32) {
        int4 a;                             // this sub-group's half of A: rows 4 sg .. 4 sg + 3
        for (int r = 0; r < 4; r++)
            a[r] = as_int(intel_sub_group_block_read((global uint*)(A + (m0 + 4 * sg + r) * K + k)));
        int8 b;
        for (int j = 0; j < 8; j++)
            b[j] = as_int(intel_sub_group_block_read(B + (k / 4 + j) * N + n0));
        acc = intel_sub_group_i8_i8_split_matrix_mad_k32(a, b, acc);
    }
    for (int r = 0; r < 8; r++)
        intel_sub_group_block_write((global uint*)(C + (m0 + r) * N + n0), as_uint(acc[r]));
}
