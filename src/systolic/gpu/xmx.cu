
#include <cuda_fp16.h>

typedef unsigned int u32;
typedef unsigned long long u64;

#define BIG_LSB 4000

// fp32 operations and conversions written as inline PTX without .ftz: CuPy's RawModule route can compile with
// flush-to-zero whatever our --ftz=false says (measured: subnormal inputs of fp32 FMAs and of the f32 -> f64
// conversion came out as zeros), and PTX without .ftz keeps IEEE gradual underflow on every route.
// binary64 operations are never flushed (.ftz exists for .f32 only).
__device__ __forceinline__ double f2d(float f) { double d; asm("cvt.f64.f32 %0, %1;" : "=d"(d) : "f"(f)); return d; }
__device__ __forceinline__ float d2f(double d) { float f; asm("cvt.rn.f32.f64 %0, %1;" : "=f"(f) : "d"(d)); return f; }
__device__ __forceinline__ float fma_rn(float a, float b, float c) {
    float d; asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c)); return d;
}
__device__ __forceinline__ float h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }

// ------------------------------------------------------------------------------------------- decode
// mode 0: bf16 bits (uint16), 1: fp16 bits (uint16), 2: tf32 from float32 bits (RNE to 10 fraction bits,
// gemm._tf32_rne), 3: fp32 values as they are. Writes dst[r * ldd + c] for r < rows, c < ldd, zero past
// (src_rows, src_cols): the K / N padding of the GEMM.
extern "C" __global__ void xmx_decode(const void* __restrict__ src, float* __restrict__ dst, long long src_rows,
                                      long long src_cols, long long rows, long long ldd, int mode, int flush,
                                      float min_normal) {
    long long total = rows * ldd;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        long long r = idx / ldd, c = idx - r * ldd;
        float v = 0.0f;
        if (r < src_rows && c < src_cols) {
            long long s = r * src_cols + c;
            if (mode == 0) {
                v = __uint_as_float(((u32)((const unsigned short*)src)[s]) << 16);
            } else if (mode == 1) {
                v = h2f(((const unsigned short*)src)[s]);
            } else if (mode == 2) {
                u32 u = ((const u32*)src)[s];
                u32 rr = (u + 0xFFFu + ((u >> 13) & 1u)) & 0xFFFFE000u;
                if ((u & 0x7FFFFFFFu) > 0x7F800000u) rr = 0x7FC00000u;
                v = __uint_as_float(rr);
            } else {
                v = ((const float*)src)[s];
            }
            // on the bit pattern (an fp32 compare could see a flushed subnormal as zero)
            const u32 mag = __float_as_uint(v) & 0x7FFFFFFFu;
            if (flush && mag != 0u && mag < __float_as_uint(min_normal)) v = __uint_as_float(__float_as_uint(v) & 0x80000000u);
        }
        dst[idx] = v;
    }
}

// ------------------------------------------------------------------------------------------- statistics
// lsb(v): an integer L with v a multiple of 2**L (a lower bound: exponent - (sig - 1); fp32 subnormals:
// -149; zeros: BIG_LSB, they constrain nothing).
__device__ __forceinline__ int lsb_of(float v, int sig) {
    u32 u = __float_as_uint(v) & 0x7FFFFFFFu;
    if (u == 0u) return BIG_LSB;
    int e = (int)(u >> 23);
    if (e == 0) return -149;
    return e - 127 - (sig - 1);
}
// |v| as a bit pattern (unsigned order is magnitude order; NaN -> the pattern of +inf)
__device__ __forceinline__ u32 mag_of(float v) {
    u32 u = __float_as_uint(v) & 0x7FFFFFFFu;
    return u > 0x7F800000u ? 0x7F800000u : u;
}

// E(m): an integer with every magnitude <= m below 2**(E+1), from the bit pattern of the largest magnitude m
// (fp32 subnormals: -127; zero: -2000, constrains nothing; inf / NaN (mag_of: +inf's pattern): 128, fails).
__device__ __forceinline__ int ebound(u32 m) {
    if (m == 0u) return -2000;
    int e = (int)(m >> 23);
    return e == 0 ? -127 : e - 127;
}

// the whole operand's (min lsb, max magnitude pattern) into G[0], G[1]: one atomic per warp (every lane of
// the warp calls it; a lane with nothing passes BIG_LSB, 0)
__device__ __forceinline__ void stats_total(int l, u32 m, bool live, int* G) {
    l = __reduce_min_sync(0xFFFFFFFFu, live ? l : BIG_LSB);
    m = __reduce_max_sync(0xFFFFFFFFu, live ? m : 0u);
    if ((threadIdx.x & 31) == 0) { atomicMin(&G[0], l); atomicMax((u32*)&G[1], m); }
}

// A (rows x kp, row-major): LEA[r * nch + c] = (min lsb, bit pattern of max |a|) over chunk c of row r; G: the
// same over all of A (initialised by the caller to (BIG_LSB, 0))
extern "C" __global__ void xmx_stats_a(const float* __restrict__ A, int2* __restrict__ LEA, long long rows,
                                       long long kp, int sig, int* __restrict__ G) {
    long long nch = kp / 16;
    int lt = BIG_LSB; u32 mt = 0u;          // this thread's share of the whole operand (grid-stride loop)
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < rows * nch;
         idx += (long long)gridDim.x * blockDim.x) {
        long long r = idx / nch, c = idx - r * nch;
        const float* p = A + r * kp + c * 16;
        int l = BIG_LSB; u32 m = 0u;
        #pragma unroll
        for (int q = 0; q < 16; ++q) { float v = p[q]; l = min(l, lsb_of(v, sig)); m = max(m, mag_of(v)); }
        LEA[idx] = make_int2(l, (int)m);
        lt = min(lt, l); mt = max(mt, m);
    }
    stats_total(lt, mt, true, G);
}

