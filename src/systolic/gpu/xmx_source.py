"""CUDA C source of the XMX GEMM kernels (compiled by NVRTC through :mod:`systolic.gpu.runtime`).

Kept apart from the Python driver (:mod:`systolic.gpu.xmx_kernels`) so that the source is one string with
one digest. Every float operation is spelled out with an ``_rn`` intrinsic; NVRTC runs with
``--fmad=false --ftz=false`` (runtime.NVRTC_OPTIONS), so nothing is contracted or flushed behind our back.

Kernels:

* ``xmx_decode`` -- 16-bit / tf32 bit patterns -> exact fp32 values, into a zero-padded M x Kp buffer,
  flushing input denormals when the platform's rule says so (the numbers of ``gemm._float_values``).
* ``xmx_fma32`` -- "sequential" (and tf32 "stage"): per output a chain of binary32 FMAs in K order, which is
  the model itself (docs/xmx.md: one product per step = IEEE 754 fusedMultiplyAdd in binary32).
* ``xmx_stage<T>`` -- "stage" with T = 2, 4, 8 products per systolic stage: binary64 FMAs, one rounding to
  24 bits per stage by Veltkamp's splitting, and the a-posteriori proof of ``systolic.xmx.native`` evaluated
  per element in the epilogue (flag = not proven).
* ``xmx_stage_robust<T>`` -- one thread per flagged element: TwoSum cascade, error cascade and round-to-odd
  (the numpy path's algorithm, kernels.round_sum_fp32), with IEEE special values and the zero-sign rule;
  flags only three-level cancellation ("hard"), which the caller sends to the exact CPU path.
* ``xmx_stats_a`` / ``xmx_stats_b`` -- per K chunk of 16: the smallest power of two dividing every element
  (a lower bound from the exponent and the format's significant bits) and a power-of-two bound on the largest
  magnitude.
* ``xmx_imma<SA,SB>`` -- integer DPAS: mma.sync m16n8k32 s8/u8 tensor-core products (exact: K chunks of at
  most 32768 keep every partial sum below 2**31) added to C modulo 2**32.
"""

