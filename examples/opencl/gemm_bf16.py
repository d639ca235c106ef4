"""bf16 GEMM kernel with the OpenCL sub-group matrix built-in (float accumulators), checked exactly.

C (M x N, float) = A (M x K, bf16 bits in ushort, row-major) x B (K x N, bf16, VNNI-packed: K/2 rows of N
dwords, two K values per dword), written as an OpenCL bf16 GEMM is written:

    kernel void gemm_bf16(global const ushort* A, global const uint* B, global float* C, int N, int K) {
        int n0 = (get_group_id(0) * get_num_sub_groups() + get_sub_group_id()) * SG;
        int m0 = get_group_id(1) * 8;
        float8 acc = 0;
        for (int k0 = 0; k0 < K; k0 += 16) {
            // SG8: int8 a, two bf16 of a row per work-item; SG16: short8 a, one bf16 per work-item
            ... a[r] = intel_sub_group_block_read((global uint*)(A + (m0+r)*K + k0));      // or _us on SG16
            int8 b; for (j..8) b[j] = intel_sub_group_block_read(B + (k0/2 + j)*N + n0);
            acc = intel_sub_group_bf16_bf16_matrix_mad_k16(a, b, acc);
        }
        for (r..8) intel_sub_group_block_write((global uint*)(C + (m0+r)*N + n0), as_uint(acc[r]));
    }

The inputs are small integers, so every product and partial sum is exact in fp32 under any numerics model and
the oracle is the int64 product (a test in tests/opencl also checks random data against xmx.matmul).
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

from systolic import opencl as cl
from systolic.packing import vnni_pack

DEVICE = "dg2"
DEVICES = ("dg2", "pvc")
SUB_GROUPS_PER_GROUP = 2


def gemm_bf16(A, B, C, N, K, model=None):
    sg = cl.get_max_sub_group_size()
    n0 = (cl.get_group_id(0) * cl.get_num_sub_groups() + cl.get_sub_group_id()) * sg
    m0 = cl.get_group_id(1) * 8
    acc = np.zeros((sg, 8), np.float32)
    for k0 in range(0, K, 16):
        if sg == 8:
            rows = [cl.intel_sub_group_block_read((A + (m0 + r) * K + k0).cast("uint")) for r in range(8)]
            a = cl.as_type(np.stack(rows, axis=1), "int8")
        else:
            rows = [cl.intel_sub_group_block_read_us(A + (m0 + r) * K + k0) for r in range(8)]
            a = cl.as_type(np.stack(rows, axis=1), "short8")
        b = cl.as_type(np.stack([cl.intel_sub_group_block_read(B + (k0 // 2 + j) * N + n0) for j in range(8)],
                                axis=1), "int8")
        acc = cl.intel_sub_group_bf16_bf16_matrix_mad_k16(a, b, acc, model=model)
    for r in range(8):
        cl.intel_sub_group_block_write((C + (m0 + r) * N + n0).cast("uint"), cl.as_type(acc[:, r], "uint"))


def run_gemm(A, B, device: str, model=None) -> np.ndarray:
    """C = A @ B by the kernel (A, B: bfloat16 arrays; M % 8 == 0, K % 16 == 0, N % (2 * SG) == 0)."""
    m, k = A.shape
    n = B.shape[1]
    sg = cl.resolve("intel_sub_group_bf16_bf16_matrix_mad_k16", device).sub_group_size
    Bp = vnni_pack(B, 16).astype(np.uint32)
    C = np.zeros((m, n), np.float32)
    cl.run(gemm_bf16, (n, m // 8), (sg * SUB_GROUPS_PER_GROUP, 1),
           (A.view(np.uint16), Bp, C, n, k, model), device=device)
    return C


def main(device: str = DEVICE, *, m: int = 16, n: int = 64, k: int = 64, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    Ai = rng.integers(-8, 9, (m, k))
    Bi = rng.integers(-8, 9, (k, n))
    C = run_gemm(Ai.astype(ml_dtypes.bfloat16), Bi.astype(ml_dtypes.bfloat16), device)
    oracle = (Ai @ Bi).astype(np.float32)          # exact: |sum| <= 64 * 64 < 2**24
    return {"result": C, "oracle": oracle, "note": f"{m}x{n}x{k} bf16 GEMM, float accumulators"}


if __name__ == "__main__":
    dev = sys.argv[1] if len(sys.argv) > 1 else DEVICE
    out = main(dev)
    ok = np.array_equal(out["result"].view(np.uint32), out["oracle"].view(np.uint32))
    print(f"gemm_bf16 on {dev}: {'bit-identical to the exact oracle' if ok else 'MISMATCH'} ({out['note']})")
    sys.exit(0 if ok else 1)