// B (kp x ldb, row-major): LEB[c * ldb + j]; G as for A
extern "C" __global__ void xmx_stats_b(const float* __restrict__ B, int2* __restrict__ LEB, long long kp,
                                       long long ldb, int sig, int* __restrict__ G) {
    long long nch = kp / 16;
    int lt = BIG_LSB; u32 mt = 0u;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < nch * ldb;
         idx += (long long)gridDim.x * blockDim.x) {
        long long c = idx / ldb, j = idx - c * ldb;
        const float* p = B + c * 16 * ldb + j;
        int l = BIG_LSB; u32 m = 0u;
        #pragma unroll
        for (int q = 0; q < 16; ++q) { float v = p[q * ldb]; l = min(l, lsb_of(v, sig)); m = max(m, mag_of(v)); }
        LEB[idx] = make_int2(l, (int)m);
        lt = min(lt, l); mt = max(mt, m);
    }
    stats_total(lt, mt, true, G);
}

// ------------------------------------------------------------------------------------------- fp32 FMA chain
// D = C + A @ B with x = fma(a_k, b_k, x) in K order per element (binary32, RNE, denormals kept). A: M x kp,
// B: kp x ldb (ldb % 4 == 0, kp % 8 == 0, both zero-padded), C: M x N fp32 or null, D: M x N fp32 bits.
// 128 x 128 tile, BK = 8, 256 threads of 8 x 8 outputs, double-buffered shared memory.
#define F_BM 128
#define F_BN 128
#define F_BK 8

// The K loop the fp32-pipe kernels share: per tile of F_BK, each thread fetches one float4 of A (row ar of
// the block, k ak..ak+3) and one of B (row bk, columns bc..bc+3) from global memory, zero outside the
// matrices, one step ahead; a step is NB tiles. store(buf, i, ra, rb) puts tile i of a step into shared buffer
// buf in the kernel's arrangement and compute(cur) consumes buffer cur's NB tiles. Double-buffered: one
// __syncthreads per step, so NB > 1 trades NB - 1 float4 pairs of registers for fewer barriers (a warp held up
// by a rare redo makes the others of its block wait there). Tiles past ntiles are zeros (x + 0 + 0 = x).
template <int NB, class Store, class Compute>
__device__ __forceinline__ void stream_tiles(const float* Ap, const float* Bp, bool a_ok, bool b_ok, int ldb,
                                             int ntiles, Store store, Compute compute) {
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    float4 ra[NB], rb[NB];
    auto fetch = [&](int t0) {
        #pragma unroll
        for (int i = 0; i < NB; ++i) {
            const int t = t0 + i;
            ra[i] = a_ok && t < ntiles ? *(const float4*)(Ap + t * F_BK) : zero;
            rb[i] = b_ok && t < ntiles ? *(const float4*)(Bp + (long long)t * F_BK * ldb) : zero;
        }
    };
    const int nsteps = (ntiles + NB - 1) / NB;
    fetch(0);
    #pragma unroll
    for (int i = 0; i < NB; ++i) store(0, i, ra[i], rb[i]);
    __syncthreads();
    for (int t = 0; t < nsteps; ++t) {
        const int cur = t & 1;
        if (t + 1 < nsteps) fetch((t + 1) * NB);
        compute(cur);
        if (t + 1 < nsteps) {
            #pragma unroll
            for (int i = 0; i < NB; ++i) store(cur ^ 1, i, ra[i], rb[i]);
        }
        __syncthreads();
    }
}
extern "C" __global__ void __launch_bounds__(256)
xmx_fma32(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ C,
          u32* __restrict__ D, int M, int N, int kp, int ldb, u32 nan_bits) {
    __shared__ __align__(16) float As[2][F_BK][F_BM];
    __shared__ __align__(16) float Bs[2][F_BK][F_BN];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int bm = blockIdx.y * F_BM, bn = blockIdx.x * F_BN;
    // global -> shared assignment: A 128 rows x 8 k (one float4 each), B 8 k x 128 cols (one float4 each)
    const int ar = tid / 2, ak = (tid % 2) * 4;
    const int bk = tid / 32, bc = (tid % 32) * 4;
    const bool arow_ok = bm + ar < M;
    const bool bcol_ok = bn + bc < ldb;
    const float* Ap = A + (long long)(bm + ar) * kp + ak;
    const float* Bp = B + (long long)bk * ldb + bn + bc;

    float acc[8][8];
    #pragma unroll
    for (int i = 0; i < 8; ++i) {
        int r = bm + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            int c = bn + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            acc[i][j] = (C != nullptr && r < M && c < N) ? C[(long long)r * N + c] : 0.0f;
        }
    }
    auto store = [&](int buf, int, float4 ra, float4 rb) {
        As[buf][ak + 0][ar] = ra.x; As[buf][ak + 1][ar] = ra.y; As[buf][ak + 2][ar] = ra.z; As[buf][ak + 3][ar] = ra.w;
        *(float4*)&Bs[buf][bk][bc] = rb;
    };
    auto compute = [&](int cur) {
        #pragma unroll
        for (int k = 0; k < F_BK; ++k) {
            float a[8], b[8];
            *(float4*)&a[0] = *(const float4*)&As[cur][k][ty * 4];
            *(float4*)&a[4] = *(const float4*)&As[cur][k][64 + ty * 4];
            *(float4*)&b[0] = *(const float4*)&Bs[cur][k][tx * 4];
            *(float4*)&b[4] = *(const float4*)&Bs[cur][k][64 + tx * 4];
            #pragma unroll
            for (int i = 0; i < 8; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fma_rn(a[i], b[j], acc[i][j]);
        }
    };
    stream_tiles<1>(Ap, Bp, arow_ok, bcol_ok, ldb, kp / F_BK, store, compute);
    #pragma unroll
    for (int i = 0; i < 8; ++i) {
        int r = bm + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (r >= M) continue;
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            int c = bn + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            if (c < N) {
                float x = acc[i][j];
                D[(long long)r * N + c] = isnan(x) ? nan_bits : __float_as_uint(x);
            }
        }
    }
}

// ------------------------------------------------------------------------------------------- stage, binary64
// RN24 by Veltkamp's splitting (see systolic.xmx.native, proof step (3)): three binary64 operations.
__device__ __forceinline__ double rn24(double y) {
    double c = __dmul_rn(y, 536870913.0);   // 2**29 + 1
    double d = __dsub_rn(c, y);
    return __dsub_rn(c, d);
}

