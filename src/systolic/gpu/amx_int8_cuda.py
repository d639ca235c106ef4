"""CUDA C source of the AMX int8 GEMM kernels (TDPBSSD / TDPBSUD / TDPBUSD / TDPBUUD) on the tensor cores.

What TDPB[SU][SU]D computes per output is ``C + sum_k A[m][k] * B[k][n]`` with the products exact and every
addition modulo 2^32 (SDM vol. 2, TDPBSSD Operation). Addition modulo 2^32 is associative, so any summation
order gives the same bits; the kernel may use the tensor cores (``mma.sync...m16n8k32.row.col.s32.{s8,u8}.
{s8,u8}.s32``, PTX ISA "Warp-level matrix multiply-accumulate", integer types), whose order is unspecified.

Nothing here relies on how the tensor cores treat an int32 overflow: every ``mma`` chain of one launch starts at
0 and covers at most :data:`K_CHUNK` = 32768 values of K, so its exact sum stays below 32768 * 255 * 255 < 2^31
in magnitude; C is added once, in the epilogue, with an explicit 32-bit wrap-around add. Longer K runs as
several launches, each adding into the previous result.

Tiles: block 128 x 128 of C, 8 warps (2 x 4), warp tile 64 x 32 (4 x 4 mma tiles), K stages of BK bytes
(:data:`VARIANTS`), several ``cp.async`` stages in flight; A (M, K) and BT (N, K) in shared memory with rows
padded by 16 bytes (conflict-free ``ldmatrix``), fragments by ``ldmatrix.x4``.
"""

#: at most this many K values per launch: 32768 * 255 * 255 < 2^31, so no mma chain can overflow
K_CHUNK = 32768
BM = 128
THREADS = 256