SOURCE = r"""
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

// A (rows x kp, row-major): LEA[r * nch + c] = (min lsb, bit pattern of max |a|) over chunk c of row r
extern "C" __global__ void xmx_stats_a(const float* __restrict__ A, int2* __restrict__ LEA, long long rows,
                                       long long kp, int sig) {
    long long nch = kp / 16;
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (idx >= rows * nch) return;
    long long r = idx / nch, c = idx - r * nch;
    const float* p = A + r * kp + c * 16;
    int l = BIG_LSB; u32 m = 0u;
    #pragma unroll
    for (int q = 0; q < 16; ++q) { float v = p[q]; l = min(l, lsb_of(v, sig)); m = max(m, mag_of(v)); }
    LEA[idx] = make_int2(l, (int)m);
}

// B (kp x ldb, row-major): LEB[c * ldb + j]
extern "C" __global__ void xmx_stats_b(const float* __restrict__ B, int2* __restrict__ LEB, long long kp,
                                       long long ldb, int sig) {
    long long nch = kp / 16;
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (idx >= nch * ldb) return;
    long long c = idx / ldb, j = idx - c * ldb;
    const float* p = B + c * 16 * ldb + j;
    int l = BIG_LSB; u32 m = 0u;
    #pragma unroll
    for (int q = 0; q < 16; ++q) { float v = p[q * ldb]; l = min(l, lsb_of(v, sig)); m = max(m, mag_of(v)); }
    LEB[idx] = make_int2(l, (int)m);
}

// ------------------------------------------------------------------------------------------- fp32 FMA chain
// D = C + A @ B with x = fma(a_k, b_k, x) in K order per element (binary32, RNE, denormals kept). A: M x kp,
// B: kp x ldb (ldb % 4 == 0, kp % 8 == 0, both zero-padded), C: M x N fp32 or null, D: M x N fp32 bits.
// 128 x 128 tile, BK = 8, 256 threads of 8 x 8 outputs, double-buffered shared memory.
#define F_BM 128
#define F_BN 128
#define F_BK 8
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
    float4 ra = arow_ok ? *(const float4*)Ap : make_float4(0.f, 0.f, 0.f, 0.f);
    float4 rb = bcol_ok ? *(const float4*)Bp : make_float4(0.f, 0.f, 0.f, 0.f);
    As[0][ak + 0][ar] = ra.x; As[0][ak + 1][ar] = ra.y; As[0][ak + 2][ar] = ra.z; As[0][ak + 3][ar] = ra.w;
    *(float4*)&Bs[0][bk][bc] = rb;
    __syncthreads();
    const int ntiles = kp / F_BK;
    for (int t = 0; t < ntiles; ++t) {
        const int cur = t & 1;
        if (t + 1 < ntiles) {
            ra = arow_ok ? *(const float4*)(Ap + (t + 1) * F_BK) : make_float4(0.f, 0.f, 0.f, 0.f);
            rb = bcol_ok ? *(const float4*)(Bp + (long long)(t + 1) * F_BK * ldb) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
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
        if (t + 1 < ntiles) {
            const int nxt = cur ^ 1;
            As[nxt][ak + 0][ar] = ra.x; As[nxt][ak + 1][ar] = ra.y; As[nxt][ak + 2][ar] = ra.z;
            As[nxt][ak + 3][ar] = ra.w;
            *(float4*)&Bs[nxt][bk][bc] = rb;
        }
        __syncthreads();
    }
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
        // the chunk's test, from x at the chunk's start: the exact-magnitude form (see xmx_stage_tc)
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

// ------------------------------------------------------------------------------------------- stage, tensor cores
// The same model as xmx_stage, with each stage's products summed into the accumulator by FP64 tensor-core
// instructions (mma.sync m8n8k4 .f64: D = C + A B over k = 4; for T = 2 the lanes of k = 2, 3 carry zeros) and
// the one rounding per stage by Veltkamp on the DP pipe. The per-chunk test is the exact-magnitude form of the
// proof: at a chunk's start, with L = min(lsb(x), La + Lb) and P = max|a| * max|b| over the chunk, every
// partial sum of the chunk's stages -- in any order, which is what frees us from the tensor core's internal
// order -- is a multiple of 2**L of magnitude at most (|x| + 16 P) (1 + 2**-24)**8; the chunk passes when that
// bound times (1 + 2**-17) stays below 2**min(53 + L, 127) and La + Lb >= -149. Exact sums make the order and
// the internal rounding of the tensor core irrelevant except for the sign of an exact zero, so zero results are
// flagged too (the robust kernel applies the zero-sign rule).
// 256 threads = 8 warps of 32 x 32 outputs (4 x 4 tiles of 8 x 8), block 128 x 64, K chunks of 16.
#define D_BM 128
#define D_BN 64
#define D_LDA (D_BM + 4)      // padded rows of the shared tiles (bank spread of the k-strided fragment loads)
#define D_LDB (D_BN + 4)
__device__ __forceinline__ void dmma(double& c0, double& c1, double a, double b) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(c0), "+d"(c1) : "d"(a), "d"(b));
}

template <int T>
__global__ void __launch_bounds__(256)
xmx_stage_tc(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ C,
             const int2* __restrict__ LEA, const int2* __restrict__ LEB, u32* __restrict__ D,
             unsigned char* __restrict__ F, int M, int N, int kp, int ldb) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    double (*As)[S_BK][D_LDA] = reinterpret_cast<double (*)[S_BK][D_LDA]>(smem_raw);
    double (*Bs)[S_BK][D_LDB] = reinterpret_cast<double (*)[S_BK][D_LDB]>(smem_raw + 2 * S_BK * D_LDA * 8);
    int2 (*LEAs)[D_BM] = reinterpret_cast<int2 (*)[D_BM]>(smem_raw + 2 * S_BK * (D_LDA + D_LDB) * 8);
    int2 (*LEBs)[D_BN] = reinterpret_cast<int2 (*)[D_BN]>(smem_raw + 2 * S_BK * (D_LDA + D_LDB) * 8 + 2 * D_BM * 8);
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / 2, wn = warp % 2;              // warp tile rows wm*32.., cols wn*32..
    const int gr = lane / 4, gk = lane % 4;              // fragment row (A) / column (B) and k lane
    const int bm = blockIdx.y * D_BM, bn = blockIdx.x * D_BN;
    const int nch = kp / S_BK;
    // A tile 128 rows x 16 k: two float4 per thread; B tile 16 k x 64 cols: one float4 per thread
    const int ar = tid / 4, ak = (tid % 4) * 4;          // rows ar and ar + 64
    const int bk = tid / 16, bc = (tid % 16) * 4;
    const bool a0ok = bm + ar < M, a1ok = bm + ar + 64 < M;
    const bool bcol_ok = bn + bc < ldb;
    const float* Ap = A + (long long)(bm + ar) * kp + ak;
    const float* Bp = B + (long long)bk * ldb + bn + bc;
    const float4 z4 = make_float4(0.f, 0.f, 0.f, 0.f);
    const int2 none = make_int2(BIG_LSB, 0);

    double acc[4][4][2];
    u32 bad = 0u;                                        // bit (mt * 4 + nt) * 2 + e
    #pragma unroll
    for (int mt = 0; mt < 4; ++mt)
        #pragma unroll
        for (int nt = 0; nt < 4; ++nt)
            #pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int r = bm + wm * 32 + mt * 8 + gr, c = bn + wn * 32 + nt * 8 + gk * 2 + e;
                acc[mt][nt][e] = f2d((C != nullptr && r < M && c < N) ? C[(long long)r * N + c] : 0.0f);
            }
    float4 ra0 = a0ok ? *(const float4*)Ap : z4;
    float4 ra1 = a1ok ? *(const float4*)(Ap + 64LL * kp) : z4;
    float4 rb = bcol_ok ? *(const float4*)Bp : z4;
    int2 rl = none;
    if (tid < D_BM) rl = (bm + tid < M) ? LEA[(long long)(bm + tid) * nch] : none;
    else if (tid < D_BM + D_BN) rl = (bn + tid - D_BM < ldb) ? LEB[bn + tid - D_BM] : none;

    #define TC_STORE(buf)                                                                             \
        As[buf][ak + 0][ar] = f2d(ra0.x); As[buf][ak + 1][ar] = f2d(ra0.y);                           \
        As[buf][ak + 2][ar] = f2d(ra0.z); As[buf][ak + 3][ar] = f2d(ra0.w);                           \
        As[buf][ak + 0][ar + 64] = f2d(ra1.x); As[buf][ak + 1][ar + 64] = f2d(ra1.y);                 \
        As[buf][ak + 2][ar + 64] = f2d(ra1.z); As[buf][ak + 3][ar + 64] = f2d(ra1.w);                 \
        Bs[buf][bk][bc + 0] = f2d(rb.x); Bs[buf][bk][bc + 1] = f2d(rb.y);                             \
        Bs[buf][bk][bc + 2] = f2d(rb.z); Bs[buf][bk][bc + 3] = f2d(rb.w);                             \
        if (tid < D_BM) LEAs[buf][tid] = rl; else if (tid < D_BM + D_BN) LEBs[buf][tid - D_BM] = rl;

    TC_STORE(0)
    __syncthreads();
    for (int t = 0; t < nch; ++t) {
        const int cur = t & 1;
        if (t + 1 < nch) {
            ra0 = a0ok ? *(const float4*)(Ap + (t + 1) * S_BK) : z4;
            ra1 = a1ok ? *(const float4*)(Ap + 64LL * kp + (t + 1) * S_BK) : z4;
            rb = bcol_ok ? *(const float4*)(Bp + (long long)(t + 1) * S_BK * ldb) : z4;
            if (tid < D_BM) rl = (bm + tid < M) ? LEA[(long long)(bm + tid) * nch + t + 1] : none;
            else if (tid < D_BM + D_BN)
                rl = (bn + tid - D_BM < ldb) ? LEB[(long long)(t + 1) * ldb + bn + tid - D_BM] : none;
        }
        // the chunk's test from x at its start
        #pragma unroll
        for (int mt = 0; mt < 4; ++mt) {
            const int2 lea = LEAs[cur][wm * 32 + mt * 8 + gr];
            const double ma = f2d(__uint_as_float((u32)lea.y));
            #pragma unroll
            for (int nt = 0; nt < 4; ++nt)
                #pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int2 leb = LEBs[cur][wn * 32 + nt * 8 + gk * 2 + e];
                    const double x = acc[mt][nt][e];
                    const int ef = (__double2hiint(x) >> 20) & 0x7FF;
                    const int lp = lea.x + leb.x;
                    const int L = min(ef ? ef - 1046 : BIG_LSB, lp);
                    const int E = min(53 + L, 127);              // threshold 2**E (1 - 2**-17)
                    const double thr = __hiloint2double(((E + 1022) << 20) | 0xFFFF0, 0);
                    const double bnd = __fma_rn(__dmul_rn(ma, f2d(__uint_as_float((u32)leb.y))), 16.0, fabs(x));
                    const bool fail = !(bnd <= thr) | (lp < -149);
                    bad |= fail ? (1u << ((mt * 4 + nt) * 2 + e)) : 0u;
                }
        }
        #pragma unroll
        for (int s = 0; s < S_BK / T; ++s) {
            // T = 2: one stage per mma, the lanes of k = 2, 3 hold zeros; T = 4: four real products
            #pragma unroll
            for (int h = 0; h < (T == 2 ? 1 : T / 4); ++h) {
                const int k = s * T + h * 4 + gk;
                const bool live = T == 2 ? gk < 2 : true;
                double af[4], bf[4];
                #pragma unroll
                for (int mt = 0; mt < 4; ++mt) af[mt] = live ? As[cur][k][wm * 32 + mt * 8 + gr] : 0.0;
                #pragma unroll
                for (int nt = 0; nt < 4; ++nt) bf[nt] = live ? Bs[cur][k][wn * 32 + nt * 8 + gr] : 0.0;
                #pragma unroll
                for (int mt = 0; mt < 4; ++mt)
                    #pragma unroll
                    for (int nt = 0; nt < 4; ++nt) dmma(acc[mt][nt][0], acc[mt][nt][1], af[mt], bf[nt]);
            }
            #pragma unroll
            for (int mt = 0; mt < 4; ++mt)
                #pragma unroll
                for (int nt = 0; nt < 4; ++nt)
                    #pragma unroll
                    for (int e = 0; e < 2; ++e) acc[mt][nt][e] = rn24(acc[mt][nt][e]);
        }
        if (t + 1 < nch) { TC_STORE(cur ^ 1) }
        __syncthreads();
    }
    #undef TC_STORE
    #pragma unroll
    for (int mt = 0; mt < 4; ++mt)
        #pragma unroll
        for (int nt = 0; nt < 4; ++nt)
            #pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int r = bm + wm * 32 + mt * 8 + gr, c = bn + wn * 32 + nt * 8 + gk * 2 + e;
                if (r >= M || c >= N) continue;
                const double x = acc[mt][nt][e];
                const bool ok = isfinite(x) && x != 0.0 && !((bad >> ((mt * 4 + nt) * 2 + e)) & 1u);
                const long long o = (long long)r * N + c;
                D[o] = __float_as_uint(d2f(x));
                F[o] = ok ? 0 : 1;
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

// ------------------------------------------------------------------------------------------- integer DPAS
// D = C + A @ B mod 2**32: A (M x kp, int8/uint8 row-major), Bt (N x kp: B transposed), C/D int32 (M x N;
// C may alias D or be null). kp % 64 == 0 and kp <= 32768 per call (the caller splits K): every partial sum
// of at most 32768 products of magnitude <= 255 * 255 < 2**16 stays below 2**31, so the tensor core's int32
// accumulation is exact and the only wrap-around is the final uint32 addition of C.
#define I_BM 128
#define I_BN 128
#define I_BK 64
#define I_LD 80   // bytes per shared row: 64 + 16 of padding (conflict-free 32-bit fragment loads)

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool ok) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    int n = ok ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(gmem), "r"(n));
}

// Bt (n x kp) = B (k x n) transposed, zero past k: one 32 x 32 byte tile per block of 32 x 8 threads through
// shared memory, so that reads and writes are both row-contiguous.
extern "C" __global__ void xmx_transpose_u8(const unsigned char* __restrict__ B, unsigned char* __restrict__ Bt,
                                            int k, int n, int kp) {
    __shared__ unsigned char tile[32][33];
    const int k0 = blockIdx.y * 32, n0 = blockIdx.x * 32;
    #pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int kk = k0 + threadIdx.y + 8 * q, nn = n0 + threadIdx.x;
        tile[threadIdx.y + 8 * q][threadIdx.x] = (kk < k && nn < n) ? B[(long long)kk * n + nn] : 0;
    }
    __syncthreads();
    #pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int nn = n0 + threadIdx.y + 8 * q, kk = k0 + threadIdx.x;
        if (nn < n && kk < kp) Bt[(long long)nn * kp + kk] = tile[threadIdx.x][threadIdx.y + 8 * q];
    }
}

template <bool SA, bool SB>
__device__ __forceinline__ void imma(int (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
    if (SA && SB)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n" : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else if (SA && !SB)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n" : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else if (!SA && SB)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n" : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n" : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <bool SA, bool SB>
__global__ void __launch_bounds__(256)
xmx_imma(const unsigned char* __restrict__ A, const unsigned char* __restrict__ Bt, const int* C, int* D,
         int M, int N, int kp, int k0, int k1) {
    __shared__ __align__(16) unsigned char As[2][I_BM * I_LD];
    __shared__ __align__(16) unsigned char Bs[2][I_BN * I_LD];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / 4, wn = warp % 4;          // warp tile: 64 rows x 32 cols
    const int g = lane / 4, tg = lane % 4;
    const int bm = blockIdx.y * I_BM, bn = blockIdx.x * I_BN;
    int acc[4][4][4];
    #pragma unroll
    for (int a = 0; a < 4; ++a)
        #pragma unroll
        for (int b = 0; b < 4; ++b)
            #pragma unroll
            for (int q = 0; q < 4; ++q) acc[a][b][q] = 0;
    // loader: each tile is 128 rows x 64 bytes = 512 chunks of 16 bytes; two per thread per operand
    auto load = [&](int buf, int kk) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int ch = tid + h * 256, row = ch / 4, col = (ch % 4) * 16;
            const bool aok = bm + row < M, bok = bn + row < N;
            cp_async16(&As[buf][row * I_LD + col], A + (long long)(aok ? bm + row : 0) * kp + kk + col, aok);
            cp_async16(&Bs[buf][row * I_LD + col], Bt + (long long)(bok ? bn + row : 0) * kp + kk + col, bok);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    };
    const int ntiles = (k1 - k0) / I_BK;
    load(0, k0);
    for (int t = 0; t < ntiles; ++t) {
        const int cur = t & 1;
        if (t + 1 < ntiles) { load(cur ^ 1, k0 + (t + 1) * I_BK); asm volatile("cp.async.wait_group 1;\n" ::); }
        else { asm volatile("cp.async.wait_group 0;\n" ::); }
        __syncthreads();
        const unsigned char* as = As[cur];
        const unsigned char* bs = Bs[cur];
        #pragma unroll
        for (int ks = 0; ks < I_BK; ks += 32) {
            u32 af[4][4], bf[4][2];
            #pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
                const int r0 = wm * 64 + mt * 16 + g;
                af[mt][0] = *(const u32*)&as[r0 * I_LD + ks + tg * 4];
                af[mt][1] = *(const u32*)&as[(r0 + 8) * I_LD + ks + tg * 4];
                af[mt][2] = *(const u32*)&as[r0 * I_LD + ks + 16 + tg * 4];
                af[mt][3] = *(const u32*)&as[(r0 + 8) * I_LD + ks + 16 + tg * 4];
            }
            #pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
                const int c0 = wn * 32 + nt * 8 + g;
                bf[nt][0] = *(const u32*)&bs[c0 * I_LD + ks + tg * 4];
                bf[nt][1] = *(const u32*)&bs[c0 * I_LD + ks + 16 + tg * 4];
            }
            #pragma unroll
            for (int mt = 0; mt < 4; ++mt)
                #pragma unroll
                for (int nt = 0; nt < 4; ++nt) imma<SA, SB>(acc[mt][nt], af[mt], bf[nt]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int mt = 0; mt < 4; ++mt)
        #pragma unroll
        for (int nt = 0; nt < 4; ++nt)
            #pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int r = bm + wm * 64 + mt * 16 + g + (q >= 2 ? 8 : 0);
                const int c = bn + wn * 32 + nt * 8 + tg * 2 + (q & 1);
                if (r < M && c < N) {
                    const long long o = (long long)r * N + c;
                    const u32 base = C != nullptr ? (u32)C[o] : 0u;
                    D[o] = (int)(base + (u32)acc[mt][nt][q]);
                }
            }
}

// Version 2: blocks of WM x 2 warps (64 x 64 warp tiles: WM = 2 -> 128 x 128, WM = 4 -> 256 x 128),
// ldmatrix.x4 fragment loads, a 4-deep cp.async pipeline in dynamic shared memory (i2_smem(WM) bytes).
// Same contract as xmx_imma.
#define I2_STAGES 4
#define I2_TILE (128 * I_LD)
__device__ __forceinline__ void ldsm_x4(u32 (&r)[4], const void* p) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

template <bool SA, bool SB, int WM>
__global__ void __launch_bounds__(WM * 64)
xmx_imma2(const unsigned char* __restrict__ A, const unsigned char* __restrict__ Bt, const int* C, int* D,
          int M, int N, int kp, int k0, int k1) {
    // WM x 2 warps of 64 x 64: block WM * 64 rows x 128 columns, WM * 64 threads
    constexpr int NT = WM * 64, BMr = WM * 64, ATILE = BMr * I_LD;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    unsigned char* As = smem_raw;                          // [I2_STAGES][BMr * I_LD]
    unsigned char* Bs = smem_raw + I2_STAGES * ATILE;      // [I2_STAGES][128 * I_LD]
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / 2, wn = warp % 2;                // warp tile: 64 rows x 64 cols
    const int g = lane / 4, tg = lane % 4;
    const int bm = blockIdx.y * BMr, bn = blockIdx.x * 128;
    int acc[4][8][4];
    #pragma unroll
    for (int a = 0; a < 4; ++a)
        #pragma unroll
        for (int b = 0; b < 8; ++b)
            #pragma unroll
            for (int q = 0; q < 4; ++q) acc[a][b][q] = 0;
    auto load = [&](int slot, int kk) {
        #pragma unroll
        for (int h = 0; h < 4; ++h) {              // A: BMr rows x 4 chunks of 16 bytes = 4 per thread
            const int ch = tid + h * NT, row = ch / 4, col = (ch % 4) * 16;
            const bool aok = bm + row < M;
            cp_async16(As + slot * ATILE + row * I_LD + col, A + (long long)(aok ? bm + row : 0) * kp + kk + col, aok);
        }
        #pragma unroll
        for (int h = 0; h < 512 / NT; ++h) {       // B: 128 rows x 4 chunks
            const int ch = tid + h * NT, row = ch / 4, col = (ch % 4) * 16;
            const bool bok = bn + row < N;
            cp_async16(Bs + slot * I2_TILE + row * I_LD + col, Bt + (long long)(bok ? bn + row : 0) * kp + kk + col, bok);
        }
    };
    const int ntiles = (k1 - k0) / I_BK;
    #pragma unroll
    for (int sI = 0; sI < I2_STAGES - 1; ++sI) {
        if (sI < ntiles) load(sI, k0 + sI * I_BK);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    // per-lane ldmatrix row addresses (the fragment layouts of mma.m16n8k32 .s8/.u8 and of ldmatrix .x4:
    // lanes 8i..8i+7 address the rows of matrix i; register i of lane l holds word l % 4 of row l / 4 of it)
    const int mi = lane / 8, ri = lane % 8;
    const int a_row = (mi & 1) * 8 + ri, a_col = (mi >> 1) * 16;   // (r0-7,k0-15) (r8-15,k0-15) (r0-7,k16-31) (r8-15,k16-31)
    const int b_row = (mi >> 1) * 8 + ri, b_col = (mi & 1) * 16;   // (n0-7,k0-15) (n0-7,k16-31) (n8-15,k0-15) (n8-15,k16-31)
    for (int t = 0; t < ntiles; ++t) {
        asm volatile("cp.async.wait_group %0;\n" :: "n"(I2_STAGES - 2));
        __syncthreads();
        const int nt_load = t + I2_STAGES - 1;   // its slot was read in iteration t - 1, before the barrier
        if (nt_load < ntiles) load(nt_load % I2_STAGES, k0 + nt_load * I_BK);
        asm volatile("cp.async.commit_group;\n" ::);
        const unsigned char* as = As + (t % I2_STAGES) * ATILE;
        const unsigned char* bs = Bs + (t % I2_STAGES) * I2_TILE;
        #pragma unroll
        for (int ks = 0; ks < I_BK; ks += 32) {
            u32 af[4][4], bf[8][2];
            #pragma unroll
            for (int mt = 0; mt < 4; ++mt)
                ldsm_x4(af[mt], as + (wm * 64 + mt * 16 + a_row) * I_LD + ks + a_col);
            #pragma unroll
            for (int np = 0; np < 4; ++np) {
                u32 r[4];
                ldsm_x4(r, bs + (wn * 64 + np * 16 + b_row) * I_LD + ks + b_col);
                bf[2 * np][0] = r[0]; bf[2 * np][1] = r[1]; bf[2 * np + 1][0] = r[2]; bf[2 * np + 1][1] = r[3];
            }
            #pragma unroll
            for (int mt = 0; mt < 4; ++mt)
                #pragma unroll
                for (int nt = 0; nt < 8; ++nt) imma<SA, SB>(acc[mt][nt], af[mt], bf[nt]);
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
    #pragma unroll
    for (int mt = 0; mt < 4; ++mt)
        #pragma unroll
        for (int nt = 0; nt < 8; ++nt)
            #pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int r = bm + wm * 64 + mt * 16 + g + (q >= 2 ? 8 : 0);
                const int c = bn + wn * 64 + nt * 8 + tg * 2 + (q & 1);
                if (r < M && c < N) {
                    const long long o = (long long)r * N + c;
                    const u32 base = C != nullptr ? (u32)C[o] : 0u;
                    D[o] = (int)(base + (u32)acc[mt][nt][q]);
                }
            }
}
"""

