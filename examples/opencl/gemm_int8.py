"""int8 GEMM kernel with the OpenCL sub-group matrix built-in, checked against an exact int64 oracle.

C (M x N, int32) = A (M x K, int8, row-major) x B (K x N, int8, stored VNNI-packed: K/4 rows of N dwords, as
int8 GEMM kernels keep it), written the way an OpenCL kernel is written:

    __attribute__((intel_reqd_sub_group_size(SG)))
    kernel void gemm_s8(global const char* A, global const uint* B, global int* C, int N, int K) {
        int n0 = (get_group_id(0) * get_num_sub_groups() + get_sub_group_id()) * SG;
        int m0 = get_group_id(1) * 8;
        int8 acc = 0;
        for (int k0 = 0; k0 < K; k0 += 32) {
            int8 a;   // SG8: a row is 4 bytes per work-item (uint); SG16: 2 bytes (ushort, so short8 a)
            for (int r = 0; r < 8; r++) a[r] = intel_sub_group_block_read((global uint*)(A + (m0+r)*K + k0));
            int8 b;   // component j = packed row k0/4 + j: 4 K values of this work-item's column
            for (int j = 0; j < 8; j++) b[j] = intel_sub_group_block_read(B + (k0/4 + j)*N + n0);
            acc = intel_sub_group_i8_i8_matrix_mad_k32(a, b, acc);
        }
        for (int r = 0; r < 8; r++) intel_sub_group_block_write((global uint*)(C + (m0+r)*N + n0), as_uint(acc[r]));
    }

Run: ``python examples/opencl/gemm_int8.py [device]`` or ``systolic run examples/opencl/gemm_int8.py``.
"""

from __future__ import annotations

import sys

import numpy as np

from systolic import opencl as cl
from systolic.packing import vnni_pack

DEVICE = "dg2"
DEVICES = ("dg2", "pvc")
SUB_GROUPS_PER_GROUP = 2


def gemm_s8(A, B, C, N, K):
    """The kernel, per sub-group (see the module docstring for its OpenCL C)."""
    sg = cl.get_max_sub_group_size()
    n0 = (cl.get_group_id(0) * cl.get_num_sub_groups() + cl.get_sub_group_id()) * sg
    m0 = cl.get_group_id(1) * 8
    acc = np.zeros((sg, 8), np.int32)                                  # int8 acc = 0
    for k0 in range(0, K, 32):
        if sg == 8:                                                    # int8 a: 4 int8 of a row per work-item
            rows = [cl.intel_sub_group_block_read((A + (m0 + r) * K + k0).cast("uint")) for r in range(8)]
            a = cl.as_type(np.stack(rows, axis=1), "int8")
        else:                                                          # short8 a: 2 int8 per work-item
            rows = [cl.intel_sub_group_block_read_us((A + (m0 + r) * K + k0).cast("ushort")) for r in range(8)]
            a = cl.as_type(np.stack(rows, axis=1), "short8")
        b = cl.as_type(np.stack([cl.intel_sub_group_block_read(B + (k0 // 4 + j) * N + n0) for j in range(8)],
                                axis=1), "int8")
        acc = cl.intel_sub_group_i8_i8_matrix_mad_k32(a, b, acc)
    for r in range(8):
        cl.intel_sub_group_block_write((C + (m0 + r) * N + n0).cast("uint"), cl.as_type(acc[:, r], "uint"))


def main(device: str = DEVICE, *, m: int = 32, n: int = 64, k: int = 128, seed: int = 0) -> dict:
    sg = cl.resolve("intel_sub_group_i8_i8_matrix_mad_k32", device).sub_group_size
    rng = np.random.default_rng(seed)
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    B = rng.integers(-128, 128, (k, n), dtype=np.int8)
    Bp = vnni_pack(B, 8).astype(np.uint32)                             # K/4 x N dwords (host-side packing)
    C = np.zeros((m, n), np.int32)
    cl.run(gemm_s8, (n, m // 8), (sg * SUB_GROUPS_PER_GROUP, 1), (A, Bp, C, n, k), device=device)
    oracle = (A.astype(np.int64) @ B.astype(np.int64)).astype(np.int32)  # |sum| < 2**21: no wrap
    return {"result": C, "oracle": oracle, "sub_group_size": sg,
            "note": f"{m}x{n}x{k} int8 GEMM, {m // 8 * n // sg * k // 32} built-in calls (DPAS rc=8)"}


if __name__ == "__main__":
    dev = sys.argv[1] if len(sys.argv) > 1 else DEVICE
    out = main(dev)
    ok = np.array_equal(out["result"], out["oracle"])
    print(f"gemm_int8 on {dev}: {'bit-identical to the int64 oracle' if ok else 'MISMATCH'} ({out['note']})")
    sys.exit(0 if ok else 1)