// RN24 on the integer pipe: the same rounding (to nearest, ties to even, at 24 significant bits of a finite
// binary64 value) done on the bit pattern as gemm._tf32_rne does for tf32: add 0x0FFFFFFF plus the kept LSB
// (bit 29) to the 64-bit pattern and clear the 29 dropped bits; a carry into the exponent is the correct
// rounding up. Used for some of a thread's columns so that the DP and INT pipes share the rounding work.
__device__ __forceinline__ double rn24i(double y) {
    u64 u = (u64)__double_as_longlong(y);
    u = (u + 0x0FFFFFFFull + ((u >> 29) & 1ull)) & ~0x1FFFFFFFull;
    return __longlong_as_double((long long)u);
}

// RN24 by a magic constant: for |y| in [2**e, 2**(e+1)), |y| + 1.5 * 2**(e+29) lies in [2**(e+29), 2**(e+30)),
// whose binary64 spacing is 2**(e-23): the addition rounds |y| to 24 significant bits, to nearest even, and
// subtracting the constant again is exact (Sterbenz). Two DP operations and four integer ones; the sign is
// put back on the bits (so -0 stays -0).
__device__ __forceinline__ double rn24m(double y) {
    const int hi = __double2hiint(y);
    const double ay = __hiloint2double(hi & 0x7FFFFFFF, __double2loint(y));
    const double c = __hiloint2double(((hi & 0x7FF00000) + (29 << 20)) | 0x00080000, 0);
    const double r = __dsub_rn(__dadd_rn(ay, c), c);
    return __hiloint2double(__double2hiint(r) | (hi & (int)0x80000000), __double2loint(r));
}