#: dynamic shared memory of xmx_stage: two buffers of A (16 x 64) and B (16 x 128) doubles, the (lsb, max) rows
#: and the maxima as doubles
S_SMEM = 2 * 16 * (64 + 128) * 8 + 2 * (64 + 128) * 8 + 2 * (64 + 128) * 8

#: the stage kernel's variant (JV, MINB): JV of a thread's 8 columns rounded by Veltkamp on the DP pipe, the
#: others on the integer pipe (JV = -1: all by the magic constant, rn24m); MINB blocks per SM asked of the
#: compiler (2 caps registers at 128)
STAGE_VARIANT = (8, 1)
#: the variants compiled for T = 2 (benchmarks time them); T = 4 and 8 get STAGE_VARIANT only
STAGE_VARIANTS = ((8, 1), (8, 2), (-1, 1), (-1, 2))

def i2_smem(wm: int) -> int:
    """Dynamic shared memory of xmx_imma2<., ., wm>: 4 stages of A (wm * 64 rows) and B (128 rows) of 80 bytes."""
    return 4 * (wm * 64 + 128) * 80


#: which integer kernel runs: (2, WM) (ldmatrix, 4-stage pipeline, WM x 2 warps) or (1, 0)
IMMA_VERSION = (2, 4)
IMMA_VERSIONS = ((1, 0), (2, 2), (2, 4))

