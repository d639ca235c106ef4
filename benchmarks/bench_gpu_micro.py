"""Throughput microbenchmarks on the H100 (device only): FP64 tensor-core shapes, DP ops, rounding on the
DP and integer pipes, and whether they overlap (benchmarks/results/gpu_xmx.md, fourth session).

Run: python3 benchmarks/bench_gpu_micro.py (needs CuPy and a GPU)."""
import cupy as cp
import numpy as np
SRC = r'''
typedef unsigned long long u64;
__device__ __forceinline__ double rn24(double y) {
    double c = __dmul_rn(y, 536870913.0); double d = __dsub_rn(c, y); return __dsub_rn(c, d); }
__device__ __forceinline__ double rn24i(double y) {
    u64 u = (u64)__double_as_longlong(y);
    u = (u + 0x0FFFFFFFull + ((u >> 29) & 1ull)) & ~0x1FFFFFFFull;
    return __longlong_as_double((long long)u); }
__device__ __forceinline__ void m884(double& c0, double& c1, double a, double b) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(c0), "+d"(c1) : "d"(a), "d"(b)); }
__device__ __forceinline__ void m1684(double* c, double a0, double a1, double b) {
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3]) : "d"(a0), "d"(a1), "d"(b)); }
__device__ __forceinline__ void m16816(double* c, const double* a, const double* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
                 : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3]) : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3])); }
// MODE 0: m8n8k4, 1: m16n8k4, 2: m16n8k16, 3: DFMA, 4: rn24 (Veltkamp), 5: rn24i, 6: m16n8k4 + DADD+rn24 on 4 acc
template <int MODE>
__global__ void __launch_bounds__(256) bench(double* out, int iters, double s) {
    double acc[16]; double a[8], b[4];
    for (int i = 0; i < 16; ++i) acc[i] = s * (threadIdx.x + i);
    for (int i = 0; i < 8; ++i) a[i] = s + i;
    for (int i = 0; i < 4; ++i) b[i] = s - i;
    for (int it = 0; it < iters; ++it) {
        if (MODE == 0) { for (int j = 0; j < 8; ++j) m884(acc[2*j], acc[2*j+1], a[j], b[j&3]); }
        if (MODE == 1) { for (int j = 0; j < 4; ++j) m1684(acc + 4*j, a[2*j], a[2*j+1], b[j]); }
        if (MODE == 2) { for (int j = 0; j < 4; ++j) m16816(acc + 4*j, a, b); }
        if (MODE == 3) { for (int j = 0; j < 16; ++j) acc[j] = __fma_rn(a[j&7], b[j&3], acc[j]); }
        if (MODE == 4) { for (int j = 0; j < 16; ++j) acc[j] = rn24(__dadd_rn(acc[j], a[j&7])); }
        if (MODE == 5) { for (int j = 0; j < 16; ++j) acc[j] = rn24i(__dadd_rn(acc[j], a[j&7])); }
        if (MODE == 6) { double p[4][4];
            for (int j = 0; j < 4; ++j) { p[j][0]=p[j][1]=p[j][2]=p[j][3]=-0.0; m1684(p[j], a[2*j], a[2*j+1], b[j]); }
            for (int j = 0; j < 16; ++j) acc[j] = rn24(__dadd_rn(acc[j], p[j>>2][j&3])); }
        if (MODE == 7) { double p[4][4];
            for (int j = 0; j < 4; ++j) { p[j][0]=p[j][1]=p[j][2]=p[j][3]=-0.0; m1684(p[j], a[2*j], a[2*j+1], b[j]); }
            for (int j = 0; j < 16; ++j) acc[j] = (j & 1) ? rn24i(__dadd_rn(acc[j], p[j>>2][j&3])) : rn24(__dadd_rn(acc[j], p[j>>2][j&3])); }
        if (MODE == 8) { for (int j = 0; j < 16; ++j) acc[j] = (j & 1) ? rn24i(__dadd_rn(acc[j], a[j&7])) : rn24(__dadd_rn(acc[j], a[j&7])); }
        if (MODE == 9) { double p[8][2];
            for (int j = 0; j < 8; ++j) { p[j][0]=p[j][1]=-0.0; m884(p[j][0], p[j][1], a[j], b[j&3]); }
            for (int j = 0; j < 16; ++j) acc[j] = rn24(__dadd_rn(acc[j], p[j>>1][j&1])); }
        for (int i = 0; i < 8; ++i) a[i] = __dadd_rn(a[i], 1e-300);
    }
    double t = 0; for (int i = 0; i < 16; ++i) t += acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = t;
}
'''
names = [f"bench<{m}>" for m in range(10)]
mod = cp.RawModule(code=SRC, options=("--std=c++17", "-arch=sm_90"), name_expressions=names)
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
clk = cp.cuda.Device().attributes["ClockRate"] * 1e3
out = cp.empty(sms * 8 * 256, dtype=cp.float64)
desc = {0: ("m8n8k4 DMMA", 8 * 256), 1: ("m16n8k4 DMMA", 4 * 512), 2: ("m16n8k16 DMMA", 4 * 2048),
        3: ("DFMA", 16 * 32), 4: ("DADD+rn24 (4 DP)", 16 * 32), 5: ("DADD+rn24i", 16 * 32),
        6: ("m16n8k4 + DADD+rn24 x16", 16 * 32), 7: ("m16n8k4 + DADD + half rn24/half rn24i", 16 * 32),
        8: ("DADD + half rn24 / half rn24i", 16 * 32), 9: ("m8n8k4 + DADD+rn24 x16", 16 * 32)}
for m in range(10):
    f = mod.get_function(names[m])
    for blocks_per_sm in (2, 4):
        it = 2000
        grid = sms * blocks_per_sm
        f((grid,), (256,), (out, np.int32(10), np.float64(1.0)))
        cp.cuda.Device().synchronize()
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(); f((grid,), (256,), (out, np.int32(it), np.float64(1.0))); e1.record(); e1.synchronize()
        ms = cp.cuda.get_elapsed_time(e0, e1)
        name, per_warp_iter = desc[m]
        warps = grid * 8
        # work units per warp-iteration: FMAs for DMMA, element-ops (lanes x ops) otherwise
        units = warps * it * per_warp_iter
        per_sm_clk = units / (ms * 1e-3) / sms / clk
        print(f"{name:45s} blocks/SM={blocks_per_sm} {ms:8.2f} ms  {per_sm_clk:7.1f} units/SM/clk  "
              f"regs={f.num_regs}", flush=True)
