"""bf16 GEMM with joint_matrix, cache-blocked without shared local memory (today's SYCL matrix API).

The kernel is the two-level tiling of intel/llvm's ``joint_matrix_bf16_fill_k_cache`` test, written in Python
against ``systolic.sycl``: a work-group computes an ``MCache2 x NCache2`` block of C, each sub-group an
``MCache1 x NCache1`` block held in an array of accumulator tiles; K is walked in ``KCache2`` steps (the
"cache" level) and, inside, in ``TK`` steps (the "physical" level), loading A and (VNNI-packed or row-major) B
tiles straight from global memory. Tile sizes come from the device's ``matrix_combinations`` at run time:
Intel AMX (records with ``nsize == 0``) 16 x 16 x 32; PVC/BMG/LNL 8 x 16 x 16; DG2/ARL 8 x 8 x 16.

Run: ``systolic run examples/sycl/gemm_bf16.py --device pvc`` or ``python examples/sycl/gemm_bf16.py pvc``.
The oracle is exact: A and B hold small integers, so every product and partial sum is an integer that fp32
holds exactly and the result cannot depend on the order or rounding of the accumulation.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

from systolic import sycl
from systolic.sycl import matrix as jm

DEVICE = "pvc"
DEVICES = ("spr", "emr", "gnr", "dmr", "dg2", "arl", "pvc", "bmg", "lnl")

SIZE = 64          # M = N = K of main(); the benchmark runs 256


def tile_shape(q, ta="bf16", tc="fp32"):
    """(TM, TN, TK) for an A type on the queue's device, read from its matrix_combinations.

    The first record of the type that admits a variable M is used: AMX lists ``max_*`` sizes only
    (nsize == 0, use the maxima), the GPUs list ``max_msize`` with fixed N and K.
    """
    for r in q.get_device().get_info("matrix_combinations"):
        if r.atype == ta and r.ctype == tc and r.dtype == tc and r.max_msize:
            if r.nsize == 0:
                return r.max_msize, r.max_nsize, r.max_ksize
            return r.max_msize, r.nsize, r.ksize
    raise LookupError(f"the device has no variable-M {ta} combination")


def vnni(b: np.ndarray, vf: int) -> np.ndarray:
    """The K x N matrix in Intel's VNNI ("ext_intel_packed") layout: (K/vf) x (N*vf)."""
    k, n = b.shape
    return b.reshape(k // vf, vf, n).transpose(0, 2, 1).reshape(k // vf, n * vf)


def joint_matmul(q, pA, pB, pC, M, N, K, tm, tn, tk, *, sg_size, mcache1=32, ncache1=None, kcache1=None,
                 mcache2=64, ncache2=64, kcache2=32, packed_b=True, checked=False, prefetch=False):
    """C = A @ B (C starts from zero: the accumulators are filled, test-e2e's "fill_k_cache").

    ``pA`` (M x K row-major bf16), ``pB`` (K x N, VNNI-packed if ``packed_b``, else row-major), ``pC`` (M x N
    fp32) are USM pointers. ``checked``: every load/store is the bounds-checked form (the OOB variant).
    ``prefetch``: each sub-group first prefetches 8 x 32 blocks of its A rows and B columns for the first K
    steps (test-e2e's PREFETCH variant; a cache hint, no effect on values).
    """
    ncache1 = ncache1 or (32 if sg_size == 1 else 4 * tn)
    kcache1 = kcache1 or tk
    vf = 2 if packed_b else 1
    bf16 = ml_dtypes.bfloat16
    b_layout = jm.layout.ext_intel_packed if packed_b else jm.layout.row_major

    def kernel(it):
        m2, n2 = it.get_group(0), it.get_group(1)
        m1, n1 = it.get_local_id(0), it.get_local_id(1) // sg_size
        sg = it.get_sub_group()
        if prefetch:
            for p in range(min(3, K // 32)):
                jm.joint_matrix_prefetch(sg, pA + (m2 * mcache2 + m1 * mcache1) * K + p * 32, 8, 32, K,
                                         jm.layout.row_major)
                jm.joint_matrix_prefetch(sg, pB + p * (kcache2 // vf) * (N * vf) + (n2 * ncache2 + n1 * ncache1) * vf,
                                         8, 32, N * vf, jm.layout.row_major)
        tC = [[jm.joint_matrix(sg, np.float32, jm.use.accumulator, tm, tn) for _ in range(ncache1 // tn)]
              for _ in range(mcache1 // tm)]
        for row in tC:
            for c in row:
                jm.joint_matrix_fill(sg, c, 0)
        for k2 in range(K // kcache2):
            tA = [[jm.joint_matrix(sg, bf16, jm.use.a, tm, tk, jm.layout.row_major) for _ in range(kcache2 // kcache1)]
                  for _ in range(mcache1 // tm)]
            tB = [[jm.joint_matrix(sg, bf16, jm.use.b, tk, tn, b_layout) for _ in range(kcache2 // kcache1)]
                  for _ in range(ncache1 // tn)]
            for k1 in range(kcache2 // kcache1):
                k = (k2 * kcache2 + k1 * kcache1) // tk
                for m in range(mcache1 // tm):
                    row0 = m2 * mcache2 + m1 * mcache1 + m * tm
                    if checked:
                        jm.joint_matrix_load_checked(sg, tA[m][k1], pA, K, M, K, row0, k * tk)
                    else:
                        jm.joint_matrix_load(sg, tA[m][k1], pA + row0 * K + k * tk, K)
                for n in range(ncache1 // tn):
                    col0 = n2 * ncache2 + n1 * ncache1 + n * tn
                    if checked:
                        jm.joint_matrix_load_checked(sg, tB[n][k1], pB, N * vf, K // vf, N * vf, k * tk // vf,
                                                     col0 * vf)
                    else:
                        jm.joint_matrix_load(sg, tB[n][k1], pB + (k * tk // vf) * (N * vf) + col0 * vf, N * vf)
                for m in range(mcache1 // tm):
                    for n in range(ncache1 // tn):
                        jm.joint_matrix_mad(sg, tC[m][n], tA[m][k1], tB[n][k1], tC[m][n])
        for m in range(mcache1 // tm):
            for n in range(ncache1 // tn):
                row0 = m2 * mcache2 + m1 * mcache1 + m * tm
                col0 = n2 * ncache2 + n1 * ncache1 + n * tn
                if checked:
                    jm.joint_matrix_store_checked(sg, tC[m][n], pC, N, jm.layout.row_major, M, N, row0, col0)
                else:
                    jm.joint_matrix_store(sg, tC[m][n], pC + row0 * N + col0, N, jm.layout.row_major)

    glob = (-(-M // mcache1), -(-N // ncache1) * sg_size)
    loc = (mcache2 // mcache1, ncache2 // ncache1 * sg_size)
    q.parallel_for(sycl.nd_range(glob, loc), kernel).wait()


def sub_group_size(device: str) -> int:
    """The sub-group size joint_matrix kernels run with on this device (1 on AMX, the DPAS width on XMX)."""
    return sycl.queue(device).get_device().get_info("sub_group_sizes")[0]


def run(device: str, a: np.ndarray, b: np.ndarray, *, packed_b=True, checked=False, tiles=None, **caches):
    """Multiply bf16 ``a`` (M x K) by ``b`` (K x N) on ``device`` with the kernel above; returns fp32 C."""
    q = sycl.queue(device)
    tm, tn, tk = tiles or tile_shape(q)
    M, K = a.shape
    N = b.shape[1]
    sg = sub_group_size(device)
    pA = q.malloc_shared(M * K, a.dtype)
    pB = q.malloc_shared(K * N, b.dtype)
    pC = q.malloc_shared(M * N, np.float32)
    np.asarray(pA)[:] = a.reshape(-1)
    np.asarray(pB)[:] = (vnni(b, 2) if packed_b else b).reshape(-1)
    joint_matmul(q, pA, pB, pC, M, N, K, tm, tn, tk, sg_size=sg, packed_b=packed_b, checked=checked, **caches)
    return np.array(np.asarray(pC)).reshape(M, N)


def main(device: str) -> dict:
    rng = np.random.default_rng(2021)
    a = rng.integers(-2, 3, size=(SIZE, SIZE))
    b = rng.integers(-2, 3, size=(SIZE, SIZE))
    result = run(device, a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16))
    oracle = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.float32)   # |entries| <= 256: exact
    return {"result": result, "oracle": oracle, "sub_group_size": sub_group_size(device),
            "note": f"{SIZE}^3 bf16 -> fp32, tiles {tile_shape(sycl.queue(device))} from matrix_combinations"}


if __name__ == "__main__":
    dev = sys.argv[1] if len(sys.argv) > 1 else DEVICE
    out = main(dev)
    same = np.array_equal(out["result"].view(np.uint32), out["oracle"].view(np.uint32))
    print(f"gemm_bf16 on {dev}: {'PASS' if same else 'FAIL'} (bit for bit vs exact int64 oracle, {SIZE}^3)")
    sys.exit(0 if same else 1)
