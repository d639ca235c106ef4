"""int8 GEMM with joint_matrix (today's SYCL matrix API): C = A @ B + C, s8 x s8 -> s32, B VNNI-packed.

One sub-group per TM x TN tile of C, the structure of intel/llvm's test-e2e ``joint_matrix_ss_int8``. The tile
shape is read from the device's ``matrix_combinations`` at run time (AMX: the ``max_*`` sizes 16 x 16 x 64;
PVC/BMG/LNL: 8 x 16 x 32; DG2/ARL: 8 x 8 x 32), so the same program runs on every device.

Run: ``systolic run examples/sycl/gemm_int8.py --device dg2`` or ``python examples/sycl/gemm_int8.py dg2``.
The oracle is numpy int64 arithmetic wrapped to 32 bits (the engines wrap modulo 2**32; no value here needs it).
"""

from __future__ import annotations

import sys

import numpy as np

from systolic import sycl
from systolic.sycl import matrix as jm

DEVICE = "spr"
DEVICES = ("spr", "emr", "gnr", "dmr", "dg2", "arl", "pvc", "bmg", "lnl")


def tile_shape(q):
    """(TM, TN, TK) of the s8 x s8 -> s32 combination of the queue's device."""
    for r in q.get_device().get_info("matrix_combinations"):
        if (r.atype, r.btype, r.ctype, r.dtype) == ("sint8", "sint8", "sint32", "sint32"):
            return (r.max_msize, r.max_nsize, r.max_ksize) if r.nsize == 0 else (r.max_msize, r.nsize, r.ksize)
    raise LookupError("the device has no int8 combination")


def main(device: str) -> dict:
    q = sycl.queue(device)
    tm, tn, tk = tile_shape(q)
    sg_size = q.get_device().get_info("sub_group_sizes")[0]
    M, N, K = 2 * tm, 2 * tn, 4 * tk
    rng = np.random.default_rng(12)
    a = rng.integers(-128, 128, size=(M, K)).astype(np.int8)
    b = rng.integers(-128, 128, size=(K, N)).astype(np.int8)
    c = rng.integers(-1000, 1000, size=(M, N)).astype(np.int32)

    memA = q.malloc_shared(M * K, np.int8)
    memB = q.malloc_shared(K * N, np.int8)
    memC = q.malloc_shared(M * N, np.int32)
    np.asarray(memA)[:] = a.reshape(-1)
    # VNNI: row k/4 of the packed image holds, per column n, the four values b[k..k+3, n]
    np.asarray(memB)[:] = b.reshape(K // 4, 4, N).transpose(0, 2, 1).reshape(-1)
    np.asarray(memC)[:] = c.reshape(-1)

    def kernel(item):
        sg_startx = item.get_global_id(0) - item.get_local_id(0)
        sg_starty = item.get_global_id(1) - item.get_local_id(1)
        sg = item.get_sub_group()
        tA = jm.joint_matrix(sg, np.int8, jm.use.a, tm, tk, jm.layout.row_major)
        tB = jm.joint_matrix(sg, np.int8, jm.use.b, tk, tn, jm.layout.ext_intel_packed)
        tC = jm.joint_matrix(sg, np.int32, jm.use.accumulator, tm, tn)
        row0, col0 = sg_startx * tm, sg_starty // sg_size * tn
        jm.joint_matrix_load(sg, tC, memC + row0 * N + col0, N, jm.layout.row_major)
        for k in range(0, K, tk):
            jm.joint_matrix_load(sg, tA, memA + row0 * K + k, K)
            jm.joint_matrix_load(sg, tB, memB + (k // 4) * (N * 4) + col0 * 4, N * 4)
            jm.joint_matrix_mad(sg, tC, tA, tB, tC)
        jm.joint_matrix_store(sg, tC, memC + row0 * N + col0, N, jm.layout.row_major)

    q.parallel_for(sycl.nd_range((M // tm, N // tn * sg_size), (1, sg_size)), kernel).wait()

    exact = a.astype(np.int64) @ b.astype(np.int64) + c
    oracle = ((exact + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)
    return {"result": np.asarray(memC).reshape(M, N).copy(), "oracle": oracle, "sub_group_size": sg_size,
            "note": f"{M}x{N}x{K} s8 GEMM, tiles {tm}x{tn}x{tk} from matrix_combinations"}


if __name__ == "__main__":
    dev = sys.argv[1] if len(sys.argv) > 1 else DEVICE
    out = main(dev)
    same = np.array_equal(out["result"], out["oracle"])
    print(f"gemm_int8 on {dev}: {'PASS' if same else 'FAIL'} (bit for bit vs int64 oracle; {out['note']})")
    sys.exit(0 if same else 1)