#define S_BM 64
#define S_BN 128
#define S_BK 16
// D = C + A @ B under "stage" with T products per stage. A: M x kp fp32 values, B: kp x ldb (zero-padded,
// kp % 16 == 0, ldb % 4 == 0); LEA (M x nch), LEB (nch x ldb): per 16-chunk (lsb, E) of A's rows and B's
// columns (xmx_stats_*). Writes D bits and F = 1 where the proof fails (the caller recomputes those).
// 256 threads, 4 x 8 outputs each (64 x 128 tile), BK = 16 (one statistics chunk), double-buffered.
//
// The proof (systolic.xmx.native's, applied per chunk of S = 16 / T stages instead of once per element):
// at a chunk's start x is an fp32 value, so x is a multiple of 2**lx with lx = e(x) - 23 (>= -149), and
// |x| < 2**(e(x)+1); every product of the chunk is a multiple of 2**(La + Lb) and below 2**(Ea + Eb + 2).
// Let L = min(lx, La + Lb) and P = max|a| max|b| over the chunk. By the induction of native.py (1), every
// accumulator value inside the chunk is a multiple of 2**L, and every partial sum is at most
// (|x| + 16 P) * (1 + 2**-24)**8. When that bound times (1 + 2**-17) (the growth and the test's own two
// roundings) is at most 2**min(53 + L, 127) and La + Lb >= -149, every partial sum is an integer multiple
// of 2**L below 2**(53 + L), hence a binary64 number: each binary64 FMA of the chunk is exact, and the stage sum S is rounded once, to 24 bits, to nearest
// even (Veltkamp or the integer rounding; S < 2**127 cannot overflow fp32; a result below 2**-126 is an fp32
// subnormal exactly, L >= -149). Signed zeros: native.py (5). An inf/NaN x or input makes the bound inf or
// NaN and fails. An element is proven when every chunk passes.
template <int T, int JV, int MINB>
__global__ void __launch_bounds__(256, MINB)
xmx_stage(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ C,
          const int2* __restrict__ LEA, const int2* __restrict__ LEB, u32* __restrict__ D,
          unsigned char* __restrict__ F, int M, int N, int kp, int ldb) {
    // dynamic shared memory (S_SMEM bytes, over the 48 KB static limit: the caller raises the kernel's limit)
    extern __shared__ __align__(16) unsigned char smem_raw[];
    double (*As)[S_BK][S_BM] = reinterpret_cast<double (*)[S_BK][S_BM]>(smem_raw);
    double (*Bs)[S_BK][S_BN] = reinterpret_cast<double (*)[S_BK][S_BN]>(smem_raw + 2 * S_BK * S_BM * 8);
    int2 (*LEAs)[S_BM] = reinterpret_cast<int2 (*)[S_BM]>(smem_raw + 2 * S_BK * (S_BM + S_BN) * 8);
    int2 (*LEBs)[S_BN] = reinterpret_cast<int2 (*)[S_BN]>(smem_raw + 2 * S_BK * (S_BM + S_BN) * 8 + 2 * S_BM * 8);
    double (*MAs)[S_BM] = reinterpret_cast<double (*)[S_BM]>(smem_raw + 2 * S_BK * (S_BM + S_BN) * 8 + 2 * (S_BM + S_BN) * 8);
    double (*MBs)[S_BN] = reinterpret_cast<double (*)[S_BN]>(smem_raw + 2 * S_BK * (S_BM + S_BN) * 8 + 2 * (S_BM + S_BN) * 8
                                                             + 2 * S_BM * 8);
    // a warp covers 16 column groups x 2 row groups (tried: 8 x 4, half the shared-memory wavefronts of B; it
    // measured 4% slower at 8192^3, so shared memory is not what limits this kernel)
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int bm = blockIdx.y * S_BM, bn = blockIdx.x * S_BN;
    const int nch = kp / S_BK;
    // A tile 64 rows x 16 k: one float4 per thread; B tile 16 k x 128 cols: two float4 per thread
    const int ar = tid / 4, ak = (tid % 4) * 4;
    const int bk = tid / 32, bc = (tid % 32) * 4;
    const bool arow_ok = bm + ar < M;
    const bool bcol_ok = bn + bc < ldb;
    const float* Ap = A + (long long)(bm + ar) * kp + ak;
    const float* Bp = B + (long long)bk * ldb + bn + bc;
    const float4 z4 = make_float4(0.f, 0.f, 0.f, 0.f);
    const int2 none = make_int2(BIG_LSB, 0);

    double acc[4][8];
    u32 bad = 0u;   // bit i * 8 + j: a chunk of element (i, j) failed the test
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        int r = bm + ty * 4 + i;
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            int c = bn + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            float cv = (C != nullptr && r < M && c < N) ? C[(long long)r * N + c] : 0.0f;
            acc[i][j] = f2d(cv);
        }
    }
    float4 ra = arow_ok ? *(const float4*)Ap : z4;
    float4 rb0 = bcol_ok ? *(const float4*)Bp : z4;
    float4 rb1 = bcol_ok ? *(const float4*)(Bp + 8LL * ldb) : z4;
    int2 rla = none, rlb = none;
    if (tid < S_BM) rla = (bm + tid < M) ? LEA[(long long)(bm + tid) * nch] : none;
    else if (tid < S_BM + S_BN) rlb = (bn + tid - S_BM < ldb) ? LEB[bn + tid - S_BM] : none;

    #define STAGE_STORE(buf)                                                                          \
        As[buf][ak + 0][ar] = f2d(ra.x); As[buf][ak + 1][ar] = f2d(ra.y);                             \
        As[buf][ak + 2][ar] = f2d(ra.z); As[buf][ak + 3][ar] = f2d(ra.w);                             \
        Bs[buf][bk][bc + 0] = f2d(rb0.x); Bs[buf][bk][bc + 1] = f2d(rb0.y);                           \
        Bs[buf][bk][bc + 2] = f2d(rb0.z); Bs[buf][bk][bc + 3] = f2d(rb0.w);                           \
        Bs[buf][bk + 8][bc + 0] = f2d(rb1.x); Bs[buf][bk + 8][bc + 1] = f2d(rb1.y);                   \
        Bs[buf][bk + 8][bc + 2] = f2d(rb1.z); Bs[buf][bk + 8][bc + 3] = f2d(rb1.w);                   \
        if (tid < S_BM) { LEAs[buf][tid] = rla; MAs[buf][tid] = f2d(__uint_as_float((u32)rla.y)); }            \
        else if (tid < S_BM + S_BN) { LEBs[buf][tid - S_BM] = rlb; MBs[buf][tid - S_BM] = f2d(__uint_as_float((u32)rlb.y)); }

    STAGE_STORE(0)
    __syncthreads();
    for (int t = 0; t < nch; ++t) {
        const int cur = t & 1;
        if (t + 1 < nch) {
            ra = arow_ok ? *(const float4*)(Ap + (t + 1) * S_BK) : z4;
            const float* bp = Bp + (long long)(t + 1) * S_BK * ldb;
            rb0 = bcol_ok ? *(const float4*)bp : z4;
            rb1 = bcol_ok ? *(const float4*)(bp + 8LL * ldb) : z4;
            if (tid < S_BM) rla = (bm + tid < M) ? LEA[(long long)(bm + tid) * nch + t + 1] : none;
            else if (tid < S_BM + S_BN)
                rlb = (bn + tid - S_BM < ldb) ? LEB[(long long)(t + 1) * ldb + bn + tid - S_BM] : none;
        }
        // the chunk's test, from x at the chunk's start (the proof in the comment above)
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int2 lea = LEAs[cur][ty * 4 + i];
            const double ma = MAs[cur][ty * 4 + i];
            #pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int cj = j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4;
                const int2 leb = LEBs[cur][cj];
                const double x = acc[i][j];
                const int ef = (__double2hiint(x) >> 20) & 0x7FF;
                const int lp = lea.x + leb.x;
                const int L = min(ef ? ef - 1046 : BIG_LSB, lp);
                const int E = min(53 + L, 127);
                const double thr = __hiloint2double(((E + 1022) << 20) | 0xFFFF0, 0);
                const double bnd = __fma_rn(__dmul_rn(ma, MBs[cur][cj]), 16.0, fabs(x));
                const bool fail = !(bnd <= thr) | (lp < -149);
                bad |= fail ? (1u << (i * 8 + j)) : 0u;
            }
        }
        #pragma unroll
        for (int s = 0; s < S_BK / T; ++s) {
            #pragma unroll
            for (int q = 0; q < T; ++q) {
                const int k = s * T + q;
                double a[4], b[8];
                #pragma unroll
                for (int i = 0; i < 4; ++i) a[i] = As[cur][k][ty * 4 + i];
                #pragma unroll
                for (int j = 0; j < 4; ++j) { b[j] = Bs[cur][k][tx * 4 + j]; b[4 + j] = Bs[cur][k][64 + tx * 4 + j]; }
                #pragma unroll
                for (int i = 0; i < 4; ++i)
                    #pragma unroll
                    for (int j = 0; j < 8; ++j) acc[i][j] = __fma_rn(a[i], b[j], acc[i][j]);
            }
            #pragma unroll
            for (int i = 0; i < 4; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j)
                    acc[i][j] = JV < 0 ? rn24m(acc[i][j]) : (j < JV ? rn24(acc[i][j]) : rn24i(acc[i][j]));
        }
        if (t + 1 < nch) { STAGE_STORE(cur ^ 1) }
        __syncthreads();
    }
    #undef STAGE_STORE
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = bm + ty * 4 + i;
        if (r >= M) continue;
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int c = bn + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            if (c >= N) continue;
            const double x = acc[i][j];
            const bool ok = isfinite(x) && !((bad >> (i * 8 + j)) & 1u);
            const long long o = (long long)r * N + c;
            D[o] = __float_as_uint(d2f(x));
            F[o] = ok ? 0 : 1;
        }
    }
}