#: dynamic shared memory of xmx_stage_tc: two buffers of A (16 x 132) and B (16 x 68) doubles, the (lsb, max) rows
D_SMEM = 2 * 16 * (132 + 68) * 8 + 2 * (128 + 64) * 8
#: which stage kernel runs: "tc" (FP64 tensor cores for the products) or "simt" (binary64 FMAs)
STAGE_KERNEL = "simt"

#: C++ name expressions instantiated by NVRTC
NAMES = tuple(f"xmx_stage<2, {jv}, {mb}>" for jv, mb in STAGE_VARIANTS) + tuple(
    f"xmx_stage<{t}, {STAGE_VARIANT[0]}, {STAGE_VARIANT[1]}>" for t in (4, 8)) + ( "xmx_stage_robust<1>", "xmx_stage_robust<2>",
         "xmx_stage_robust<4>", "xmx_stage_robust<8>", "xmx_imma<true, true>", "xmx_imma<true, false>",
         "xmx_imma<false, true>", "xmx_imma<false, false>") + tuple(
    f"xmx_imma2<{sa}, {sb}, {wm}>" for sa in ("true", "false") for sb in ("true", "false") for wm in (2, 4)) + ( "xmx_stage_tc<2>", "xmx_stage_tc<4>",
                "xmx_stage_tc<8>")