SOURCE = r"""
typedef unsigned int u32;
typedef unsigned char u8;

#define BM 128

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N)); }

__device__ __forceinline__ void ldsm_x4(u32& r0, u32& r1, u32& r2, u32& r3, const void* p) {
    unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(s));
}

/* one m16n8k32 integer mma, d += a * b, per sign mix (PTX ISA: mma, .atype/.btype .s8/.u8) */
template <int SA, int SB> __device__ __forceinline__ void mma(int* d, const u32* a, const u32* b);
#define MMA_SPEC(SA, SB, TYPES)                                                                              \
template <> __device__ __forceinline__ void mma<SA, SB>(int* d, const u32* a, const u32* b) {              \
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32." TYPES ".s32 "                                     \
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                        \
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])                                           \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                       \
}
MMA_SPEC(1, 1, "s8.s8")
MMA_SPEC(1, 0, "s8.u8")
MMA_SPEC(0, 1, "u8.s8")
MMA_SPEC(0, 0, "u8.u8")

/* A: (Mp, Kp) bytes, BT: (Np, Kp) bytes (B transposed), both padded with zeros to the tiles; Cin, Cout: (M, N)
   int32 (Cin may be Cout). Kp: a multiple of BK, at most K_CHUNK. */
template <int SA, int SB, int BK, int STAGES, int WN>
__device__ __forceinline__ void int8_gemm(const u8* __restrict__ A, const u8* __restrict__ BT,
                                          const int* Cin, int* Cout, int M, int N, int Kp) {
    constexpr int ROW = BK + 16;             /* padded rows: conflict-free ldmatrix (BK % 64 == 0) */
    constexpr int BNT = 4 * WN;              /* block columns: 4 warps of WN columns */
    constexpr int NJ = WN / 8;               /* n8 mma tiles per warp */
    extern __shared__ __align__(16) u8 smem[];
    u8* As = smem;                           /* [STAGES][BM][ROW] */
    u8* Bs = smem + STAGES * BM * ROW;       /* [STAGES][BNT][ROW] */
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 2, wn = warp & 3;            /* warp tile: rows wm*64, columns wn*WN */
    /* grouped block order (8 block rows at a time): the B panels a group reads stay in L2 */
    const int pid = blockIdx.y * gridDim.x + blockIdx.x, per_group = 8 * gridDim.x;
    const int first = (pid / per_group) * 8, gsize = min((int)gridDim.y - first, 8);
    const int bm = first + (pid % per_group) % gsize, bn = (pid % per_group) / gsize;
    const int m0 = bm * BM, n0 = bn * BNT;
    const int nk = Kp / BK;

    auto load = [&](int kb, int st) {
        #pragma unroll
        for (int c = tid; c < BM * (BK / 16); c += 256) {   /* chunks of 16 bytes */
            int r = c / (BK / 16), q = c % (BK / 16);
            cp_async16(As + (st * BM + r) * ROW + q * 16, A + (size_t)(m0 + r) * Kp + kb * BK + q * 16);
        }
        #pragma unroll
        for (int c = tid; c < BNT * (BK / 16); c += 256) {
            int r = c / (BK / 16), q = c % (BK / 16);
            cp_async16(Bs + (st * BNT + r) * ROW + q * 16, BT + (size_t)(n0 + r) * Kp + kb * BK + q * 16);
        }
    };

    int acc[4][NJ][4];
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < NJ; ++j)
            #pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0;

    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) { if (s < nk) load(s, s); cp_async_commit(); }

    /* ldmatrix row addresses: A m16 x k32 tile as four 8x8 b16 matrices (rows 0-7 / 8-15, bytes 0-15 / 16-31),
       B n16 x k32 as (n 0-7, bytes 0-15), (n 0-7, bytes 16-31), (n 8-15, bytes 0-15), (n 8-15, bytes 16-31) */
    const int q = lane >> 3, r8 = lane & 7;
    const int a_row = r8 + (q & 1) * 8, a_col = (q >> 1) * 16;
    const int b_row = r8 + (q >> 1) * 8, b_col = (q & 1) * 16;

    for (int kb = 0; kb < nk; ++kb) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        { int nx = kb + STAGES - 1; if (nx < nk) load(nx, nx % STAGES); cp_async_commit(); }
        const int st = kb % STAGES;
        const u8* as = As + (st * BM + wm * 64) * ROW;
        const u8* bs = Bs + (st * BNT + wn * WN) * ROW;
        #pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk) {
            u32 af[4][4], bf[NJ][2];
            #pragma unroll
            for (int i = 0; i < 4; ++i)
                ldsm_x4(af[i][0], af[i][1], af[i][2], af[i][3], as + (i * 16 + a_row) * ROW + kk * 32 + a_col);
            #pragma unroll
            for (int j = 0; j < NJ / 2; ++j)
                ldsm_x4(bf[2 * j][0], bf[2 * j][1], bf[2 * j + 1][0], bf[2 * j + 1][1],
                        bs + (j * 16 + b_row) * ROW + kk * 32 + b_col);
            #pragma unroll
            for (int i = 0; i < 4; ++i)
                #pragma unroll
                for (int j = 0; j < NJ; ++j)
                    mma<SA, SB>(acc[i][j], af[i], bf[j]);
        }
    }
    cp_async_wait<0>();

    /* accumulator fragment: c0, c1 at (row g, columns 2t, 2t+1), c2, c3 at row g + 8 */
    const int g = lane >> 2, t = lane & 3;
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < NJ; ++j)
            #pragma unroll
            for (int r = 0; r < 4; ++r) {
                int m = m0 + wm * 64 + i * 16 + g + (r >> 1) * 8;
                int n = n0 + wn * WN + j * 8 + 2 * t + (r & 1);
                if (m < M && n < N) {
                    size_t x = (size_t)m * N + n;
                    u32 c0 = Cin ? (u32)Cin[x] : 0u;                    /* C omitted: zeros */
                    Cout[x] = (int)(c0 + (u32)acc[i][j][r]);             /* modulo 2^32 */
                }
            }
}

/* B (K, N) bytes -> BT (Np, Kp) bytes, zeros outside B; tile 64 x 64 through shared memory, block 256.
   Whole tiles with N % 16 == 0 move 16 bytes per thread each way; edge tiles byte by byte. */
extern "C" __global__ void transpose_b(const u8* __restrict__ B, u8* __restrict__ BT, int K, int N, int Kp, int Np) {
    __shared__ __align__(16) u8 tile[64][80];
    const int k0 = blockIdx.y * 64, n0 = blockIdx.x * 64, tid = threadIdx.x;
    const int r = tid >> 2, q = tid & 3;
    const bool whole = (k0 + 64 <= K) && (n0 + 64 <= N) && (N % 16 == 0);
    if (whole) {
        *reinterpret_cast<uint4*>(&tile[r][q * 16]) = *reinterpret_cast<const uint4*>(B + (size_t)(k0 + r) * N + n0 + q * 16);
    } else {
        for (int x = 0; x < 16; ++x) {
            int k = k0 + r, n = n0 + q * 16 + x;
            tile[r][q * 16 + x] = (k < K && n < N) ? B[(size_t)k * N + n] : (u8)0;
        }
    }
    __syncthreads();
    /* thread: row n0 + r of BT, k bytes k0 + 16 q ... + 15 */
    if (n0 + r < Np && k0 + q * 16 < Kp) {
        u32 w[4];
        #pragma unroll
        for (int x = 0; x < 4; ++x)
            w[x] = (u32)tile[q * 16 + 4 * x][r] | ((u32)tile[q * 16 + 4 * x + 1][r] << 8)
                 | ((u32)tile[q * 16 + 4 * x + 2][r] << 16) | ((u32)tile[q * 16 + 4 * x + 3][r] << 24);
        *reinterpret_cast<uint4*>(BT + (size_t)(n0 + r) * Kp + k0 + q * 16) = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

/* A (M, K) bytes -> (Mp, Kp) bytes, zeros outside A */
extern "C" __global__ void pad_a(const u8* __restrict__ A, u8* __restrict__ Ap, int M, int K, int Mp, int Kp) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)Mp * Kp) return;
    int m = (int)(i / Kp), k = (int)(i % Kp);
    Ap[i] = (m < M && k < K) ? A[(size_t)m * K + k] : (u8)0;
}
"""