// ------------------------------------------------------------------------------------------- stage, fp32 pipe
// "stage" with T = 2 products per stage on the FP32 pipe, every stage certified by the monotonicity of rounding.
// Precondition, checked by the caller on the whole operands (xmx_kernels._fp32_exact): every product a * b is
// exact in binary32 (lsb(a) + lsb(b) >= -149 and |a| |b| < 2**126; bf16 and fp16 significands have at most 11
// bits, so a product has at most 22 <= 24). Per element and stage, x the fp32 accumulator and S the stage's
// exact sum x + a0 b0 + a1 b1:
//   p0 = a0 b0 (exact);  tl = RD(p0 + a1 b1), th = RU(p0 + a1 b1)   (one FMA each, so tl <= p0 + p1 <= th)
//   rl = RN(x + tl),     rh = RN(x + th)                            (RN is monotone: rl <= RN(S) <= rh)
// When rl == rh it is the stage's result, RN(S). Otherwise (about 0.08% of the stages of normally distributed
// bf16 data, 2% of fp16 ones: only when p0 + p1 is inexact in binary32 and the interval straddles a rounding
// midpoint) the stage is recomputed exactly by sum3_rn, still on the FP32 pipe. Zero results (the zero-sign
// rule) and non-finite ones are flagged; the caller recomputes those with xmx_stage_robust.
// Four stages per tile of BK = 8, NB tiles per barrier; 256 threads of R x 8 outputs (a 16 R x 128 tile; R = 8 is
// xmx_fma32's layout); the certificate's test is shared by the eight outputs of a row, so that the rare redo
// costs one branch per row.
__device__ __forceinline__ float mul_rn(float a, float b) {
    float d; asm("mul.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b)); return d;
}
__device__ __forceinline__ float add_rn(float a, float b) {
    float d; asm("add.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b)); return d;
}
__device__ __forceinline__ float fma_rm(float a, float b, float c) {
    float d; asm("fma.rm.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c)); return d;
}
__device__ __forceinline__ float fma_rp(float a, float b, float c) {
    float d; asm("fma.rp.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c)); return d;
}
__device__ __forceinline__ float sub_rn(float a, float b) {
    float d; asm("sub.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b)); return d;
}
__device__ __forceinline__ float add_rm(float a, float b) {
    float d; asm("add.rm.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b)); return d;
}
__device__ __forceinline__ float add_rp(float a, float b) {
    float d; asm("add.rp.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b)); return d;
}
__device__ __forceinline__ float add_rz(float a, float b) {
    float d; asm("add.rz.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b)); return d;
}
__device__ __forceinline__ void two_sum32(float a, float b, float& s, float& e) {
    s = add_rn(a, b);
    const float bb = sub_rn(s, a);
    e = add_rn(sub_rn(a, sub_rn(s, bb)), sub_rn(b, bb));
}
// RN(x + p0 + p1) of three binary32 numbers, correctly rounded, on the FP32 pipe: Boldo & Melquiond,
// "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd" (IEEE TC 57(4),
// 2008), the sum of three: (uh, ul) = TwoSum(p0, p1), (th, tl) = TwoSum(x, uh), v = RO(tl + ul), RN(th + v).
// Round to odd from the directed roundings: exact when RD == RU, else RZ with its last bit set. Every value
// here is a multiple of 2**-149 (the kernel's precondition), so nothing below 2**-126 is ever inexact.
__device__ __forceinline__ float sum3_rn(float x, float p0, float p1) {
    float uh, ul, th, tl;
    two_sum32(p0, p1, uh, ul);
    two_sum32(x, uh, th, tl);
    const float z = add_rz(tl, ul);
    const float v = add_rm(tl, ul) == add_rp(tl, ul) ? z : __uint_as_float(__float_as_uint(z) | 1u);
    return add_rn(th, v);
}

// whether rl[j] != rh[j] for some j: two chains of setp (short dependency chains), in PTX so that the compiler
// cannot keep eight separate predicates alive for the (rare) redo branch, which compares again itself
__device__ __forceinline__ bool any_differ8(const float (&l)[8], const float (&h)[8]) {
    u32 r;
    asm("{\n\t.reg .pred p, q;\n\t"
        "setp.neu.f32 p, %1, %2;\n\tsetp.neu.f32 q, %3, %4;\n\t"
        "setp.neu.or.f32 p, %5, %6, p;\n\tsetp.neu.or.f32 q, %7, %8, q;\n\t"
        "setp.neu.or.f32 p, %9, %10, p;\n\tsetp.neu.or.f32 q, %11, %12, q;\n\t"
        "setp.neu.or.f32 p, %13, %14, p;\n\tsetp.neu.or.f32 q, %15, %16, q;\n\t"
        "or.pred p, p, q;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(r) : "f"(l[0]), "f"(h[0]), "f"(l[1]), "f"(h[1]), "f"(l[2]), "f"(h[2]), "f"(l[3]), "f"(h[3]),
          "f"(l[4]), "f"(h[4]), "f"(l[5]), "f"(h[5]), "f"(l[6]), "f"(h[6]), "f"(l[7]), "f"(h[7]));
    return r != 0u;
}

__device__ __forceinline__ bool any_differ4(const float* l, const float* h) {
    u32 r;
    asm("{\n\t.reg .pred p, q;\n\t"
        "setp.neu.f32 p, %1, %2;\n\tsetp.neu.f32 q, %3, %4;\n\t"
        "setp.neu.or.f32 p, %5, %6, p;\n\tsetp.neu.or.f32 q, %7, %8, q;\n\t"
        "or.pred p, p, q;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(r) : "f"(l[0]), "f"(h[0]), "f"(l[1]), "f"(h[1]), "f"(l[2]), "f"(h[2]), "f"(l[3]), "f"(h[3]));
    return r != 0u;
}

// one row of a thread's outputs, one stage: the bounds rl = RN(x + RD(p0 + p1)), rh = RN(x + RU(p0 + p1))
__device__ __forceinline__ void stage_row(const float (&x)[8], float a0, float a1, const float (&b0)[8],
                                          const float (&b1)[8], float (&rl)[8], float (&rh)[8]) {
    #pragma unroll
    for (int j = 0; j < 8; ++j) {
        const float p0 = mul_rn(a0, b0[j]);
        rl[j] = add_rn(x[j], fma_rm(a1, b1[j], p0));
        rh[j] = add_rn(x[j], fma_rp(a1, b1[j], p0));
    }
}

// the redo of one row whose bounds differ somewhere (FX = 0 and the tensor-core kernel): per lane, only the
// outputs whose bounds differ (usually one of the eight), each picked by selects and recomputed by sum3_rn, so
// that a warp in which a lane needs a redo pays about one sum of three rather than eight. p0: the row's first
// products (exact), a1 b1: the second ones' factors.
__device__ __forceinline__ void redo_picked(const float (&x)[8], float (&l)[8], const float (&h)[8],
                                            const float (&p0)[8], float a1, const float (&b1)[8]) {
    u32 mask = 0;
    #pragma unroll
    for (int j = 0; j < 8; ++j) mask |= (l[j] != h[j] ? 1u : 0u) << j;
    while (mask) {
        const int js = __ffs(mask) - 1;
        mask &= mask - 1;
        float xs = x[0], p0s = p0[0], b1s = b1[0];
        #pragma unroll
        for (int j = 1; j < 8; ++j) {
            const bool s = j == js;
            xs = s ? x[j] : xs; p0s = s ? p0[j] : p0s; b1s = s ? b1[j] : b1s;
        }
        const float e = sum3_rn(xs, p0s, mul_rn(a1, b1s));
        #pragma unroll
        for (int j = 0; j < 8; ++j) l[j] = j == js ? e : l[j];
    }
}

template <int U, int MINB, int R, int P, int FX, int NB = 1>
__global__ void __launch_bounds__(256, MINB)
xmx_stage32(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ C,
            u32* __restrict__ D, unsigned char* __restrict__ F, int M, int N, int kp, int ldb) {
    __shared__ __align__(16) float As[2][NB * F_BK][F_BM];
    __shared__ __align__(16) float Bs[2][NB * F_BK][F_BN];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int bm = blockIdx.y * (16 * R), bn = blockIdx.x * F_BN;   // R rows per thread: 16 R rows per block
    const int ar = tid / 2, ak = (tid % 2) * 4;
    const bool aload = ar < 16 * R;
    const int bk = tid / 32, bc = (tid % 32) * 4;
    const bool arow_ok = aload && bm + ar < M;
    const bool bcol_ok = bn + bc < ldb;
    const float* Ap = A + (long long)(bm + ar) * kp + ak;
    const float* Bp = B + (long long)bk * ldb + bn + bc;

    // row i of a thread: ty * R + i (R <= 4); for R = 8, ty * 4 + i and the same 64 rows further
    #define S32_ROW(i) (R < 8 ? ty * R + (i) : (i) < 4 ? ty * 4 + (i) : 64 + ty * 4 + (i) - 4)
    float acc[R][8];
    #pragma unroll
    for (int i = 0; i < R; ++i) {
        int r = bm + S32_ROW(i);
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            int c = bn + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            acc[i][j] = (C != nullptr && r < M && c < N) ? C[(long long)r * N + c] : 0.0f;
        }
    }
    auto store = [&](int buf, int t, float4 ra, float4 rb) {
        const int k0 = t * F_BK;
        if (aload) {
            As[buf][k0 + ak + 0][ar] = ra.x; As[buf][k0 + ak + 1][ar] = ra.y; As[buf][k0 + ak + 2][ar] = ra.z;
            As[buf][k0 + ak + 3][ar] = ra.w;
        }
        *(float4*)&Bs[buf][k0 + bk][bc] = rb;
    };
    auto compute = [&](int cur) {
        #pragma unroll U
        for (int s = 0; s < NB * F_BK / 2; ++s) {
            float a0[R], a1[R], b0[8], b1[8];
            if (R == 2) {
                *(float2*)&a0[0] = *(const float2*)&As[cur][2 * s][ty * 2];
                *(float2*)&a1[0] = *(const float2*)&As[cur][2 * s + 1][ty * 2];
            } else {
                *(float4*)&a0[0] = *(const float4*)&As[cur][2 * s][ty * (R == 8 ? 4 : R)];
                *(float4*)&a1[0] = *(const float4*)&As[cur][2 * s + 1][ty * (R == 8 ? 4 : R)];
            }
            if (R == 8) {
                *(float4*)&a0[R - 4] = *(const float4*)&As[cur][2 * s][64 + ty * 4];
                *(float4*)&a1[R - 4] = *(const float4*)&As[cur][2 * s + 1][64 + ty * 4];
            }
            *(float4*)&b0[0] = *(const float4*)&Bs[cur][2 * s][tx * 4];
            *(float4*)&b0[4] = *(const float4*)&Bs[cur][2 * s][64 + tx * 4];
            *(float4*)&b1[0] = *(const float4*)&Bs[cur][2 * s + 1][tx * 4];
            *(float4*)&b1[4] = *(const float4*)&Bs[cur][2 * s + 1][64 + tx * 4];
            // P = 1: software-pipelined by one row (row i + 1's arithmetic is issued before row i's rarely taken
            // branch, so that the branch's dependency chain overlaps with independent work); P = 0: row by row
            // (fewer registers, more blocks per SM)
            float rl[1 + P][8], rh[1 + P][8];
            if (P) stage_row(acc[0], a0[0], a1[0], b0, b1, rl[0], rh[0]);
            #pragma unroll
            for (int i = 0; i < R; ++i) {
                const int w = P ? (i & 1) : 0;
                if (P && i + 1 < R) stage_row(acc[i + 1], a0[i + 1], a1[i + 1], b0, b1, rl[(i + 1) & P], rh[(i + 1) & P]);
                if (!P) stage_row(acc[i], a0[i], a1[i], b0, b1, rl[0], rh[0]);
                float (&l)[8] = rl[w];
                // FX = 0: one test per row, then only the outputs whose bounds differ are redone (redo_picked);
                // FX = 8 or 4: a test per group of FX outputs (the row, half of it), a group whose bounds differ
                // somewhere recomputed whole and selected (no branch per output: independent chains)
                if (FX == 0) {
                    if (__builtin_expect(any_differ8(l, rh[w]), 0)) {
                        float p0[8];
                        #pragma unroll
                        for (int j = 0; j < 8; ++j) p0[j] = mul_rn(a0[i], b0[j]);
                        redo_picked(acc[i], l, rh[w], p0, a1[i], b1);
                    }
                } else
                #pragma unroll
                for (int g = 0; g < 8; g += (FX ? FX : 8)) {
                    const bool differ = FX == 8 ? any_differ8(l, rh[w]) : any_differ4(&l[g], &rh[w][g]);
                    if (__builtin_expect(differ, 0)) {
                        #pragma unroll
                        for (int j = g; j < g + FX; ++j) {
                            const float e = sum3_rn(acc[i][j], mul_rn(a0[i], b0[j]), mul_rn(a1[i], b1[j]));
                            l[j] = l[j] != rh[w][j] ? e : l[j];
                        }
                    }
                }
                #pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = l[j];
            }
        }
    };
    stream_tiles<NB>(Ap, Bp, arow_ok, bcol_ok, ldb, kp / F_BK, store, compute);
    #pragma unroll
    for (int i = 0; i < R; ++i) {
        int r = bm + S32_ROW(i);
        if (r >= M) continue;
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            int c = bn + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            if (c < N) {
                const float x = acc[i][j];
                const long long o = (long long)r * N + c;
                D[o] = __float_as_uint(x);
                F[o] = !isfinite(x) || x == 0.0f;
            }
        }
    }
    #undef S32_ROW
}

// ------------------------------------------------------------------------------- stage, fp32 pipe + tensor cores
// xmx_stage32's arithmetic with each stage's first products p0 = a0 b0 taken from the tensor cores, which frees
// the FP32 pipe of its FMUL (one of six instructions per output and stage). One mma.m16n8k8 (f32 accumulation,
// zero C) per 16 x 8 outputs and stage, with A' zero except at k = 2s: A'[r][2s] = A[r][2s], so that every
// sum the tensor core forms has one nonzero term, the exact product (it fits binary32: <= 22 significant bits,
// and the caller checks that every nonzero product is a normal binary32 number; finite operands, so the zero
// terms are zeros). Zeros may come out with either sign, harmless as in xmx_stage32 (only a final zero's sign
// matters, and final zeros are flagged). Operands must be exact in the mma type: H = 0 bf16 (the top half of
// the binary32 pattern), H = 1 fp16 (caller-checked range and precision). The bounds, their test per row and
// the redo (redo_picked) are xmx_stage32's.
// Layout: 8 warps of 32 x 32 outputs (2 x 4 warps, a 64 x 128 block); a lane holds rows g, g+8, g+16, g+24
// and columns 2t, 2t+1 of each 8-column block (g = lane / 4, t = lane % 4: the mma accumulator layout), so
// acc[rb * 2 + h][cb * 2 + q] is row wm*32 + rb*16 + h*8 + g, column wn*32 + cb*8 + 2t + q. Shared memory holds
// the tile (BK = 8: four stages) rearranged so that each stage is four 16-byte loads per lane:
//   Aw[s][wm][g][t][rb*2+h]: the mma word of A[row][2s] where t == s, zero elsewhere (zeroed once)
//   A1[s][wm][g][rb*2+h]:    A[row][2s+1] (fp32)
//   Bw[s][wn][g][cb]:        the mma word of B[2s][col(cb, g)]   (lanes t != s multiply it by zero)
//   B1[s][wn][t][cb*2+q]:    B[2s+1][col] (fp32)
template <int H>
__device__ __forceinline__ u32 mma_word(float v) {
    if (H == 0) return __float_as_uint(v) >> 16;
    u32 w;
    asm("{\n\t.reg .b16 h;\n\tcvt.rn.f16.f32 h, %1;\n\tcvt.u32.u16 %0, h;\n\t}" : "=r"(w) : "f"(v));
    return w;
}

template <int H>
__device__ __forceinline__ void mma_p0(float (&d)[4], u32 a0, u32 a1, u32 b) {
    const float z = 0.0f;
    if (H == 0)
        asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %7, %7, %7};"
            : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]) : "r"(a0), "r"(a1), "r"(b), "f"(z));
    else
        asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %7, %7, %7};"
            : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]) : "r"(a0), "r"(a1), "r"(b), "f"(z));
}

