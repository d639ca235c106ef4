"""The seed's int8 GEMM, as the 2021 SYCL matrix extension text writes it, run on an emulated AMX CPU.

This is the example of ``sycl_ext_intel_matrix`` revision 1 (2021, "Initial extension implementation on AMX"),
line by line in Python with ``systolic.sycl.matrix_2021``: ``joint_matrix<sub_group, T, rows, cols, layout>``
objects, ``matrix_layout::packed_b`` for the VNNI'd B, ``tC = joint_matrix_mad(sg, tA, tB, tC)`` returning the
new accumulator, sub-group size 1. A is M x K int8, B is K x N int8 already in VNNI form (K/4 x N*4), C is
M x N int32 and is accumulated into.

Three readings the C++ sketch needs (as printed it reads outside its arrays): (1) the body indexes memory with
``sg_startx * tM``, so the global range counts tiles, ``{M/tM, N/tN}`` (the text prints ``{M, N}``); (2)
``sg_starty`` is used as an element offset without ``* tN``, so the example uses one tile column (N = tN), where
the two agree; (3) the packed B's rows are ``N*4`` elements long (the text's own offset ``k * N`` for row
``k/4`` says so) and the 2021 implementation (intel/llvm ``matrix-aot-amx.hpp``) reads rows ``stride *
sizeof(T)`` bytes apart, so B's stride is ``N * 4`` where the text prints ``N``. ``tk`` is the text's ``tK``.

Run: ``systolic run examples/sycl/seed_gemm_2021.py`` or ``python examples/sycl/seed_gemm_2021.py``.
The oracle is numpy int64 arithmetic (no value here reaches the 32-bit wrap).
"""

from __future__ import annotations

import sys

import numpy as np

from systolic import sycl
from systolic.sycl.matrix_2021 import (
    joint_matrix,
    joint_matrix_load,
    joint_matrix_mad,
    joint_matrix_store,
    matrix_layout,
)

DEVICE = "spr"
DEVICES = ("spr", "emr", "gnr", "dmr")     # the 2021 revision is the AMX implementation

tM, tN, tK = 16, 16, 64                    # one AMX tile each: 16 rows x 64 bytes
tk = tK
SG_SIZE = 1                                # "For this first implementation, SG_SIZE has to be equal to one"
M, N, K = 4 * tM, tN, 4 * tK


def vnni(b: np.ndarray) -> np.ndarray:
    """K x N int8 -> the seed's VNNI form (K/4) x (N*4): rows 4r..4r+3 of a column side by side."""
    k, n = b.shape
    out = np.empty((k // 4, n * 4), b.dtype)
    for r in range(k // 4):
        for c in range(n):
            out[r, 4 * c:4 * c + 4] = b[4 * r:4 * r + 4, c]
    return out


def main(device: str) -> dict:
    rng = np.random.default_rng(2021)
    a = rng.integers(-128, 128, size=(M, K)).astype(np.int8)
    b = rng.integers(-128, 128, size=(K, N)).astype(np.int8)
    c = rng.integers(-1000, 1000, size=(M, N)).astype(np.int32)

    q = sycl.queue(device)
    G = sycl.range(M // tM, N // tN)       # the text: range<2> G = {M, N}; see the module docstring
    # For this first implementation, SG_SIZE has to be equal to one
    L = sycl.range(1, SG_SIZE)

    memA = q.malloc_shared(M * K, np.int8)
    memB = q.malloc_shared(K * N, np.int8)
    memC = q.malloc_shared(M * N, np.int32)
    np.asarray(memA)[:] = a.reshape(-1)
    np.asarray(memB)[:] = vnni(b).reshape(-1)      # Assuming memB has already been VNNIed
    np.asarray(memC)[:] = c.reshape(-1)

    def kernel(item):                              # [[sycl::reqd_sub_group_size(SG_SIZE)]]
        global_idx = item.get_global_id(0)
        global_idy = item.get_global_id(1)
        sg_startx = global_idx - item.get_local_id(0)
        sg_starty = global_idy - item.get_local_id(1)

        sg = item.get_sub_group()
        tA = joint_matrix(sg, np.int8, tM, tK)
        # For B, since current implementation does not support non packed layout,
        # users need to specify the updated VNNI sizes along with the packed_b layout
        tB = joint_matrix(sg, np.int8, tK // 4, tN * 4, matrix_layout.packed_b)
        tC = joint_matrix(sg, np.int32, tM, tN)

        joint_matrix_load(sg, tC, memC + sg_startx * tM * N + sg_starty, N, matrix_layout.row_major)
        for k in range(0, K, tk):
            joint_matrix_load(sg, tA, memA + sg_startx * tM * K + k, K, matrix_layout.row_major)  # collective
            joint_matrix_load(sg, tB, memB + k * N + sg_starty, N * 4, matrix_layout.packed_b)     # VNNI
            tC = joint_matrix_mad(sg, tA, tB, tC)
        joint_matrix_store(sg, tC, memC + sg_startx * tM * N + sg_starty, N, matrix_layout.row_major)

    q.parallel_for(sycl.nd_range(G, L), kernel).wait()

    oracle = (a.astype(np.int64) @ b.astype(np.int64) + c).astype(np.int32)   # |values| < 2**22: no wrap
    return {"result": np.asarray(memC).reshape(M, N).copy(), "oracle": oracle, "sub_group_size": SG_SIZE,
            "note": f"{M}x{N}x{K} int8 GEMM, tiles tM={tM} tN={tN} tK={tK} (2021 API, TDPBSSD per mad)"}


if __name__ == "__main__":
    dev = sys.argv[1] if len(sys.argv) > 1 else DEVICE
    out = main(dev)
    same = np.array_equal(out["result"], out["oracle"])
    print(f"seed_gemm_2021 on {dev}: {'PASS' if same else 'FAIL'} (bit for bit vs int64 oracle; {out['note']})")
    sys.exit(0 if same else 1)
