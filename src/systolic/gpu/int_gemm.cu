
typedef unsigned int u32;
typedef unsigned char u8;

/* B (K, N) bytes -> BT (N, Kp) bytes, zeros for k >= K; tile 64 x 64 through shared memory, block 256, K tiles
   strided over grid.y (which is capped at 65535). Whole tiles with N % 16 == 0 and B 16-byte aligned move 16
   bytes per thread each way; other tiles byte by byte. */
extern "C" __global__ void transpose_b(const u8* __restrict__ B, u8* __restrict__ BT, int K, int N, int Kp) {
    __shared__ __align__(16) u8 tile[64][80];
    const int n0 = blockIdx.x * 64, tid = threadIdx.x;
    const int r = tid >> 2, q = tid & 3;
    for (int k0 = blockIdx.y * 64; k0 < Kp; k0 += gridDim.y * 64) {
        const bool whole = (k0 + 64 <= K) && (n0 + 64 <= N) && (N % 16 == 0) && (((size_t)B & 15) == 0);
        if (whole) {
            *reinterpret_cast<uint4*>(&tile[r][q * 16]) =
                *reinterpret_cast<const uint4*>(B + (size_t)(k0 + r) * N + n0 + q * 16);
        } else {
            for (int x = 0; x < 16; ++x) {
                int k = k0 + r, n = n0 + q * 16 + x;
                tile[r][q * 16 + x] = (k < K && n < N) ? B[(size_t)k * N + n] : (u8)0;
            }
        }
        __syncthreads();
        /* thread: row n0 + r of BT, bytes k0 + 16 q ... + 15 (Kp % 16 == 0: a chunk is all in or all out) */
        if (n0 + r < N && k0 + q * 16 < Kp) {
            u32 w[4];
            #pragma unroll
            for (int x = 0; x < 4; ++x)
                w[x] = (u32)tile[q * 16 + 4 * x][r] | ((u32)tile[q * 16 + 4 * x + 1][r] << 8)
                     | ((u32)tile[q * 16 + 4 * x + 2][r] << 16) | ((u32)tile[q * 16 + 4 * x + 3][r] << 24);
            *reinterpret_cast<uint4*>(BT + (size_t)(n0 + r) * Kp + k0 + q * 16) = make_uint4(w[0], w[1], w[2], w[3]);
        }
        __syncthreads();                    /* the tile is reused by the next K tile */
    }
}

/* rows x K bytes (row stride ld) -> dst (rows x Kp, zeros for k >= K): the bytes XOR flip (0x80: u8 -> the
   int8 value minus 128, or a plain copy with flip 0), and sums[r] = the sum of row r's int8 values modulo
   2**32 (all the rank-one terms need). One block of 256 threads per row. */
extern "C" __global__ void shift_rows(const u8* __restrict__ src, u8* __restrict__ dst, int* __restrict__ sums,
                                      int K, int ld, int Kp, int flip) {
    const int r = blockIdx.x;
    u32 s = 0u;
    for (int k = threadIdx.x; k < Kp; k += blockDim.x) {
        u8 v = k < K ? (u8)(src[(size_t)r * ld + k] ^ (u8)flip) : (u8)0;
        dst[(size_t)r * Kp + k] = v;
        s += (u32)(int)(signed char)v;
    }
    __shared__ u32 part[256];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0 && sums != nullptr) sums[r] = (int)part[0];
}

/* out (M x N) = C + cu * u[m] + cv * v[n] + k0, modulo 2**32 (C, u, v may be null: zeros) */
extern "C" __global__ void bias_c(const int* __restrict__ C, int* __restrict__ out, const int* __restrict__ u,
                                  const int* __restrict__ v, long long M, long long N, u32 cu, u32 cv, u32 k0) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < M * N;
         i += (long long)gridDim.x * blockDim.x) {
        long long m = i / N, n = i - m * N;
        u32 x = k0 + (C != nullptr ? (u32)C[i] : 0u);
        if (u != nullptr) x += cu * (u32)u[m];
        if (v != nullptr) x += cv * (u32)v[n];
        out[i] = (int)x;
    }
}