#: (A signed, B signed) -> the mma instruction's type suffix
MMA = {(True, True): "s8.s8", (True, False): "s8.u8", (False, True): "u8.s8", (False, False): "u8.u8"}


#: tile variants: name -> (BK bytes of K per stage, pipeline stages, warp tile columns WN; block = 128 x 4 WN);
#: kernels int8_gemm_<types>_<variant>
VARIANTS = {"bk64s3": (64, 3, 32), "bk128s3": (128, 3, 32), "bk128s4": (128, 4, 32), "bk64s4w64": (64, 4, 64),
            "bk128s3w64": (128, 3, 64)}
DEFAULT = "bk128s3"


def block_n(variant: str) -> int:
    return 4 * VARIANTS[variant][2]


def smem_bytes(variant: str) -> int:
    bk, stages, wn = VARIANTS[variant]
    return stages * (BM + 4 * wn) * (bk + 16)


def source() -> str:
    """The whole module: the kernel above instantiated per sign mix and variant (``int8_gemm_s8s8_bk128s3`` ...)."""
    parts = [SOURCE]
    for (sa, sb), types in MMA.items():
        for v, (bk, st, wn) in VARIANTS.items():
            name = kernel_name(sa, sb, v)
            parts.append(f'extern "C" __global__ void __launch_bounds__(256) {name}(const u8* A, const u8* BT, '
                         f"const int* Cin, int* Cout, int M, int N, int Kp)\n"
                         f"{{ int8_gemm<{int(sa)}, {int(sb)}, {bk}, {st}, {wn}>(A, BT, Cin, Cout, M, N, Kp); }}\n")
    return "\n".join(parts)


def kernel_name(signed_a: bool, signed_b: bool, variant: str = DEFAULT) -> str:
    return "int8_gemm_" + MMA[(signed_a, signed_b)].replace(".", "") + "_" + variant
