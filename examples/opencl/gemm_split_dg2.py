"""int8 GEMM with the split built-in (DPASW) on DG2: two sub-groups share one A tile, each loading half of it.

Sub-groups 2p and 2p+1 of a work-group run on the two EUs of a fused pair; each loads 4 of the tile's 8 rows of
A and its own 8 columns of B, and DPASW gives each the product of the whole 8-row A with its B
(cl_intel_subgroup_split_matrix_multiply_accumulate):

    __attribute__((intel_reqd_sub_group_size(8)))
    kernel void gemm_s8_split(global const char* A, global const uint* B, global int* C, int N, int K) {
        int half = get_sub_group_id() % 2;
        int n0 = get_group_id(0) * 16 + get_sub_group_id() * 8;
        int m0 = get_group_id(1) * 8;
        int8 acc = 0;
        for (int k0 = 0; k0 < K; k0 += 32) {
            int4 a;  for (r..4) a[r] = intel_sub_group_block_read((global uint*)(A + (m0 + 4*half + r)*K + k0));
            int8 b;  for (j..8) b[j] = intel_sub_group_block_read(B + (k0/4 + j)*N + n0);
            acc = intel_sub_group_i8_i8_split_matrix_mad_k32(a, b, acc);
        }
        for (r..8) intel_sub_group_block_write((global uint*)(C + (m0+r)*N + n0), as_uint(acc[r]));
    }
"""

from __future__ import annotations

import sys

import numpy as np

from systolic import opencl as cl
from systolic.packing import vnni_pack

DEVICE = "dg2"
DEVICES = ("dg2",)


def gemm_s8_split(A, B, C, N, K):
    half = cl.get_sub_group_id() % 2
    n0 = cl.get_group_id(0) * 16 + cl.get_sub_group_id() * 8
    m0 = cl.get_group_id(1) * 8
    acc = np.zeros((8, 8), np.int32)
    for k0 in range(0, K, 32):
        rows = [cl.intel_sub_group_block_read((A + (m0 + 4 * half + r) * K + k0).cast("uint")) for r in range(4)]
        a = cl.as_type(np.stack(rows, axis=1), "int4")
        b = cl.as_type(np.stack([cl.intel_sub_group_block_read(B + (k0 // 4 + j) * N + n0) for j in range(8)],
                                axis=1), "int8")
        acc = cl.intel_sub_group_i8_i8_split_matrix_mad_k32(a, b, acc)
    for r in range(8):
        cl.intel_sub_group_block_write((C + (m0 + r) * N + n0).cast("uint"), cl.as_type(acc[:, r], "uint"))


def main(device: str = DEVICE, *, m: int = 16, n: int = 32, k: int = 128, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    B = rng.integers(-128, 128, (k, n), dtype=np.int8)
    C = np.zeros((m, n), np.int32)
    cl.run(gemm_s8_split, (n, m // 8), (16, 1), (A, vnni_pack(B, 8).astype(np.uint32), C, n, k), device=device)
    oracle = (A.astype(np.int64) @ B.astype(np.int64)).astype(np.int32)
    return {"result": C, "oracle": oracle, "sub_group_size": 8,
            "note": f"{m}x{n}x{k} int8 GEMM, {m // 8 * n // 16 * k // 32} DPASW (split built-in, M = 8)"}


if __name__ == "__main__":
    dev = sys.argv[1] if len(sys.argv) > 1 else DEVICE
    out = main(dev)
    ok = np.array_equal(out["result"], out["oracle"])
    print(f"gemm_split_dg2 on {dev}: {'bit-identical to the int64 oracle' if ok else 'MISMATCH'} ({out['note']})")
    sys.exit(0 if ok else 1)