template <int U, int MINB, int H>
__global__ void __launch_bounds__(256, MINB)
xmx_stage32tc(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ C,
              u32* __restrict__ D, unsigned char* __restrict__ F, int M, int N, int kp, int ldb) {
    __shared__ __align__(16) u32 Aw[2][4][2][8][4][4];
    __shared__ __align__(16) float A1[2][4][2][8][4];
    __shared__ __align__(16) u32 Bw[2][4][4][8][4];
    __shared__ __align__(16) float B1[2][4][4][4][8];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tq = lane & 3, wm = warp >> 2, wn = warp & 3;
    const int bm = blockIdx.y * 64, bn = blockIdx.x * F_BN;
    // the loaders: A, 64 rows x 8 k as float4 by threads 0..127; B, 8 k x 128 columns as float4 by all
    const int ar = tid / 2, ak = (tid % 2) * 4;
    const bool aload = ar < 64;
    const int lwm = ar >> 5, lrh = ((ar >> 4) & 1) * 2 + ((ar >> 3) & 1), lg = ar & 7;
    const int bk = tid / 32, bc = (tid % 32) * 4;
    const int lwn = bc >> 5, lcb = (bc >> 3) & 3, lrem = bc & 7;
    const bool arow_ok = aload && bm + ar < M;
    const bool bcol_ok = bn + bc < ldb;
    const float* Ap = A + (long long)(bm + ar) * kp + ak;
    const float* Bp = B + (long long)bk * ldb + bn + bc;

    float acc[4][8];
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = bm + wm * 32 + (i >> 1) * 16 + (i & 1) * 8 + g;
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int c = bn + wn * 32 + (j >> 1) * 8 + 2 * tq + (j & 1);
            acc[i][j] = (C != nullptr && r < M && c < N) ? C[(long long)r * N + c] : 0.0f;
        }
    }
    #pragma unroll
    for (int e = 0; e < 8; ++e) (&Aw[0][0][0][0][0][0])[tid * 8 + e] = 0u;   // the zeros stay (t != s)
    __syncthreads();                                   // the zeros, before any tile lands over them
    auto store = [&](int buf, int, float4 ra, float4 rb) {
        if (aload) {
            const float v[4] = {ra.x, ra.y, ra.z, ra.w};
            #pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int k = ak + e, s = k >> 1;
                if (k & 1) A1[buf][s][lwm][lg][lrh] = v[e];
                else Aw[buf][s][lwm][lg][s][lrh] = mma_word<H>(v[e]);
            }
        }
        const float v[4] = {rb.x, rb.y, rb.z, rb.w};
        const int s = bk >> 1;
        if (bk & 1) {
            #pragma unroll
            for (int e = 0; e < 4; ++e) B1[buf][s][lwn][(lrem + e) >> 1][lcb * 2 + ((lrem + e) & 1)] = v[e];
        } else {
            #pragma unroll
            for (int e = 0; e < 4; ++e) Bw[buf][s][lwn][lrem + e][lcb] = mma_word<H>(v[e]);
        }
    };
    auto compute = [&](int cur) {
        #pragma unroll U
        for (int s = 0; s < 4; ++s) {
            const uint4 aw = *(const uint4*)&Aw[cur][s][wm][g][tq][0];
            const float4 a1v = *(const float4*)&A1[cur][s][wm][g][0];
            const uint4 bw = *(const uint4*)&Bw[cur][s][wn][g][0];
            float b1[8];
            *(float4*)&b1[0] = *(const float4*)&B1[cur][s][wn][tq][0];
            *(float4*)&b1[4] = *(const float4*)&B1[cur][s][wn][tq][4];
            const u32 awr[4] = {aw.x, aw.y, aw.z, aw.w}, bwr[4] = {bw.x, bw.y, bw.z, bw.w};
            const float a1[4] = {a1v.x, a1v.y, a1v.z, a1v.w};
            #pragma unroll
            for (int rh2 = 0; rh2 < 2; ++rh2) {
                float p[2][8];
                #pragma unroll
                for (int cb = 0; cb < 4; ++cb) {
                    float d[4];
                    mma_p0<H>(d, awr[rh2 * 2], awr[rh2 * 2 + 1], bwr[cb]);
                    p[0][cb * 2] = d[0]; p[0][cb * 2 + 1] = d[1]; p[1][cb * 2] = d[2]; p[1][cb * 2 + 1] = d[3];
                }
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int i = rh2 * 2 + h;
                    float l[8], u[8];
                    #pragma unroll
                    for (int j = 0; j < 8; ++j) {
                        l[j] = add_rn(acc[i][j], fma_rm(a1[i], b1[j], p[h][j]));
                        u[j] = add_rn(acc[i][j], fma_rp(a1[i], b1[j], p[h][j]));
                    }
                    if (__builtin_expect(any_differ8(l, u), 0)) redo_picked(acc[i], l, u, p[h], a1[i], b1);
                    #pragma unroll
                    for (int j = 0; j < 8; ++j) acc[i][j] = l[j];
                }
            }
        }
    };
    stream_tiles<1>(Ap, Bp, arow_ok, bcol_ok, ldb, kp / F_BK, store, compute);
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = bm + wm * 32 + (i >> 1) * 16 + (i & 1) * 8 + g;
        if (r >= M) continue;
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int c = bn + wn * 32 + (j >> 1) * 8 + 2 * tq + (j & 1);
            if (c < N) {
                const float x = acc[i][j];
                const long long o = (long long)r * N + c;
                D[o] = __float_as_uint(x);
                F[o] = !isfinite(x) || x == 0.0f;
            }
        }
    }
}

