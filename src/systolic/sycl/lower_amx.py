"""joint_matrix_mad on AMX devices: tiles and TMUL instructions (:mod:`systolic.amx.intrinsics`).

The CPU implementation (2021 seed, "AMX implementation") maps a joint_matrix of at most 16 rows x 64 bytes to one
tile; larger matrices ("any size") live in memory and are computed tile by tile: C in blocks of 16 rows x 16
dword columns, K in blocks of 64 bytes, in order, C carried from block to block. For each sub-group (size 1):

* ``amx="tiles"``: literally that: A, B (VNNI-packed, as ``tile_loadd`` of B needs) and C images in memory,
  ``Tile`` / ``tile_loadd`` / ``tile_dp*`` / ``tile_stored`` on the TileMachine emulator
  (:func:`systolic.amx.intrinsics.use_machine`), every #UD/#GP rule checked;
* ``amx="fast"``: :func:`systolic.amx.matmul`, which blocks M, N and K exactly so and is proven bit-identical to
  that instruction sequence by the AMX tests; all sub-groups' products at once (:mod:`systolic.sycl.batch`).
"""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOperation
from . import batch

__all__ = ["INTRINSIC", "mad", "mad_tiles"]

#: (A type, B type) -> the amxintrin.h intrinsic (first letter = A = src1)
INTRINSIC = {("sint8", "sint8"): "tile_dpbssd", ("sint8", "uint8"): "tile_dpbsud", ("uint8", "sint8"): "tile_dpbusd",
             ("uint8", "uint8"): "tile_dpbuud", ("bf16", "bf16"): "tile_dpbf16ps", ("fp16", "fp16"): "tile_dpfp16ps"}


def _check(ta: str, tb: str) -> str:
    name = INTRINSIC.get((ta, tb))
    if name is None:
        raise UnsupportedOperation(
            f"no AMX instruction multiplies {ta} by {tb}",
            rule="AMX TMULs: TDPB[SS|SU|US|UU]D, TDPBF16PS, TDPFP16PS (AMX-TF32 was removed from the ISE; "
                 "Intel ISE, AMX chapter)", values={"atype": ta, "btype": tb})
    return name


def mad(cpu: str, ta: str, tb: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, how: str = "fast",
        keys_a=None, keys_b=None) -> np.ndarray:
    """D (P, M, N): int32 for int8 products, fp32 for bf16/fp16, for every sub-group p."""
    name = _check(ta, tb)
    if isinstance(a, list) and (how == "tiles" or a[0].shape[0] == 1):
        a, b = np.concatenate(a, axis=2), np.concatenate(b, axis=1)
    if how == "tiles":
        return np.stack([mad_tiles(cpu, ta, tb, a[p], b[p], c[p]) for p in range(a.shape[0])])
    from ..amx import matmul

    def gemm(a2, b2, c2):
        return matmul(a2, b2, c2, device=cpu)
    with batch.kernel_counts() as recs:
        res = batch.batched_mad(gemm, a, b, c, keys_a, keys_b)
    if recs:
        _count(recs, name[len("tile_"):].replace("dp", "tdp", 1), c.shape[0], c.shape[1], c.shape[2],
               sum(x.shape[2] for x in a) if isinstance(a, list) else a.shape[2], a[0].dtype.itemsize
               if isinstance(a, list) else a.dtype.itemsize)
    return res


def _count(recs, mnemonic, P, M, N, K, eb) -> None:
    """The TMULs each sub-group's product issues: C in 16-row x 16-dword blocks, K in 16-dword blocks (the
    edges partial), as ``systolic.amx.matmul`` records them for one product."""
    per = 4 // eb
    kd = -(-K // per)

    def cut(extent, block):
        full, rest = divmod(extent, block)
        return ([(block, full)] if full else []) + ([(rest, 1)] if rest else [])
    for mb, mc in cut(M, 16):
        for nb, nc in cut(N, 16):
            for kb, kc in cut(kd, 16):
                for r in recs:
                    r.add("amx", P * mc * nc * kc, {"op": mnemonic, "m": mb, "n": nb, "k_dwords": kb,
                                                    "via": "joint_matrix"})


def mad_tiles(cpu: str, ta: str, tb: str, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """One product as tile intrinsics on a TileMachine emulator of ``cpu`` (the definition)."""
    from ..amx import TileMachine
    from ..amx import intrinsics as I
    from ..packing import vnni_pack
    name = _check(ta, tb)
    M, K = a.shape
    N = b.shape[1]
    eb = a.dtype.itemsize
    per = 4 // eb
    kp = -(-K // per) * per
    if kp != K:
        a = np.concatenate([a, np.zeros((M, kp - K), a.dtype)], axis=1)
        b = np.concatenate([b, np.zeros((kp - K, N), b.dtype)], axis=0)
    amem = np.ascontiguousarray(a).view(np.uint8).reshape(-1).copy()
    bmem = np.ascontiguousarray(vnni_pack(b, 8 * eb).astype("<u4")).view(np.uint8).reshape(-1).copy()
    cmem = np.ascontiguousarray(c).view(np.uint8).reshape(-1).copy()
    arow, brow, crow = kp * eb, 4 * N, 4 * N
    dot = getattr(I, name)
    with I.use_machine(TileMachine(cpu)):
        for m0 in range(0, M, 16):
            mr = min(16, M - m0)
            for n0 in range(0, N, 16):
                nc = min(16, N - n0)
                tc = I.Tile(mr, 4 * nc)
                I.tile_loadd(tc, I.Ptr(cmem) + (m0 * crow + 4 * n0), crow)
                for k0 in range(0, kp, 64 // eb):
                    kc = min(64 // eb, kp - k0)
                    ta_ = I.Tile(mr, kc * eb)
                    tb_ = I.Tile(kc // per, 4 * nc)
                    I.tile_loadd(ta_, I.Ptr(amem) + (m0 * arow + k0 * eb), arow)
                    I.tile_loadd(tb_, I.Ptr(bmem) + ((k0 // per) * brow + 4 * n0), brow)
                    dot(tc, ta_, tb_)
                I.tile_stored(I.Ptr(cmem) + (m0 * crow + 4 * n0), crow, tc)
    return cmem.view(c.dtype).reshape(M, N).copy()