// ------------------------------------------------------------------------------------------- stage, robust
__device__ __forceinline__ void two_sum(double a, double b, double& s, double& e) {
    s = __dadd_rn(a, b);
    double bb = __dsub_rn(s, a);
    e = __dadd_rn(__dsub_rn(a, __dsub_rn(s, bb)), __dsub_rn(b, bb));
}

// One thread per flagged element idx[e] (flat, row-major M x N): the whole chain from C, each stage rounded
// by the numpy path's algorithm. hard[e] = 1 when an error cascade was inexact (the CPU path redoes it).
template <int T>
__global__ void xmx_stage_robust(const float* __restrict__ A, const float* __restrict__ B,
                                 const float* __restrict__ C, const long long* __restrict__ idx, long long count,
                                 u32* __restrict__ D, unsigned char* __restrict__ hard, int N, int kp, int ldb,
                                 u32 nan_bits) {
    long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (e >= count) return;
    const long long o = idx[e];
    const long long r = o / N, c = o - r * N;
    double x = C != nullptr ? f2d(C[o]) : 0.0;
    const float* ap = A + r * kp;
    const float* bp = B + c;
    unsigned char h = 0;
    for (int k0 = 0; k0 < kp; k0 += T) {
        double p[T];
        double naive = x;
        bool negz = (x == 0.0) && signbit(x);
        #pragma unroll
        for (int q = 0; q < T; ++q) {
            p[q] = __dmul_rn(f2d(ap[k0 + q]), f2d(bp[(long long)(k0 + q) * ldb]));
            naive = __dadd_rn(naive, p[q]);
            negz = negz && (p[q] == 0.0) && signbit(p[q]);
        }
        if (!isfinite(naive)) { x = naive; continue; }   // NaN / inf by IEEE rules; stays non-finite
        double s = x, E = 0.0, ee;
        #pragma unroll
        for (int q = 0; q < T; ++q) {
            double err;
            two_sum(s, p[q], s, err);
            if (q == 0) E = err;
            else { two_sum(E, err, E, ee); if (ee != 0.0) h = 1; }
        }
        double hi, lo;
        two_sum(s, E, hi, lo);
        if (hi == 0.0 && lo == 0.0) { x = negz ? -0.0 : 0.0; continue; }
        // round to odd at 53 bits, then once to nearest-even fp32: RN24(RO53(v)) = RN24(v)
        long long hb = __double_as_longlong(hi);
        if (lo != 0.0 && (hb & 1LL) == 0) hb += ((lo > 0.0) != (hi < 0.0)) ? 1 : -1;
        x = f2d(d2f(__longlong_as_double(hb)));
    }
    const float xf = d2f(x);
    D[o] = isnan(xf) ? nan_bits : __float_as_uint(xf);
    hard[e] = h;
}

